"""benchmarks/llm.py end to end on the real embedded SmolLM2, at a tiny size: the three modes run the
recorded prompts (lockstep reproduces them exactly), interleaved and repeated, and the figures come
out as JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_llm_benchmark_replays_one_record_in_three_modes():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "llm.py"), "--sizes", "2", "--repeats", "2",
                           "--json"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["repeats"] == 2 and set(out["speedup"]) == {"2"} and out["speedup"]["2"] > 0
    assert 0 < out["share_of_ceiling"]["2"] and out["same_prompts"]["2"] == 1.0  # lockstep sent the record's prompts
    assert out["prefix_tokens_saved"]["2"] > 0  # agents' prefixes came from the cache after their first prompt
    rows = {r["mode"]: r for r in out["rows"]}
    seq, raw, lock = rows["sequential"], rows["raw"], rows["lockstep"]
    assert seq["prompts"] == raw["prompts"] == lock["prompts"] and seq["backend_calls"] == seq["prompts"]
    assert raw["backend_calls"] == lock["backend_calls"] < seq["backend_calls"]  # one batch per step and kind
    for r in rows.values():
        assert r["wall_min_s"] <= r["wall_s"] <= r["wall_max_s"] and r["prefill_s"] > 0 and r["decode_s"] > 0


@pytest.mark.slow
def test_llm_benchmark_against_mesa_llm_on_a_real_server(vllm_server):
    """--backend openai: the market through a real local vllm serve, and mesa-llm's own agents (its default and
    its parallel schedule) on the same server, asking at every recorded world-step what the market would ask."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "llm.py"), "--backend", "openai", "--base-url",
                           vllm_server, "--sizes", "2", "--repeats", "1", "--json"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["same_prompts"]["2"] == 1.0 and out["peer_asks_market_prompts"]["2"] == 1.0
    assert out["vs_mesa_llm"]["2"] > 0 and out["vs_mesa_llm_default"]["2"] >= out["vs_mesa_llm"]["2"] * 0.5
    rows = {r["mode"]: r for r in out["rows"]}
    default, parallel, lock = rows["mesa_llm"], rows["mesa_llm_parallel"], rows["lockstep"]
    assert default["steps"] == parallel["steps"] == lock["steps"] > 0  # the same world-steps
    assert default["prompts"] == parallel["prompts"] == default["backend_calls"] == out["peer_calls"]["2"] > 0
    assert 0 < out["market_generations"]["2"] <= lock["steps"]  # the market: at most the winner generates
    assert default["gen_tokens"] > 0 and parallel["gen_tokens"] > 0
