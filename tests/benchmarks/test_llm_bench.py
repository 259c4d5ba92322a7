"""benchmarks/llm.py end to end on the real embedded SmolLM2, at tiny batch sizes: both modes run the
same market, lockstep with far fewer backend calls, and the figures come out as JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_llm_benchmark_compares_lockstep_with_sequential_calls():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "llm.py"), "--sizes", "2", "4", "--json"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(out["speedup"]) == {"2", "4"} and all(v > 0 for v in out["speedup"].values())
    assert all(0 <= v <= 1 for v in out["outside_backend"].values())
    rows = {(r["batch"], r["mode"]): r for r in out["rows"]}
    for batch in (2, 4):
        lock, seq = rows[(batch, "lockstep")], rows[(batch, "sequential")]
        assert lock["steps"] > 0 and seq["backend_calls"] == seq["prompts"]  # one call per prompt
        assert lock["backend_calls"] < seq["backend_calls"]  # one batch per step and kind
