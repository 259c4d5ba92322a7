"""LLM worlds that branch (scenarios/text/adapter.py snapshot / restore, the LoRA learner's branched round) and the
contextpilot objective (agents/objectives/contextpilot.py): its branch points after context edits, a snapshot's
value as the mean reward of its continuations, the edit's advantage, and the runs it refuses."""

import numpy as np
import pytest
import torch

from scenarios.text import scenario as text_scenario
from agents.objectives import contextpilot, make
from agents.objectives.batch import PolicyBatch
from scenarios.text.adapter import TextBatch, TextBoard
from scenarios import load
from scenarios import longlookup as L
from scenarios.run.sections import ConfigError
from tests.scenarios.test_longlookup import Scripted


def moved(batch: TextBatch, b: int, role: str, text: str) -> None:
    """World b of ``batch`` plays (role, text) (every other world waits)."""
    obs = batch.observe()
    payload, why = batch.board.parse(role, text, obs[b])
    assert payload is not None, why
    payloads = [None] * len(batch.states)
    payloads[b] = payload
    batch.board.deliver(payloads)
    acting = np.zeros(len(batch.states), dtype=bool)
    acting[b] = True
    batch.step(np.where(acting, 0, -1), acting)


def test_a_restored_branch_holds_its_sources_state_at_the_prefix_and_replays_to_it_and_the_source_is_untouched():
    batch = TextBatch(TextBoard(L.LongLookup()), seed=7, horizon=10)
    batch.reset(4, np.random.default_rng(0))  # group 1: four problems
    moved(batch, 0, "searcher", "search: a")
    moved(batch, 0, "searcher", "search: b")
    shot = batch.snapshot()  # world 0 after two searches
    moved(batch, 0, "searcher", "search: c")
    moved(batch, 0, "compactor", "keep: 1, 3")
    source_after = (batch.states[0], batch.observe()[0].copy())
    batch.restore(shot, np.array([0, 0]), np.array([2, 3]))
    assert batch.pid[2] == batch.pid[3] == batch.pid[0] and batch.turn[2] == batch.turn[3] == 2
    assert batch.states[2] == shot[0][1] and batch.states[2] is not batch.states[3]
    assert [q for q, _ in batch.states[2]["turns"]] == ["a", "b"] and batch.states[2]["context"] == [1, 2]
    moved(batch, 2, "searcher", "search: zebra")  # the branch moves on its own way
    obs = batch.observe()
    assert batch.states[0] == source_after[0] and (obs[0] == source_after[1]).all()  # the source is as it was
    assert batch.board.moves[(batch.serial, 2)] == [("searcher", "search: a"), ("searcher", "search: b"),
                                                     ("searcher", "search: zebra")]
    assert batch.board.moves[(batch.serial, 3)] == [("searcher", "search: a"), ("searcher", "search: b")]
    batch.board.current = None  # every row replayed from the move log, as a later round reads it
    assert batch.board.state_at(obs[2]) == batch.states[2] and batch.board.state_at(obs[3]) == shot[0][1]
    assert batch.board.state_at(obs[0]) == source_after[0]


def test_the_branches_start_right_after_each_full_rollouts_context_edits_spread_over_them_in_order():
    edits = np.zeros((6, 3), dtype=bool)
    edits[[1, 3], 0] = True  # rollout 0 edits at steps 1 and 3 (of 6)
    edits[4, 1] = True  # rollout 1 edits at its last step: no state after it to restart from
    source, prefix = contextpilot.plan(edits, np.array([6, 5, 1]), 3, np.random.default_rng(0))
    assert source.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert prefix[:3].tolist() == [2, 4, 2]  # after each edit, round-robin
    assert ((prefix[3:6] >= 1) & (prefix[3:6] <= 4)).all()  # no usable edit: uniform inner states
    assert prefix[6:].tolist() == [0, 0, 0]  # a one-step rollout restarts at its start


