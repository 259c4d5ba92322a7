"""Smoke test of the Boltzmann benchmark: it runs, its JSON parses, and Mesa's model, ours and the limit kernel
agree on the Gini trajectory while the synchronous-update control is rejected (never asserts on timings)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_boltzmann_benchmark_quick_passes_the_gini_check():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "boltzmann.py"), "--quick", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["gini_check"] is True and result["gini_max_z"] < 4, proc.stdout
    assert result["control_rejected"] is True, proc.stdout  # the check can tell a different model apart
    assert result["limit_gini_check"] is True, proc.stdout  # the limit row times the same model
    for n in ("100", "1k", "10k"):
        assert result[f"speedup_{n}"] > 0 and result[f"speedup_core_{n}"] > 0 and result[f"share_of_limit_{n}"] > 0
    assert result["share_of_limit"] == result["share_of_limit_10k"]
    assert "same distribution: True" in proc.stdout
