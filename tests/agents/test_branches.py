"""Rounds that branch (``agents.branches``): blocks and relay worlds restarted from inner states, the market playing the
branches on as worlds whose first steps were their source's, the tree's step credit, and focus's and tree_opsd's
choice of where to branch."""

import numpy as np
import pytest

from agents.credit.advantages import tree_advantage
from market.ledger import Reason
from scenarios import blocks
from scenarios.run.config import ConfigError, load
from scenarios.run.runner import build_model

TREE = ["agents.actions=grpo", "agents.branches=2", "market.batch=12", "run.episodes=240", "blocks.heldout_count=2"]


def test_a_restored_blocks_instance_plays_on_as_its_source_did():
    cfg = blocks.Config(curriculum=False)
    world = blocks.BlocksWorld(cfg, blocks.heldout(cfg, 8)[:4])
    world.reset(4, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    moves = rng.integers(0, len(blocks.MOVES), size=(world.horizon, 4))
    seen, snapshots = [], []
    for t in range(6):
        snapshots.append(world.snapshot())
        seen.append(world.observe())
        world.step(moves[t], np.ones(4, dtype=bool))
    world.restore(snapshots[2], np.array([0, 1]), np.array([2, 3]))  # worlds 2, 3 back to 0's and 1's third state
    assert np.array_equal(world.observe()[2:], seen[2][:2])
    for t in range(2, 6):  # the sources' moves again: the sources' states again
        assert np.array_equal(world.observe()[2:], seen[t][:2])
        world.step(np.r_[moves[t, :2], moves[t, :2]], np.array([False, False, True, True]))
    assert np.array_equal(world.t[2:], [6, 6])  # the step budget spent as the sources' was


def test_tree_advantage_credits_a_step_with_the_rollouts_below_it():
    # one group: full rollouts 0 (R = 1) and 1 (R = 0); world 2 branched from 0 after 2 steps (R = 0),
    # world 3 from 1 after 1 step (R = 1). Outcomes [1, 0, 0, 1]: mean 1/2, std 1/2
    source, prefix = np.array([0, 1, 0, 1]), np.array([0, 0, 2, 1])
    outcome, group = np.array([1.0, 0.0, 0.0, 1.0]), np.zeros(4, dtype=np.int64)
    t, b = np.array([0, 1, 2, 0, 1, 5, 5]), np.array([0, 0, 0, 1, 1, 2, 3])
    # rollout 0's steps 0 and 1 led to states world 2 passed through: V = (1 + 0) / 2; its step 2 only itself: 1;
    # rollout 1's step 0 led to the state world 3 restarted from: (0 + 1) / 2; its step 1: 0; the branches: themselves
    value = np.array([0.5, 0.5, 1.0, 0.5, 0.0, 0.0, 1.0])
    expected = (value - 0.5) / (0.5 + 1e-6)
    np.testing.assert_allclose(tree_advantage(outcome, source, prefix, t, b, group), expected, atol=1e-12)
    two = tree_advantage(outcome, source, prefix, t, b, np.array([0, 1, 0, 1]))  # a group per full rollout
    assert two[2] == pytest.approx(0.5 / (0.5 + 1e-6))  # group 0 = worlds 0, 2: mean 1/2, std 1/2, V = 1


RELAY_TREE = ["agents.actions=grpo", "agents.branches=1", "market.batch=8", "run.episodes=64"]


@pytest.mark.parametrize("scenario, sets", [("blocks", TREE + ["agents.objective=tree_opsd"]),
                                            ("blocks", TREE + ["agents.objective=focus"]),
                                            ("relay", RELAY_TREE + ["agents.objective=tree_opsd"])])
def test_a_branching_round_restarts_worlds_inside_their_sources_and_pays_as_any(scenario, sets):
    model = build_model(load(scenario, sets, seed=1))
    B = model.cfg.batch
    M = B // (1 + model.policy.branches)
    for _ in range(4):
        model.step()
        trace, episodes = model.trace, model.last_round.episodes
        assert trace.source.tolist()[:M] == list(range(M)) and (trace.source[M:] < M).all()
        lengths = np.array([e["steps"] for e in episodes])
        fork = lengths[:M].max()  # the branches start once every full rollout is over
        for d in range(M, B):
            s, p = trace.source[d], trace.prefix[d]
            assert 1 <= p < lengths[s] or p == 0 == lengths[s] - 1
            assert (trace.path[:fork, d] == -1).all() and not trace.live[:fork, d].any()  # it waits for the full
            assert trace.live[fork, d] and trace.live[:fork, s].any()  # rollouts to end (its prefix was paid in its source's world)
            assert np.array_equal(trace.obs[fork, d], trace.obs[p, s])  # and starts where its source was
            assert p < lengths[d] <= model.world.horizon  # the prefix's steps count against the horizon
    assert model.population.wealth.sum() == 0  # every transfer has a payer: the books still balance
    assert model.policy.report()["policy_updates"] == 4


def test_the_branch_s_next_winner_pays_the_owner_it_took_over():
    model = build_model(load("blocks", TREE + ["agents.objective=tree_opsd"], seed=2))
    paid = 0
    for _ in range(6):
        model.step()
        trace = model.trace
        fork = np.array([e["steps"] for e in model.last_round.episodes])[:4].max()
        t, world, src, dst, amount, reason = trace.payments.columns()
        for d in range(4, 12):
            s, p = trace.source[d], trace.prefix[d]
            before = trace.path[:p, s][trace.path[:p, s] >= 0]
            own = np.flatnonzero(trace.path[fork:, d] >= 0)
            if before.size and own.size and trace.path[fork + own[0], d] != before[-1]:
                at = (world == d) & (t == fork + own[0]) & (reason == Reason.BID)
                assert dst[at].tolist() == [before[-1]]
                paid += 1
    assert paid > 0


def test_focus_branches_where_the_critic_is_least_sure_tree_opsd_anywhere_inside():
    model = build_model(load("blocks", TREE + ["agents.objective=focus", "market.batch=6"], seed=0))
    policy = model.policy
    # two full rollouts of 3 steps that meet in state A at step 1 (mean 1/2, variance 1/4: as the zero critic's 1/2,
    # no bias): g(A) = 0; every other inner state one rollout saw, bias 1/2: g > 0, so A is never a branch's start.
    # The four branches (N = 2 of each) go to step 2 of rollout 0 (g = 2/27), of rollout 1 (a tie, after which
    # the first has had a rollout more: g = 2/64), then to each once more
    F = model.world.observe().shape[1]
    state = lambda k: np.full(F, k)  # noqa: E731
    obs = np.stack([[state(0), state(1)], [state(2), state(2)], [state(3), state(4)]])  # [T, M, F]
    source, prefix = policy.plan_branches(obs, np.array([3, 3]), np.array([1.0, 0.0]), np.random.default_rng(0))
    assert sorted(zip(source.tolist(), prefix.tolist())) == [(0, 2), (0, 2), (1, 2), (1, 2)]
    model = build_model(load("blocks", TREE + ["agents.objective=tree_opsd", "market.batch=6"], seed=0))
    starts = {tuple(zip(*(a.tolist() for a in model.policy.plan_branches(obs, np.array([3, 3]), np.array([1.0, 0.0]),
                                                                           np.random.default_rng(seed)))))
              for seed in range(20)}
    assert {p for plan in starts for _, p in plan} == {1, 2}  # uniform prefixes: the shared state too


def test_the_same_seed_branches_the_same_way():
    hashes = set()
    for _ in range(2):
        model = build_model(load("blocks", TREE + ["agents.objective=tree_opsd"], seed=5))
        for _ in range(3):
            model.step()
        hashes.add(model.ledger.hash)
    assert len(hashes) == 1


@pytest.mark.parametrize("scenario, sets, says", [
    ("wordmath", ["agents.actions=grpo", "agents.branches=1", "agents.objective=h2sd"], "consecutive siblings"),
    ("longlookup", ["agents.actions=grpo", "agents.branches=1", "agents.objective=focus"], "does not score"),
    ("blocks", ["agents.branches=1"], 'set agents.actions = "grpo"'),
    ("blocks", ["agents.actions=grpo", "agents.branches=2"], "market.batch (8) must be a multiple of 1 + 2"),
    ("blocks", ["agents.actions=grpo", "agents.branches=1", "agents.credit=proas"], 'set agents.credit = "grpo"'),
    ("blocks", ["agents.actions=grpo", "agents.branches=1", "agents.tasks=uniform", "agents.group=4"],
     'set agents.tasks = "world"'),
    ("blocks", ["agents.actions=grpo", "agents.branches=2", "market.batch=12", "agents.group=3"],
     "full rollouts of a round"),
])
def test_branches_are_refused_where_a_round_cannot_play_them(scenario, sets, says):
    with pytest.raises(ConfigError, match="agents.(branches|group)") as err:
        load(scenario, sets)
    assert says in str(err.value)
