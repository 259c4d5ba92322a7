"""The critic and the oracle the token-level objectives read (agents/learners/critic.py; World.oracle for sero), on
rule-logit policies: hand-computed critic logits, solvers that solve their worlds, and the blocks economy
training with tppo, pact and sero, a checkpoint carrying the critic."""

import numpy as np
import pytest
import torch

from agents.learners.critic import ActionCritic
from market.checkpoint import decode, encode
from scenarios import blocks
from scenarios.relay import Config as RelayConfig
from scenarios.relay import RelayWorld
from scenarios.run.config import ConfigError, load
from scenarios.run.runner import build_model

SMALL = ["agents.actions=grpo", "run.episodes=64", "market.batch=16", "agents.group=4", "blocks.heldout_count=2"]


def test_action_critic_reads_the_state_features_at_the_action_taken_and_alone():
    critic = ActionCritic(features=3, actions=2)
    with torch.no_grad():
        critic.weight.copy_(torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0], [0.0, 0.0, 2.0]]))
        critic.bias.copy_(torch.tensor([0.25, -0.5, 1.0]))
    phi = torch.tensor([[1.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    logits = critic(phi, torch.tensor([0, 1]))
    assert torch.allclose(logits, torch.tensor([1 + 3 + 0.25, 2 * 0.5 - 0.5]), atol=1e-6)
    assert torch.allclose(critic.state(phi), torch.tensor([2 + 1.0, 1.0]), atol=1e-6)  # the state, no action yet
    assert torch.equal(ActionCritic(3, 2)(phi, torch.tensor([0, 1])), torch.zeros(2))  # no opinion at the start


def test_relay_oracle_advances_the_shown_label_and_solves_relabelled_chains():
    world = RelayWorld(RelayConfig(stages=4))
    assert world.oracle(np.array([[0], [3], [4]])).tolist() == [0, 3, -1]
    world.load([(2, 0, 3, 1), (1, 0)])  # a relabelling and a prefix sub-problem
    for _ in range(4):
        action = world.oracle(world.observe())
        world.step(action, action >= 0)
    assert world.solved.all()


@pytest.mark.parametrize("n", [4, 8, 16])
def test_blocks_oracle_solves_held_out_instances(n):
    cfg = blocks.Config(curriculum=False)
    world = blocks.BlocksWorld(cfg, blocks.heldout(cfg, n)[:20])
    world.reset(20, np.random.default_rng(0))
    for _ in range(world.horizon):
        action = world.oracle(world.observe())
        world.step(action, action >= 0)
    assert world.solved.all()
    assert (world.oracle(world.observe()) == -1).all()  # built: nothing left to do


def test_sero_is_refused_where_blocks_hides_what_its_solver_reads():
    with pytest.raises(ConfigError, match="add need_depth"):
        load("blocks", SMALL + ["agents.objective=sero", 'blocks.features=["wrong1", "need_at"]'])


def run(objective: str, rounds: int, seed: int = 0):
    model = build_model(load("blocks", SMALL + [f"agents.objective={objective}"], seed=seed))
    for _ in range(rounds):
        model.step()
    return model


def oracle_logp(model) -> float:
    """Mean log-probability the agents' logits give the solver's move at the round's acted states."""
    policy, trace = model.policy, model.trace
    t, b = np.nonzero(trace.winner >= 0)
    rows, obs = trace.winner[t, b], trace.obs[t, b]
    rule = policy.unwrapped.act(obs, rows)
    action = model.world.oracle(obs)
    keep = action >= 0
    with torch.no_grad():
        logp = torch.log_softmax(policy.action_learner.logits(rows[keep], rule[keep]), -1)
    return float(logp.gather(1, torch.as_tensor(action[keep])[:, None]).mean())


def test_sero_moves_the_solvers_moves_up_more_than_grpo():
    """The same seed and rounds: sero's logits give the solver's move at the states the agents acted on a
    higher log-probability than grpo's (its supervised term pulls toward it)."""
    grpo, sero = run("grpo", 4), run("sero", 4)
    assert sero.policy.stats["oracle_steps"] > 0 and sero.policy.stats["oracle_loss"] > 0
    assert oracle_logp(sero) > oracle_logp(grpo)


@pytest.mark.parametrize("objective", ["tppo", "pact"])
def test_critic_objectives_train_the_critic_and_a_checkpoint_carries_it(objective):
    """After some rounds the critic has moved (BCE on success) and so have the logits; a model restored from a
    checkpoint runs the next round to the same payments and the same critic as the one that went on."""
    first = run(objective, 3)
    assert first.policy.action_learner.critic.bias.abs().sum() > 0 and first.policy.action_learner.theta.abs().sum() > 0
    assert 0 < first.policy.stats["critic_loss"] < np.log(2) + 1e-6  # below the zero critic's BCE, log 2
    saved = encode(first.state_dict())
    first.step()
    second = build_model(load("blocks", SMALL + [f"agents.objective={objective}"], seed=0))
    second.load_state_dict(decode(saved))
    second.step()
    a, b = (m.last_round.transfers for m in (first, second))
    a, b = a[a["episode"] >= 48], b[b["episode"] >= 48]  # round 4's (a fresh model's log opens with its founders')
    assert a.size and np.array_equal(a, b)
    for key, value in first.policy.action_learner.critic.state_dict().items():
        assert torch.equal(value, second.policy.action_learner.critic.state_dict()[key]), key
