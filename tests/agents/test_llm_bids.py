"""Learned bids for LLM agents: features from the agents' own LM (SmolLM2), and a value head that learns routing."""

import numpy as np
import torch

from agents.learners.value_bids import value_loss, value_step
from scenarios import wordmath
from scenarios.registry import get_scenario
from scenarios.run.config import load


def llm_market(features: str):
    exp = load("wordmath", ["market.bid_scheme=learned", f"agents.features={features}", "market.batch=3",
                            "population.initial_agents=4", "wordmath.heldout=3"])
    return get_scenario("wordmath").make_model(exp)


def stage_obs(stages) -> np.ndarray:
    """Observations of one problem at the given stages (Board order: stage, seed, problem, world, serial)."""
    return np.array([[s, 0, 7, b, 1] for b, s in enumerate(stages)], dtype=np.int64)


def test_hf_features_are_the_policy_lm_s_hidden_states_of_the_stage_summaries_with_positions_under_padding():
    policy = llm_market("hf").policy
    encoder = policy.bid_learner.features.encode
    assert encoder.model is policy.unwrapped.backend.model  # the agents' own LM, no second copy
    phi = policy.bid_learner.features(stage_obs([0, 1, 2]))
    assert phi.shape == (3, encoder.size) and not np.allclose(phi[0], phi[2])
    alone = encoder([wordmath.SUMMARIES[1]])[0]  # left-padded beside longer summaries, the same state as alone
    assert np.allclose(phi[1], alone, atol=1e-3), np.abs(phi[1] - alone).max()


def test_a_value_head_on_lm_features_learns_a_planted_routing_rule():
    """Agent a earns 1 credit per turn at the first stage and nothing at the last, agent b the reverse: after
    the value steps (the learner's own loss and NLMS step) a outbids b at the first stage and b outbids a at the last."""
    policy = llm_market("hf").policy
    a, b = np.flatnonzero(policy.unwrapped.role >= 0)[:2]
    obs = stage_obs([0, 2, 0, 2])
    agents = torch.tensor([a, a, b, b])
    target = torch.tensor([1.0, 0.0, 0.0, 1.0])
    phi = torch.as_tensor(policy.bid_learner.features(obs))
    for _ in range(40):
        loss, _ = value_loss(policy.bid_learner.head, phi, agents, target, torch.full((4,), 0.25), delta=1.0)
        value_step(policy.bid_learner.head, loss)
    policy.bid_learner.changed()
    values = policy.bid_learner.values(stage_obs([0, 2]))
    assert values[0, a] > values[0, b] + 0.3 and values[1, b] > values[1, a] + 0.3, values[:, [a, b]]
    bids = policy.bids(stage_obs([0, 2]))
    assert bids[0, a] > bids[0, b] and bids[1, b] > bids[1, a]
