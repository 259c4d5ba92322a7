"""A MarketModel round as trajectories: profits agree with the ledger, relay's signals agree with
the world (through the library's learner of action logits)."""

import numpy as np

from agents import credit as C
from agents.credit.market import trajectories
from agents.credit.step_advantages import provides, step_advantages
from market import MarketModel
from market.ledger import Reason
from market.money import MICRO
from scenarios import blocks, relay
from scenarios.run.config import load
from tests.agents import inside


def relay_model(seed=0, rounds=6):
    """Each round's groups (the learner's sampled actions and log-probabilities), the ledger's transfers and
    the round's first episode, captured inside the learning hook."""
    seen = []

    def capture(model, actions, logp):
        groups = trajectories(model, actions=actions, world_signals=model.world.credit_signals, group=4, logp=logp)
        seen.append((groups, model.ledger.pending(), model.episodes_done))

    model = inside.relay_model(capture, seed=seed)
    for _ in range(rounds):
        model.step()
    return model, seen, model.world.stages


def test_profits_sum_to_what_the_house_paid_in_minus_out():
    _, seen, _K = relay_model()
    checked = 0
    for groups, transfers, first in seen:
        ids_to_house = transfers["dst"] == 0
        for b, t in enumerate([t for g in groups for t in g]):
            mine = transfers[transfers["episode"] == first + b]
            reward = mine["amount"][mine["reason"] == Reason.REWARD].sum()
            to_house = mine["amount"][(mine["reason"] != Reason.REWARD) & ids_to_house[transfers["episode"] == first + b]].sum()
            # payments between winners cancel: the path's total profit is rewards in minus payments to the house
            assert np.isclose(t.profit.sum(), (reward - to_house) / MICRO)
            checked += len(t)
    assert checked > 0


def test_relay_signals_follow_the_item():
    _, seen, K = relay_model()
    for groups, _, _ in seen:
        for t in (t for g in groups for t in g):
            s = np.array(t.state)
            assert len(s) == len(t) + 1 and (np.diff(s) >= 0).all()
            assert (s[-1] == K) == bool(t.outcome)
            np.testing.assert_allclose(t.progress, s / K)
            np.testing.assert_allclose(t.evidence, np.diff(s) > 0)
            assert C.provided([t]) >= set(relay.SPEC.credit_signals)


def test_every_supported_estimator_runs_on_real_relay_groups():
    _, seen, _ = relay_model(rounds=3)
    names = C.supported(provides(relay.SPEC.credit_signals))
    # all but skillgate (no selection labels), scpo (embeddings off), sid_span, abseeker (no queries), pacpo (no pair),
    # dars (no plans), self_credit (no compaction)
    assert len(names) == 18
    for groups, _, _ in seen:
        for group in groups:
            for name in names:
                out = C.make(name)(group)
                assert all(np.isfinite(a).all() for a in out.steps)


def test_step_advantages_align_with_the_trace():
    checks = []

    def aligned(model, actions, logp):
        cast = step_advantages(model, "cast", 4, actions, logp)  # relay's solver value: -(stages left)
        assert (cast[model.trace.path < 0] == 0).all()
        np.testing.assert_allclose(cast.sum(0), model.world.stage)  # per world, the steps' gains add to the final stage
        checks.append(cast.shape)

    model = inside.relay_model(aligned, seed=1)
    for _ in range(4):
        model.step()
    assert len(checks) == 4


def test_config_refuses_an_estimator_the_world_cannot_feed():
    from scenarios.run.config import ConfigError

    base = ['agents.actions="grpo"', "market.batch=8", "agents.group=4"]
    assert load("relay", base + ["agents.credit=draco"]).agents.credit == "draco"
    for extra, message in [("agents.credit=skillgate", "does not provide: selection"),
                           ("agents.credit=nope", "unknown credit estimator")]:
        try:
            load("relay", base + [extra])
        except ConfigError as err:
            assert message in str(err)
        else:
            raise AssertionError(extra)


def test_agents_credit_changes_what_the_learner_learns():
    from scenarios.run.runner import build_model

    theta = {}
    for name in ("grpo", "draco"):
        model = build_model(load("relay", ['agents.actions="grpo"', "market.batch=8", "agents.group=4",
                                           f"agents.credit={name}"], seed=3))
        for _ in range(3):
            model.step()
        theta[name] = model.policy.action_learner.theta.detach().cpu().numpy().copy()
    assert np.isfinite(theta["draco"]).all()
    assert not np.allclose(theta["grpo"], theta["draco"])


def test_blocks_solver_value_is_exact_along_the_solvers_own_path():
    """Run by the hand-written solver itself, each move lowers its moves-to-go by exactly 1: cast gives
    +1 per step and the meter starts at the episode's length and ends at 0."""
    from scenarios import blocks as W

    seen = []

    class Solver(W.BlocksPolicy):
        def learn(self, model):
            seen.append((step_advantages(model, "cast", 4), trajectories_of(model)))

    def trajectories_of(model):
        return [t for g in trajectories(model, world_signals=model.world.credit_signals, group=4) for t in g]

    cfg = W.Config(train_sizes=[4, 6], curriculum=False, features=["wrong1", "progress", "need_at", "need_depth"])
    exp = load("relay", ["market.batch=8", "population.initial_agents=6", "population.births=false"], seed=2)
    world = blocks.BlocksRecorder(cfg)
    model = MarketModel(world, Solver(world.space, cfg, initial_rules=list(W.SOLUTION)), exp.market, exp.population, seed=2)
    model.step()
    cast, trajs = seen[0]
    assert model.trace.solved.all()
    np.testing.assert_array_equal(cast[model.trace.path >= 0], 1.0)
    for t in trajs:
        assert t.meter[0] == len(t) and t.meter[-1] == 0 and (np.diff(t.meter) == -1).all()
        assert C.provided([t]) >= set(blocks.RECORDED_SIGNALS)
    # goal [1, 2], stacks 1..3 = [2], [1], []: stack 1 is wrong and the needed 1 tops stack 2, so 1to3;
    # then 2to1 (the 1), then 3to1 (the 2): 3 moves
    stack = np.zeros((1, 4, 2), dtype=np.int64)
    stack[0, 0], stack[0, 1, 0], stack[0, 2, 0] = [1, 2], 2, 1
    assert blocks.solution_moves(stack, np.array([[2, 1, 1, 0]]))[0] == 3