def tree():
    """Two full rollouts of one group, each with 3 branches. Rollout 0 (outcome 1) edited the context at step 1;
    its branches 2 and 3 restart right after it (prefix 2) and score 1, 0: V = (1 + 1 + 0) / 3 = 2/3; its branch
    4 restarts at 1, before the edit. Rollout 1 (outcome 0) edited at step 2; its branches 5, 6, 7 restart after
    it (prefix 3) and score 0, 0, 1: V = 1/4."""
    outcome = np.array([1, 0, 1, 0, 1, 0, 0, 1], dtype=float)
    source = np.array([0, 1, 0, 0, 0, 1, 1, 1])
    prefix = np.array([0, 0, 2, 2, 1, 3, 3, 3])
    return outcome, source, prefix, np.zeros(8, dtype=np.int64)


def test_a_snapshots_value_is_the_mean_reward_of_its_continuations_and_the_edit_keeps_its_sign():
    outcome, source, prefix, group = tree()
    assert contextpilot.value(outcome, source, prefix, 0, 2) == pytest.approx(2 / 3)
    assert contextpilot.value(outcome, source, prefix, 1, 3) == pytest.approx(1 / 4)
    t, b = np.array([1, 2, 0, 2]), np.array([0, 1, 0, 2])
    edit = np.array([True, True, False, False])
    got = contextpilot.advantage(outcome, source, prefix, t, b, group, edit)
    std = outcome.std()  # 0.5: the group's every rollout
    assert got[0] == pytest.approx((2 / 3 - 0.5) / std, rel=1e-4)  # the full rollouts' mean is 0.5
    assert got[1] == pytest.approx((1 / 4 - 0.5) / std, rel=1e-4)
    assert got[0] > 0 > got[1]  # a good edit up, a bad one down, though rollout 1 had a success below it
    # the steps that edit nothing: the tree advantage (step 0 of rollout 0: itself and its 3 branches, mean 3/4)
    assert got[2] == pytest.approx((3 / 4 - 0.5) / std, rel=1e-4)
    assert got[3] == pytest.approx((1 - 0.5) / std, rel=1e-4)  # a branch's own step: the branch alone


def test_the_loss_is_grpos_surrogate_and_reports_the_edits():
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -0.5]], requires_grad=True)
    batch = PolicyBatch(logp=logp, old_logp=logp.detach(), mask=torch.ones(2, 2, dtype=torch.bool), entropy=logp.detach(),
                        advantage=torch.tensor([1.0, -0.5]), outcome=torch.tensor([1.0, 0.0]),
                        group=torch.tensor([0, 0]), episode=torch.tensor([0, 1]),
                        branch=torch.tensor([False, True]), context_edit=torch.tensor([True, False]))
    value, stats = make("contextpilot")(batch)
    assert float(value.detach()) == pytest.approx(-(1.0 - 0.5) / 2)  # ratio 1: -mean A
    assert stats["edit_steps"] == 0.5 and stats["edit_advantage"] == 1.0 and stats["branch_steps"] == 0.5


BRANCHED = ["agents.actions=grpo", "agents.objective=contextpilot", "agents.branches=2", "market.batch=12",
            "agents.group=4", "longlookup.heldout=2", "longlookup.validation=1"]


def test_contextpilot_loads_where_the_world_edits_its_context_and_is_refused_elsewhere():
    assert load("longlookup", BRANCHED).agents.objective == "contextpilot"
    with pytest.raises(ConfigError, match="scenario 'wordmath''s LoRA learner does not provide: context_edit"):
        load("wordmath", [s.replace("longlookup", "wordmath") for s in BRANCHED])
    with pytest.raises(ConfigError, match="does not provide: branch"):
        load("longlookup", [s for s in BRANCHED if "branches" not in s])  # contextpilot without branches
    with pytest.raises(ConfigError, match="LoRA learner does not score"):
        load("longlookup", [s.replace("contextpilot", "process_branching") for s in BRANCHED])


def scripted_model(monkeypatch, sets, seed=3):
    """A longlookup market whose agents act by the scripted stand-in of tests/scenarios/test_longlookup.py and whose
    LoRA learner moves the real SmolLM2's adapter on those completions (the script does not read the weights)."""
    from agents.learners import lm_grpo
    from scenarios.registry import get_scenario

    real = lm_grpo.make_backend

    class Acting(Scripted):
        def __init__(self, cfg, weights=None):
            super().__init__()
            self.cfg = cfg
            if weights is not None:
                self.model, self.tokenizer = weights.model, weights.tokenizer

        def weights_changed(self):
            pass

    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Acting(cfg))
    monkeypatch.setattr(lm_grpo, "make_backend", lambda cfg: Acting(cfg, real(cfg)))
    exp = load("longlookup", sets, seed=seed)
    return get_scenario("longlookup").make_model(exp)


