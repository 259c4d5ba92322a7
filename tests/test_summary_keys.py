"""Every key a run's summary holds is documented (scenarios/run/summary_keys.py, rendered as the docs' summary
reference): each built-in scenario runs from its shipped file at toy size, and a key it returns that no group of
its scenario describes fails, naming the key. A new metric is documented where it is added, or this test says so.

A learner's keys join the summary only when the run learns: relay with learned action logits (the cheapest run
that learns) covers that path. The other scenario files (flagship.toml, recsys_large.toml) run wordmath and recsys
with other keys set; flagship's LoRA learner and skill edit passes cost about 100 s of CPU even at toy size, so its
keys (the learner's ``lm_*``, skill evolution's) are documented without a run here.
"""

import pytest

from scenarios.registry import SCENARIO_DIR, SCENARIOS
from scenarios.run import summary_keys
from scenarios.run.config import load
from scenarios.run.runner import run_experiment

TEXT = {"run.episodes": 4, "market.batch": 4, "population.initial_agents": 4}  # one round of one group of 4
TOY_WORLD = {"recsys.world.users": 60, "recsys.world.items": 80, "recsys.world.genres": 5, "recsys.world.pool": 60,
             "recsys.world.mean_history": 20, "recsys.validation_users": 20, "recsys.test_users": 20}
# Per built-in scenario: the overrides that make its shipped file a toy run (the keys do not depend on the size).
TOY = {
    "relay": {"run.episodes": 16},
    "blocks": {"run.episodes": 16, "blocks.heldout_count": 2, "blocks.heldout_sizes": [4]},
    "boltzmann": {"run.episodes": 2},
    "recsys": {"run.episodes": 64, "market.batch": 64, **TOY_WORLD},
    **{name: {**TEXT, f"{name}.heldout": 2, f"{name}.validation": 2} for name in summary_keys.TEXT_WORLDS},
}
RUNS = [(name, TOY.get(name, {})) for name in sorted(SCENARIOS)] + [
    ("relay", {"run.episodes": 16, "market.batch": 4, "agents.actions": "grpo"})]  # a learner's report


def test_every_built_in_scenario_has_a_toy_size():
    assert sorted(TOY) == sorted(SCENARIOS), "add the new scenario's toy overrides to TOY"
    assert sorted(summary_keys.TEXT_WORLDS) == sorted(set(SCENARIOS) - {"relay", "blocks", "boltzmann", "recsys"})


def test_an_undocumented_key_is_named():
    assert summary_keys.undocumented({"run_id": "x", "ndcg10_final": 0.1, "made_up": 1}, "recsys") == ["made_up"]
    assert summary_keys.undocumented({"ndcg10_final": 0.1}, "relay") == ["ndcg10_final"]  # recsys's, not relay's
    assert summary_keys.describe("heldout_accuracy", "wordmath") and not summary_keys.describe("heldout_accuracy", "relay")


@pytest.mark.slow
@pytest.mark.parametrize("name,overrides", RUNS, ids=[f"{n}{'-learning' if o.get('agents.actions') else ''}"
                                                      for n, o in RUNS])
def test_every_summary_key_of_a_built_in_scenario_is_documented(name, overrides, tmp_path):
    exp = load(str(SCENARIO_DIR / f"{name}.toml"), overrides)
    summary = run_experiment(exp, f"sqlite:///{tmp_path / 'runs.db'}", progress=False)
    missing = summary_keys.undocumented(summary, exp.run.scenario)
    assert not missing, f"{name}: summary keys not described in scenarios/run/summary_keys.py: {missing}"
    if overrides.get("agents.actions") == "grpo":
        assert "policy_updates" in summary  # the learner's report reached the summary
