"""How long each shipped scenario takes at its default size: the run-time column of the scenario cards.

``python -m docs.scenario_times --rows benchmarks/results/scenario_runtime.jsonl`` runs ``catallax run NAME`` for
every shipped scenario (the built-ins and the scenario files of scenarios/), as a user would, in a temporary
output folder, and writes one row per scenario: its wall-clock seconds, or, where a run did not finish within
``--limit`` seconds, the limit it ran past (the run is stopped there: a scenario whose default size takes longer
than a card needs to say is marked as such rather than left blank). Seconds are this machine's, shared with
other work: they say "seconds" or "minutes", not a benchmark (benchmarks/ measures speed as ratios).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from experiments.rows import provenance
from scenarios.registry import SCENARIO_DIR, SCENARIOS


def shipped() -> list[str]:
    """Every scenario a user can run by name: the built-ins, then the scenario files that are not one of them."""
    files = sorted(p.stem for p in SCENARIO_DIR.glob("*.toml") if p.stem not in SCENARIOS)
    return [*SCENARIOS, *files]


def measure(name: str, limit: float) -> dict:
    load = round(os.getloadavg()[0], 1)  # what else the machine ran: a time is only read beside it
    return {**_run(name, limit), "load": load}


def _run(name: str, limit: float) -> dict:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-m", "scenarios.cli.main", "run", name, "--out", out],
                                  capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            return {"scenario": name, "seconds": None, "finished": False, "note": f"stopped after {limit:.0f} s"}
        seconds = time.perf_counter() - start
    if proc.returncode:
        return {"scenario": name, "seconds": None, "finished": False,
                "note": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1][:160]}"}
    return {"scenario": name, "seconds": round(seconds, 1), "finished": True, "note": ""}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=Path, required=True, help="JSON Lines file to write")
    parser.add_argument("--limit", type=float, default=300.0, help="seconds after which a run is stopped")
    parser.add_argument("names", nargs="*", help="scenarios to time (default: every shipped one); the rows of the "
                        "others already in --rows are kept")
    args = parser.parse_args(argv)
    where = provenance("docs.scenario_times", argv)
    kept = {}
    if args.names and args.rows.is_file():
        kept = {r["scenario"]: r for r in map(json.loads, args.rows.read_text().splitlines())}
    for name in args.names or shipped():
        kept[name] = {**measure(name, args.limit), **where}
        print(name, kept[name]["seconds"], kept[name]["note"], flush=True)
    order = {name: i for i, name in enumerate(shipped())}
    rows = sorted(kept.values(), key=lambda r: order.get(r["scenario"], len(order)))
    args.rows.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