@pytest.mark.slow
def test_a_branched_longlookup_round_trains_each_completion_once_by_the_rollouts_below_it(monkeypatch):
    """market.batch = 12, N = 2: 4 full rollouts (one group), 8 branches restarted right after a compaction where
    their source made one. Every completion of the round with an advantage reaches the update once (a branch's
    copied prefix is none of its completions), credited by contextpilot (edits) or the tree (the rest), and the
    adapter's step on them gives finite stats (the update is run on the first 4: the whole batch takes minutes on
    a CPU)."""
    model = scripted_model(monkeypatch, BRANCHED + ["longlookup.horizon=20", "run.episodes=12"])
    lm = model.policy.action_learner
    seen = []
    real_update = lm.grpo.update

    def update(pairs, advantage, objective=None, fields=None, sampled=None):
        seen.append((pairs, advantage, fields))
        part = {k: v if k == "privileged" else v[:4] for k, v in fields.items()}
        seen.append(real_update(pairs[:4], advantage[:4], objective=objective, fields=part))
        return seen[-1]

    monkeypatch.setattr(lm.grpo, "update", update)
    model.run_episodes()
    trace, generations = model.trace, list(model.policy.unwrapped.generations)
    source, prefix, outcome = trace.source, trace.prefix, trace.reward.sum(axis=0)
    assert source[:4].tolist() == [0, 1, 2, 3] and (source[4:] < 4).all() and np.ptp(outcome) > 0
    edits = lm.edits(generations, len(generations), 12)
    for w in range(4, 12):  # a branch restarts right after one of its source's compactions, if it made one usable
        last = np.flatnonzero(trace.path[:, source[w]] >= 0).max()  # the source's last acting step
        if edits[:last, source[w]].any():  # an edit before it leaves a state to restart from
            assert edits[prefix[w] - 1, source[w]]
        acted = [t for t, g in enumerate(generations) for b, *_ in g if b == w]
        assert not acted or min(acted) >= prefix[w]  # its own steps only, after the fork
    after = sum(bool(edits[prefix[w] - 1, source[w]]) for w in range(4, 12) if prefix[w] > 0)
    assert lm.counts["lm_branches"] == 8 and lm.counts["lm_branches_after_edit"] == after > 0
    model.policy.learn(model)
    (pairs, advantage, fields), stats = seen
    t, b = zip(*[(t, b) for t, g in enumerate(generations) for b, *_ in g])
    want = contextpilot.advantage(outcome, source, prefix, np.array(t), np.array(b), source // 4, edits[t, b])
    np.testing.assert_allclose(np.sort(advantage), np.sort(want[want != 0]), rtol=1e-6)
    assert len(pairs) == np.count_nonzero(want) and (fields["branch"] == (source[fields["episode"]] != fields["episode"])).all()
    assert fields["context_edit"].sum() == np.count_nonzero(edits[t, b] & (want != 0)) > 0
    assert all(np.isfinite(v) for v in stats.values()) and lm.counts["policy_updates"] == 1


@pytest.mark.slow
def test_the_same_seed_branches_an_llm_round_the_same_way(monkeypatch):
    """Two markets of one seed play a branched longlookup round alike: the same branch points, actions and money
    (the ledger's hash); the scripted agents act, no update is run."""
    rounds = []
    for _ in range(2):
        model = scripted_model(monkeypatch, BRANCHED + ["longlookup.horizon=20"], seed=5)
        model.run_episodes()
        rounds.append((model.trace.source, model.trace.prefix, model.trace.path, model.ledger.hash))
    (s1, p1, a1, h1), (s2, p2, a2, h2) = rounds
    assert (s1 == s2).all() and (p1 == p2).all() and np.array_equal(a1, a2) and h1 == h2
    assert (s1[4:] < 4).all() and (p1[4:] > 0).any()
