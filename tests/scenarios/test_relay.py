"""The relay scenario: the world's mechanics, and the bucket brigade's reason to exist."""

import numpy as np
import pytest

from agents.rules import parse
from scenarios import relay
from scenarios.run.config import load
from scenarios.run.runner import run_experiment


def test_relay_world_steps():
    world, _ = relay.build(relay.Config(stages=3, horizon_factor=2))
    assert world.horizon == 6
    world.reset(3, np.random.default_rng(0))
    assert world.observe().tolist() == [[0], [0], [0]]
    reward, done = world.step(np.array([0, 1, 0]), np.array([True, True, False]))
    assert world.stage.tolist() == [1, 0, 0]  # only the right action of an acting winner advances
    world.step(np.array([1, 0, 0]), np.ones(3, bool))
    reward, done = world.step(np.array([2, 1, 1]), np.ones(3, bool))
    assert world.stage.tolist() == [3, 2, 2] and done.tolist() == [True, False, False]
    assert reward.tolist() == [1.0, 0.0, 0.0] and world.solved.tolist() == [True, False, False]


@pytest.mark.parametrize("p_specialist, specialists", [(1.0, True), (0.0, False)])
def test_newcomers(p_specialist, specialists):
    cfg = relay.Config(stages=4, p_specialist=p_specialist)
    world, policy = relay.build(cfg)
    policy.resize(201)
    policy.spawn(np.arange(1, 201), np.random.default_rng(0))
    for text in policy.describe(np.arange(1, 201)):
        ((feature, op, stage),), action = parse(text, world.space)
        assert 0 <= stage < 4 and op == 0b010
        assert (action == stage) is specialists  # a non-specialist never advances the stage it wakes at


@pytest.mark.slow
def test_bucket_brigade_beats_final_only():
    """Holland's point at toy scale: without payments flowing back, early stages go broke and the chain fails."""
    rate = {}
    for payment in ("bucket_brigade", "final_only"):
        rate[payment] = np.mean([
            run_experiment(load("relay", [f"market.payment={payment}"], seed=seed), "sqlite://", progress=False)["success_rate"]
            for seed in (0, 1)
        ])
    assert rate["bucket_brigade"] > rate["final_only"] + 0.3, rate
