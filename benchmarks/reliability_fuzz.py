"""The large run of the fuzz suite (tests/reliability/test_fuzz.py): each command's test with N generated inputs,
timed, its hypothesis statistics read for the inputs that passed and failed; one JSON line a command in
benchmarks/results/reliability_fuzz.jsonl (docs/reliability.md shows them).

    nice -n 10 python benchmarks/reliability_fuzz.py import=3000 export=3000 resume=3000 report=1000

``--ingest OUT SECONDS COMMAND COMMIT`` records a pytest output of the same command run earlier (a run
started in pieces, in the background, at COMMIT) instead of running one.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "reliability_fuzz.jsonl"
TESTS = {"import": "test_skills_import_of_generated_folders", "export": "test_skills_export_of_generated_rows",
         "report": "test_report_of_generated_rows", "resume": "test_resume_of_generated_rows"}


def pytest_command(command: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics",
            f"tests/reliability/test_fuzz.py::{TESTS[command]}"]


def counts(out: str) -> tuple[int, int]:
    """(passing, failing) generated inputs in a pytest output: the reuse and generate phases (shrinking a
    failure retries variants of the same input; they are not counted)."""
    found = re.findall(r"during (?:reuse|generate) phase[^\n]*\n[^\n]*\n\s*- (\d+) passing, (\d+) failing", out)
    passing, failing = sum(int(p) for p, _ in found), sum(int(f) for _, f in found)
    if not found and " failed" in out:  # a failure is printed before (or instead of) the statistics
        failing = 1
    return passing, failing


def row(command: str, n: int, out: str, seconds: float, how: str, commit: str | None = None) -> dict:
    passing, failing = counts(out)
    failure = next((line for line in out.splitlines() if line.startswith("E   ") and "Error" in line), None)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    distinct = sum(int(d) for d in re.findall(r"Found (\d+) distinct error", out)) or int(failing > 0)
    return {"test": command, "asked": n, "inputs": passing + failing, "seconds": round(seconds),
            "failures": failing, "distinct_errors": distinct, "first_failure": failure, "command": how,
            "date": datetime.date.today().isoformat(), "commit": commit or head.stdout.strip(),
            "machine": f"{platform.node()}: {os.cpu_count()} CPUs (shared), nice 10"}


def main(argv: list[str]) -> None:
    if argv[:1] == ["--ingest"]:
        out, seconds, command = Path(argv[1]).read_text(), float(argv[2]), argv[3]
        n = int(re.search(r"-(\d+)-\d+\.out$", argv[1]).group(1))
        rows = [row(command, n, out, seconds, f"CATALLAX_FUZZ_{command.upper()}={n} " + " ".join(
            pytest_command(command)[1:]), commit=argv[4])]
    else:
        rows = []
        for spec in argv:
            command, n = spec.split("=")
            env = os.environ | {f"CATALLAX_FUZZ_{command.upper()}": n, "PYTHONPATH": str(ROOT)}
            start = time.monotonic()
            done = subprocess.run(pytest_command(command), cwd=ROOT, env=env, capture_output=True, text=True)
            rows.append(row(command, int(n), done.stdout + done.stderr, time.monotonic() - start,
                            f"CATALLAX_FUZZ_{command.upper()}={n} " + " ".join(pytest_command(command)[1:])))
    with RESULTS.open("a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
            print(json.dumps(r))


if __name__ == "__main__":
    main(sys.argv[1:])
