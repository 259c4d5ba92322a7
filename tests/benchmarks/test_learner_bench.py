"""Smoke test of the learner benchmark: it runs, its JSON parses, every rate is positive (no timings asserted).

The GRPO half is left out here (``--no-grpo``): one SmolLM2 update is tested in tests/agents/test_learner.py.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_learner_benchmark_quick_reports_bid_head_updates_per_second():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "learner.py"), "--quick", "--json", "--no-grpo",
                           "--threads", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["device"] in ("cpu", "cuda")
    for n in ("1k", "10k"):
        for features in ("numeric", "text"):
            assert result[f"bid_updates_per_s_{n}_{features}"] > 0 and result[f"value_updates_per_s_{n}_{features}"] > 0
