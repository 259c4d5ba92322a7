"""recsys's learned recall source, trained by ``agents.objective = ca_pg`` (scenarios/recsys/learned_recall.py): what
it proposes before training, that one update raises the probability its list holds a trained user's item, the run
in team and market mode with its summary, an exact resume, and the refusals."""

import numpy as np
import pytest
import torch

from agents.objectives import make
from agents.objectives.ca_pg import hit_probability
from market.checkpoint import decode, encode
from market.store import make_engine
from scenarios.recsys import make_model, ops
from scenarios.recsys.data import QUESTION, TEST
from scenarios.recsys.learned_recall import LearnedRecall
from scenarios.run.config import ConfigError, load
from scenarios.run.runner import run_experiment
from skills import SkillLibrary
from tests.scenarios.recsys_small import OVERRIDES, small_world, store

CA_PG = OVERRIDES + ["agents.objective=ca_pg", "recsys.candidates=40"]  # of 150 items: a list that can miss


def recall(world, objective="ca_pg", lr=0.05) -> LearnedRecall:
    return LearnedRecall(world.data, world.signals.embedding, make(objective), lr, candidates=40)


def test_before_any_update_it_proposes_what_the_embedding_source_proposes():
    world = small_world()
    users = world.data.users(TEST)[:30]
    req = world.pipeline.requests(users)
    rows = np.arange(users.size)
    embed = ops.CATALOGUE["recall"]["embed"].run(req, rows, {"seeds": 20})
    learned = recall(world).scores(users)
    for e, s in zip(embed, learned):
        proposed = np.flatnonzero(e > 0)  # the embedding source's positive scores (history and future struck later)
        allowed = proposed[s[proposed] > 0]
        top = allowed[np.argsort(-e[allowed], kind="stable")][:10]
        assert np.array_equal(top, allowed[np.argsort(-s[allowed], kind="stable")][:10])


def test_one_update_raises_the_chance_its_list_holds_the_users_items():
    world = small_world()
    users = world.data.users(QUESTION)[:64]
    learned = recall(world, lr=0.1)

    def hit() -> float:
        with torch.no_grad():
            logits = learned.logits(users)
            rows = np.repeat(np.arange(users.size), world.data.targets.shape[1])
            target = torch.as_tensor(world.data.targets[users].reshape(-1))
            return float(hit_probability(logits[torch.as_tensor(rows)], target, 40).mean())

    before = hit()
    stats = learned.update(users)
    assert hit() > before and stats["updates"] == 1 and learned.version == 1
    assert 0 < stats["hit"] < 1 and stats["rows"] > 0
    with learned.untrained():  # the summary's ablation: the scores as initialised, then back
        assert hit() == pytest.approx(before, abs=1e-9)
    assert hit() > before


@pytest.mark.parametrize("mode", ["team", "market"])
def test_a_ca_pg_run_trains_its_recall_every_round_and_reports_it(tmp_path, mode):
    exp = load("recsys", CA_PG + [f"recsys.mode={mode}"], seed=0)
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    summary = run_experiment(exp, db, progress=False)
    learned = summary["learned_recall"]
    assert learned["objective"] == "ca_pg" and learned["updates"] == 192 // 64
    assert 0 < learned["test_hit_rate_initial"] < 1 and learned["test_hit_rate_final"] != learned["test_hit_rate_initial"]
    seeded = SkillLibrary.open(db, summary["run_id"]).versions()
    assert any(v.label == "recall-learned@1" for v in seeded)  # the seed library runs it; the gate may prune it
    assert {"ndcg10_final_untrained", "recall50_final_untrained"} <= set(learned)


def test_a_resumed_run_continues_its_recall_exactly(tmp_path):
    exp = load("recsys", CA_PG, seed=2)

    straight = make_model(exp)
    straight.attach(store(tmp_path, "a"))
    straight.step(), straight.step()
    cut = make_model(exp)
    cut.attach(store(tmp_path, "b"))
    cut.step()
    state = encode(cut.state_dict())
    cut.step()
    resumed = make_model(exp)
    resumed.load_state_dict(decode(state))
    resumed.attach(store(tmp_path, "b"))
    resumed.step()
    assert torch.equal(resumed.learned.items, straight.learned.items) and resumed.learned.version == 2
    assert resumed.final("grse") == straight.final("grse")


@pytest.mark.parametrize("sets, says", [
    (["agents.objective=eapo"], "trains only what item_logits, target, list_len score"),
    (["agents.objective=ca_pg", "recsys.mode=team"], None),
])
def test_recsys_takes_only_objectives_that_read_its_recall_scores(sets, says):
    if says is None:
        assert load("recsys", OVERRIDES + sets).agents.objective == "ca_pg"
        return
    with pytest.raises(ConfigError, match="agents.objective") as err:
        load("recsys", OVERRIDES + sets)
    assert says in str(err.value)


def test_a_seed_library_running_the_learned_source_needs_ca_pg(tmp_path):
    from skills import SkillLibrary
    from skills.skillmd import export_library

    library = SkillLibrary(make_engine(f"sqlite:///{tmp_path / 'lib.db'}"), "lib")
    library.add("recall-learned", "Candidates the learned recall scores.", "Propose what the learned recall scores.",
                rule="always -> learned(seeds=20, weight=1)", role="recall")
    export_library(library, tmp_path / "skills")
    with pytest.raises(ConfigError, match='only agents.objective = "ca_pg" trains'):
        load("recsys", OVERRIDES + [f"recsys.seed_library={tmp_path / 'skills'}"])
    assert load("recsys", CA_PG + [f"recsys.seed_library={tmp_path / 'skills'}"]).agents.objective == "ca_pg"
