"""LoRA GRPO through the market (agents/learners/lm_grpo.py), on the real SmolLM2 and the real wordmath world, small."""

import numpy as np
import pytest
import torch

from agents.credit.advantages import outcome_advantage
from market.checkpoint import decode, encode
from scenarios.registry import get_scenario
from scenarios.run.config import load
from tests.agents.scoring import mean_logprob

SMALL = ["agents.actions=grpo", "market.batch=8", "agents.group=4", "wordmath.heldout=4", "run.episodes=16"]


def market(seed: int = 3, *sets: str):
    exp = load("wordmath", SMALL + list(sets), seed=seed)
    return get_scenario("wordmath").make_model(exp)


@pytest.mark.slow
def test_one_round_through_the_market_moves_the_sampled_completions_log_probs_by_their_advantage():
    """The round's own completions (sampled, 2 problems x 4 rollouts): after the update, sum A x delta log p > 0,
    where A is the group-relative advantage of each completion's world; completions of worlds that did
    better than their group's mean gain on those that did worse."""
    model = market()
    policy = model.policy
    lm = policy.action_learner
    for _ in range(4):  # until a round has a group whose rollouts differ (often all 4 fail on a problem)
        model.run_episodes()
        steps = list(policy.unwrapped.generations)
        outcome = model.trace.reward.sum(axis=0)
        if np.ptp(outcome.reshape(-1, 4), axis=1).max() > 0:
            break
        policy.unwrapped.generations.clear()
        lm.actions.clear()
    assert np.ptp(outcome.reshape(-1, 4), axis=1).max() > 0, "no round with a contrast in 4 tries"
    advantage = outcome_advantage(outcome, 4, normalize=True)
    rows = [(advantage[b], p, done.text) for generations in steps for b, _, p, done, _ in generations if advantage[b]]
    pairs = lm.grpo.encode([p.messages() for _, p, _ in rows], [t for _, _, t in rows])
    before = mean_logprob(lm.grpo, pairs)
    policy.learn(model)
    after = mean_logprob(lm.grpo, pairs)
    weights = torch.tensor([a for a, _, _ in rows])
    assert lm.counts["policy_updates"] == 1 and lm.counts["lm_completions_trained"] == len(pairs)
    assert float((weights * (after - before)).sum()) > 0
    gained = (after - before)[weights > 0].mean() - (after - before)[weights < 0].mean()
    assert float(gained) > 0
    assert policy.unwrapped.memo == {} and policy.unwrapped.scores == {}, "caches of the old weights are dropped"


@pytest.mark.slow
def test_a_checkpoint_carries_the_adapter_and_optimizer_so_the_next_round_is_the_same():
    """Round 1, checkpoint, round 2 -- against a fresh model loaded from the checkpoint running round 2:
    the same payments, bit for bit (the LoRA weights, Adam's moments and every RNG come back). With the KL
    term on, every round updates (even one whose groups all scored alike)."""
    first = market(3, "agents.kl=0.05", "market.batch=4")
    first.step()
    saved = encode(first.state_dict())
    first.step()
    second = market(3, "agents.kl=0.05", "market.batch=4")
    second.load_state_dict(decode(saved))
    second.step()
    a, b = (m.last_round.transfers for m in (first, second))
    a, b = a[a["episode"] >= 4], b[b["episode"] >= 4]  # round 2's (a fresh model's log opens with its founders' funding)
    assert a.size and np.array_equal(a, b)
    for key, value in first.policy.action_learner.state_dict()["adapter"].items():
        assert torch.equal(value, second.policy.action_learner.state_dict()["adapter"][key]), key
    assert first.policy.action_learner.counts["policy_updates"] == second.policy.action_learner.counts["policy_updates"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["sero", "tppo", "focus"])
def test_the_oracle_and_the_critic_reach_the_lm_learner_through_the_market(objective):
    """One round of wordmath, one problem x 4 rollouts: every completion trains, whatever its advantage (the
    oracle and the critic have something to say about a group that scored alike); sero scores the task's lesson
    (the problem's expression, its answer) at each acted state; tppo trains its token critic, which the
    checkpoint carries; focus counts the rollouts that acted in each (role, stage) state."""
    model = market(3, "market.batch=4", f"agents.objective={objective}")
    model.run_episodes()
    completions = sum(len(generations) for generations in model.policy.unwrapped.generations)
    model.policy.learn(model)
    stats, lm = model.policy.stats, model.policy.action_learner
    assert stats["lm_completions"] == completions > 0 and lm.counts["policy_updates"] == 1
    if objective == "sero":
        assert stats["oracle_steps"] == stats["lm_completions"] and stats["oracle_loss"] > 0
        return
    if objective == "focus":  # the 4 rollouts share a problem: each (role, stage) state has 1 to 4 of them
        assert 1 <= stats["rollouts"] <= 4 and stats["critic_loss"] > 0
        return
    assert 0 < stats["critic_loss"] and lm.grpo.critic.head.weight.abs().sum() > 0
    state = lm.state_dict()
    weight = lm.grpo.critic.head.weight.detach().clone()
    with torch.no_grad():
        lm.grpo.critic.head.weight.zero_()
    lm.load_state_dict(state)
    assert torch.equal(lm.grpo.critic.head.weight, weight)


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["distil", "hint_sd"])
def test_a_failures_lesson_reaches_the_lm_learner_through_the_market(objective):
    """One round of wordmath, one problem x 4 rollouts: every completion trains (a failure's lesson needs no contrast
    in its group); distil's teachers write for the failed episodes' steps alone, at the learner's cost, and the world
    verifies what they wrote; hint_sd's locator picks failed steps only, and its EMA teacher follows the update and
    travels in the checkpoint."""
    model = market(3, "market.batch=4", f"agents.objective={objective}")
    model.run_episodes()
    steps = [(b, done.text) for generations in model.policy.unwrapped.generations for b, _, _, done, _ in generations]
    failed_steps = sum(not model.trace.solved[b] for b, _ in steps)
    usage = model.policy.unwrapped.backend.stats.completion_tokens
    lm = model.policy.action_learner
    model.policy.learn(model)
    stats = model.policy.stats
    assert stats["lm_completions"] == len(steps) > 0 and lm.counts["policy_updates"] == 1
    assert model.policy.unwrapped.backend.stats.completion_tokens == usage  # the agents' usage: untouched
    assert failed_steps > 0  # this seed's round has failures (SmolLM2 at 0.3 fails most problems)
    if objective == "distil":
        assert 0 < stats["teacher_samples"] <= failed_steps and stats["teacher_verified"] <= stats["teacher_samples"]
        assert lm.counts["lm_privileged_tokens"] > 0
        return
    assert 0 < stats["located"] <= failed_steps and lm.counts["lm_privileged_tokens"] > 0
    adapter = [p for p in lm.grpo.model.parameters() if p.requires_grad]
    moved = [float((a - p.detach()).abs().max()) for a, p in zip(lm.ema.average, adapter)]
    assert max(moved) > 0  # the average lags the updated weights
    state = lm.state_dict()
    with torch.no_grad():
        lm.ema.average[0].zero_()
    lm.load_state_dict(state)
    assert torch.equal(lm.ema.average[0], state["ema"]["average"][0].to(lm.ema.average[0].device))
