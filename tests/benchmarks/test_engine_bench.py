"""Smoke test of the engine benchmark: it runs, its JSON parses, and the per-agent Mesa model
reproduces the vectorized engine's transfer log exactly (never asserts on timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_engine_benchmark_quick_is_identical_and_reports_ratios():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "engine.py"), "--quick", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    out = proc.stdout
    assert out.strip(), proc.stderr
    result = json.loads(out.strip().splitlines()[-1])
    for key in ("ratio_1k_B1", "ratio_1k_B32", "engine_1k_B1", "naive_1k_B1"):
        assert key in result and result[key] > 0, (key, out)
    assert "identical: True" in out, out  # the printed flag, and the JSON one below
    assert result["identical"] is True, out
    assert proc.returncode == 0, proc.stderr
