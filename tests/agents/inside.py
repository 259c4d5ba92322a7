"""Running a check inside a learning round of the library's learner (a wrapper of the rule policy, not a mock)."""

import numpy as np

from agents.learners.policy import LearnedPolicy
from market import MarketModel
from market.protocols import PolicyWrapper
from scenarios import relay
from scenarios.run.config import load


class Inside(PolicyWrapper):
    """The world's rule policy under ``LearnedPolicy``, calling ``check(model, actions [T, B], logp [T, B])`` in
    each round's learning hook, before the learner's update: the round's sampled actions and their log-probabilities."""

    def __init__(self, inner, check):
        super().__init__(inner)
        self.space, self.check = inner.space, check

    def learn(self, model):
        acted = model.policy.action_learner.acted[-len(model.trace.path):]
        _, _, actions, logp = (np.stack(column) for column in zip(*acted))
        self.check(model, actions, logp)
        self.inner.learn(model)


def relay_model(check, sets=(), seed: int = 0) -> MarketModel:
    """relay at market.batch = 8 with learned action logits (G = 4) over rules that call ``check`` each round."""
    exp = load("relay", ['agents.actions="grpo"', "market.batch=8", "agents.group=4", *sets], seed=seed)
    world, rules = relay.build(exp.scenario)
    policy = LearnedPolicy(Inside(rules, check), exp.agents, seed=seed, learned_bids=False)
    return MarketModel(world, policy, exp.market, exp.population, seed=seed)
