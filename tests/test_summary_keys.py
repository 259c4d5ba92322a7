"""Every key a run's summary holds is documented (scenarios/run/summary_keys.py, rendered as the docs' summary
reference): each shipped scenario file runs at toy size, and a key it returns that no group of its scenario
describes fails, naming the key. A new metric is documented where it is added, or this test says so."""

import pytest

from scenarios.registry import SCENARIO_DIR
from scenarios.run import summary_keys
from scenarios.run.config import load
from scenarios.run.runner import run_experiment

TEXT = {"run.episodes": 4, "market.batch": 4, "population.initial_agents": 4}  # one round of one group of 4
TOY_WORLD = {"recsys.world.users": 60, "recsys.world.items": 80, "recsys.world.genres": 5, "recsys.world.pool": 60,
             "recsys.world.mean_history": 20, "recsys.validation_users": 20, "recsys.test_users": 20}
# Per scenario file: the overrides that make it a toy run (the keys a run returns do not depend on its size).
TOY = {
    "relay": {"run.episodes": 16},
    "blocks": {"run.episodes": 16, "blocks.heldout_count": 2, "blocks.heldout_sizes": [4]},
    "boltzmann": {"run.episodes": 2},
    "recsys": {"run.episodes": 64, "market.batch": 64, **TOY_WORLD},
    "recsys_large": {"run.episodes": 64, "market.batch": 64, **TOY_WORLD},
    **{name: {**TEXT, f"{name}.heldout": 2, f"{name}.validation": 2}
       for name in ("errands", "longlookup", "multihop", "plangrid", "procurement", "review", "wordmath")},
    "flagship": {**TEXT, "wordmath.heldout": 2, "wordmath.validation": 2},
}
FILES = sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))


def test_every_shipped_scenario_file_has_a_toy_size():
    assert sorted(TOY) == FILES, "add the new scenario file's toy overrides to TOY"


def test_an_undocumented_key_is_named():
    assert summary_keys.undocumented({"run_id": "x", "ndcg10_final": 0.1, "made_up": 1}, "recsys") == ["made_up"]
    assert summary_keys.undocumented({"ndcg10_final": 0.1}, "relay") == ["ndcg10_final"]  # recsys's, not relay's
    assert summary_keys.describe("heldout_accuracy", "wordmath") and not summary_keys.describe("heldout_accuracy", "relay")


@pytest.mark.slow
@pytest.mark.parametrize("name", FILES)
def test_every_summary_key_of_a_shipped_scenario_is_documented(name, tmp_path):
    exp = load(str(SCENARIO_DIR / f"{name}.toml"), TOY[name])
    summary = run_experiment(exp, f"sqlite:///{tmp_path / 'runs.db'}", progress=False)
    missing = summary_keys.undocumented(summary, exp.run.scenario)
    assert not missing, (f"{name}: summary keys not described in scenarios/run/summary_keys.py: {missing}")
