"""Whole runs against a baseline checkout: the same ``catallax run`` in two trees, timed side by side.

Usage::

    python benchmarks/runs.py --baseline ../catallax-main                 # relay and blocks, 5 pairs each
    python benchmarks/runs.py --baseline ../old relay --repeats 3 --set run.episodes=4000
    python benchmarks/runs.py --baseline ../old --json                    # ... and one final JSON line

Each run is one process (``python -m scenarios.cli.main run SCENARIO --json`` with the tree as its
working directory, so it imports that tree's code), start-up and persistence included: what a user
waits for. Runs alternate, this tree then the baseline, so the ratio of each adjacent pair cancels
the slow drifts of a shared machine; the ratio reported is the median of the per-pair ratios. Both
trees must give the same ledger hash (the change must not change the economy): a pair that does
not is an error.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_once(tree: Path, scenario: str, sets: list[str]) -> tuple[float, str]:
    """(wall seconds, ledger hash) of one whole run in ``tree``."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "scenarios.cli.main", "run", scenario, "--out", out, "--json"]
        cmd += [arg for s in sets for arg in ("--set", s)]
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
        wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{tree}: {' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall, json.loads(done.stdout.strip().splitlines()[-1])["ledger_hash"]


def spread(xs: list[float]) -> list[float]:
    """[min, median, max]."""
    return [round(min(xs), 3), round(statistics.median(xs), 3), round(max(xs), 3)]


def compare(baseline: Path, scenario: str, sets: list[str], repeats: int) -> dict:
    here, base, ratios = [], [], []
    for _ in range(repeats):
        (a, hash_a), (b, hash_b) = run_once(ROOT, scenario, sets), run_once(baseline, scenario, sets)
        if hash_a != hash_b:
            raise SystemExit(f"{scenario}: ledger hash {hash_a} here, {hash_b} in the baseline: the economy changed")
        here.append(a)
        base.append(b)
        ratios.append(b / a)
    return {"scenario": scenario, "sets": sets, "repeats": repeats, "ledger_hash": hash_a,
            "wall_s": spread(here), "baseline_wall_s": spread(base), "speedup": spread(ratios)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenarios", nargs="*", default=["relay", "blocks"])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout of catallax")
    parser.add_argument("--repeats", type=int, default=5, help="pairs per scenario")
    parser.add_argument("--set", action="append", default=[], dest="sets", help="a config override, as catallax run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    print(f"{'scenario':10s} {'wall s (min/median/max)':>26s} {'baseline':>26s} {'speedup (median of pairs)':>28s}")
    for scenario in args.scenarios:
        r = compare(args.baseline.resolve(), scenario, args.sets, args.repeats)
        results.append(r)
        print(f"{scenario:10s} {'/'.join(map(str, r['wall_s'])):>26s} {'/'.join(map(str, r['baseline_wall_s'])):>26s} "
              f"{r['speedup'][1]:>27.2f}x")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
