"""Smoke test of the scaling benchmark: it runs, its JSON parses, the plot is written (no timings asserted)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_scaling_benchmark_quick_writes_the_plot(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scaling.py"), "--quick", "--json",
                           "--out", str(tmp_path / "bench")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for key in ("ms_1k_B1", "ms_10k_B4", "ns_per_bid_10k_B4", "bytes_per_agent_10k", "peak_bytes_per_agent_10k",
                "build_s_10k", "first_round_s_10k", "facades_s_10k"):
        assert result[key] > 0, key
    assert result["facade_bytes_per_agent_10k"] >= 0  # the allocator may reuse freed pages
    png = tmp_path / "bench" / "scaling.png"
    assert Path(result["plot"]) == png and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
