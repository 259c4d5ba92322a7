"""The TRL peer benchmark (benchmarks/trl_peer.py): its table's arithmetic, both systems end to end at toy size, and
their steps on one batch (benchmarks/trl_step.py)."""

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "trl_peer.py"


def load_script():
    spec = importlib.util.spec_from_file_location("trl_peer", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_gives_each_system_its_mean_gain_with_a_t_interval_and_pairs_the_systems_by_seed():
    peer = load_script()
    runs = [{"system": s, "lr": 1e-3, "seed": seed, "episodes": 320, "before": 0.25, "after": 0.25 + gain,
             "gain": gain, "updates": 20, "completions_trained": 320, "completions_per_s": speed}
            for s, gains, speed in (("catallax", (0.2, 0.3, 0.4), 4.0), ("trl", (0.1, 0.1, 0.1), 1.0))
            for seed, gain in enumerate(gains)]
    runs.append({**runs[0], "episodes": 160, "gain": 9.0})  # another budget: not in the 320-completion table
    rows = peer.table(runs, 320)
    assert [r["system"] for r in rows] == ["catallax", "trl", "Catallax minus TRL (paired by seed)"]
    half = 4.302652729911275 * 0.1 / math.sqrt(3)  # t(0.975, 2) x sd / sqrt(n)
    assert rows[0]["gain (95% CI)"] == f"+0.300 ± {half:.3f}"
    assert rows[1]["gain (95% CI)"] == "+0.100 ± 0.000"
    assert rows[2]["gain (95% CI)"] == f"+0.200 ± {half:.3f}" and rows[2]["completions/s"] == "4.0x"
    assert rows[0]["held-out after"] == "0.450 0.550 0.650" and rows[2]["gain by seed"] == "+0.100 +0.200 +0.300"
    assert rows[2]["detectable (80% power)"] == f"{(4.302652729911275 + 1.0606601717798212) * 0.1 / math.sqrt(3):.3f}"
    assert rows[0]["with contrast"] == "320 320 320" and rows[1]["with contrast"] == ""  # TRL counts it in its log
    assert [r["seeds"] for r in peer.table(runs, 320, seeds={0, 2})] == [2, 2, 2]


def test_the_prompts_are_the_world_files_role_skill_and_question():
    peer = load_script()
    sent = peer.messages({"a": 3, "b": 4})
    assert sent[0] == {"role": "system", "content": peer.addition.SYSTEM}
    assert sent[1:] == [{"role": "user", "content": "How many legs does a spider have?"},
                        {"role": "assistant", "content": "Answer: 8"}, {"role": "user", "content": "What is 3 + 4?"}]
    assert peer.addition.reward({"a": 3, "b": 4}, " Answer: 7 ") == 1.0
    assert peer.addition.reward({"a": 3, "b": 4}, "Answer: 7.") == 0.0


@pytest.mark.slow
def test_both_systems_train_at_toy_size_and_share_the_held_out_baseline(tmp_path):
    if importlib.util.find_spec("trl") is None:  # not imported here: importing trl sets VLLM_LOGGING_LEVEL process-wide
        pytest.skip("trl is not installed (the peer extra installs it)")
    rows = tmp_path / "runs.jsonl"
    for system in ("catallax", "trl"):
        proc = subprocess.run([sys.executable, str(SCRIPT), "run", "--system", system, "--episodes", "16",
                               "--heldout", "8", "--rows", str(rows)], cwd=ROOT, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    catallax, trl = (json.loads(line) for line in rows.read_text().splitlines())
    assert catallax["system"] == "catallax" and trl["system"] == "trl"
    assert catallax["before"] == trl["before"]  # one evaluator, one base model, the same held-out problems
    for row in (catallax, trl):
        assert row["completions"] == 16 and row["completions_per_s"] > 0 and 0 <= row["after"] <= 1
        assert row["command"].startswith("python benchmarks/trl_peer.py run") and row["commit"]
    assert trl["updates"] == 1 and len(catallax["ledger_hash"]) == 12
    assert trl["completions_with_contrast"] in (0, 4, 8, 12, 16)  # whole groups of 4, read from TRL's log


@pytest.mark.slow
def test_catallax_takes_trls_grpo_step_on_one_batch_from_the_same_weights():
    """The learner's gradient against GRPOTrainer's loss on the same tokens and advantages: a change to what the
    learner's step computes (the loss's mean, its mask, the temperature it scores at) moves the cosine or the norm."""
    if importlib.util.find_spec("trl") is None:
        pytest.skip("trl is not installed (the peer extra installs it)")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "trl_step.py")], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    assert row["completions"] == 16 and row["groups with contrast"] == 4
    assert row["gradient cosine"] > 0.995 and 0.98 < row["norm ratio (Catallax / TRL)"] < 1.02
    assert row["largest log-probability gap from a plain pass (Catallax)"] < 1e-3  # Catallax scores exactly
