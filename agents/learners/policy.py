"""``LearnedPolicy``: a scenario's policy plus the learners that train its bids and its actions.

The market knows one hook for agents' own bids, ``policy.bids(obs)`` (``market.bid_scheme`` =
``policy`` or ``learned``), and one for learning, ``policy.learn(model)``, called once per round
after the B episodes and before rent, deaths and births (so children inherit the updated rows).
This class composes rather than subclasses: it wraps any policy (rule, blocks, LLM, ...), answers
``eligible`` and the skill side by delegation, and holds two learners, each a module of its own:

* the bid learner: value bids (agents/learners/value_bids.py), REINFORCE bids (agents/learners/reinforce_bids.py), or, where
  the market's scheme bids, a head that learns nothing (agents/learners/market_bids.py);
* the action learner, with ``agents.actions = "grpo"``: action logits over a rule world's actions
  (agents/learners/action_logits.py), or the LM's LoRA adapter where the actions are an LLM's completions
  (agents/learners/lm_grpo.py); none otherwise.

:func:`learners` is the one place that picks them from the config (and the one place that looks at what
the inner policy is). Everything else goes through the hooks each learner declares
(:class:`agents.learners.base.RoundLearner`): births (resize, spawn, inherit, revise) are applied to the inner
policy and then to every learner; ``learn`` runs each learner's own update, then ``agents.epochs`` steps
of one Adam (agents/learners/base.py) over the sum of their losses; ``state_dict`` holds the inner policy's, each
learner's, Adam's and the torch RNG's, so a resumed run continues bit for bit.

Every other call goes to the inner policy (:class:`market.protocols.PolicyWrapper`); scenario code
that reads its own policy's attributes (``rules``, ``recording``) goes through ``policy.unwrapped``.
"""

from __future__ import annotations

import numpy as np
import torch

from agents.learners.action_logits import ActionLogits
from agents.learners.bid_head import NoFeatures, make_features
from agents.config import AgentsConfig
from agents.learners.base import AdamStep, autocast, pick_device
from agents.learners.lm_grpo import CompletionLearner
from agents.learners.market_bids import MarketBids
from agents.objectives import for_agents
from agents.learners.reinforce_bids import ReinforceBids
from agents.learners.value_bids import ValueBids
from market.protocols import PolicyWrapper


def learners(inner, cfg: AgentsConfig, seed: int = 0, features=None, learned_bids: bool = False,
             completions: bool = False):
    """(device, bid learner, action learner or None) for ``inner`` under ``cfg``: the one factory.

    ``learned_bids``: whether the agents' bids are learned (``market.bid_scheme = "learned"``); else the
    market's scheme bids. ``completions``: whether the agents' actions are a language model's completions (the
    scenario's ``SPEC.learned_actions == "lm"``): learned actions then train the model (agents/learners/lm_grpo.py), else
    action logits over the world's actions (``inner.space``). What else a learner reads of ``inner`` it declares
    (market/protocols.py Policy: ``space``, ``backend``, ``state_text``). Built in this order (each draws from torch's RNG in turn): the LM learner (before the
    features: hf features read the trained LM), the features, the bid head, the critic."""
    value = learned_bids and cfg.bid_objective == "value"
    lm = cfg.actions == "grpo" and completions  # LLM agents: their actions are the LM's completions
    logits = cfg.actions == "grpo" and not lm  # rule worlds: action logits over the world's actions
    device = pick_device(cfg.device, gradients=logits or (learned_bids and not value))
    objective = for_agents(cfg)
    action = CompletionLearner(inner, cfg, seed, objective) if lm else None
    if features is None and learned_bids:
        features = make_features(cfg, inner.space, inner.backend, inner.state_text)
    features = features or NoFeatures()  # the market's scheme bids: no head reads features
    bid = (ValueBids if value else ReinforceBids if learned_bids else MarketBids)(cfg, features, device)
    if logits:
        phi = features if learned_bids else make_features(cfg, inner.space)  # the critic's, and per-state logits'
        action = ActionLogits(cfg, len(inner.space.actions), objective, phi, device, seed)
    return device, bid, action


class LearnedPolicy(PolicyWrapper):
    def __init__(self, inner, cfg: AgentsConfig, seed: int = 0, features=None, learned_bids: bool = False,
                 completions: bool = False):
        super().__init__(inner)
        self.cfg = cfg
        self.device, self.bid_learner, self.action_learner = learners(inner, cfg, seed, features, learned_bids,
                                                                      completions)
        self.composed = [self.bid_learner] + ([self.action_learner] if self.action_learner else [])
        self.stats = {}
        self.adam = AdamStep([p for lr in self.composed for p in lr.params], cfg.lr, cfg.max_grad_norm,
                            rows=[p for lr in self.composed for p in lr.rows])

    # --- the market's Policy protocol (describe and the rest go to the inner policy) ---------------
    @property
    def reads_auctions(self) -> bool:
        return self.bid_learner.reads_auctions or self.inner.reads_auctions

    @property
    def branches(self) -> int:
        return self.action_learner.branches if self.action_learner else 0

    def plan_branches(self, obs, lengths, outcome, rng):
        return self.action_learner.plan_branches(obs, lengths, outcome, rng)

    def eligible(self, obs: np.ndarray) -> np.ndarray:
        """The inner policy's wake-up, as the bid learner lets it (a value bidder that predicts a loss sits out)."""
        return self.bid_learner.eligible(obs, self.inner.eligible(obs))

    def bids(self, obs: np.ndarray) -> np.ndarray:
        return self.bid_learner.bids(obs)

    def act(self, obs: np.ndarray, winners: np.ndarray) -> np.ndarray:
        actions = self.inner.act(obs, winners)
        return actions if self.action_learner is None else self.action_learner.act(obs, winners, actions)

    # --- births: the inner policy's rows, then every learner's ------------------------------------
    def resize(self, capacity: int) -> None:
        self.inner.resize(capacity)
        if any([lr.resize(capacity) for lr in self.composed]):  # every learner grows (no short circuit)
            self.adam.sync_rows()

    def spawn(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        self.inner.spawn(rows, rng)
        self.bid_learner.spawn(rows, rng)
        self._born(rows, None)

    def inherit(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        self.inner.inherit(rows, parents, rng)
        self.bid_learner.inherit(rows, parents, rng)
        self._born(rows, parents)

    def revise(self, rows, parents, obs, found, rng: np.random.Generator) -> np.ndarray:
        made = self.inner.revise(rows, parents, obs, found, rng)
        self.bid_learner.revise(rows, parents, made, found, rng)
        self._born(rows[made], parents[made])
        return made

    def _born(self, rows: np.ndarray, parents: np.ndarray | None) -> None:
        """Newborn rows in every learner; fresh Adam moments."""
        if rows.size == 0:
            return
        for lr in self.composed:
            lr.born(rows, parents)
        self.adam.sync_rows(rows)

    def report(self) -> dict:
        """What the run's summary says about the learners (rounds that updated the policy's actions, the LM
        learner's counts) and the wrapped policy's own (skill evolution)."""
        inner = getattr(self.inner, "report", dict)()
        return {**inner, **(self.action_learner.report() if self.action_learner else {})}

    # --- learning ---------------------------------------------------------------------------
    def learn(self, model) -> None:
        """One update from the round the model just ran (``model.trace``): each learner's own update (value
        bids' exact step, the LM's adapter), then the shared Adam on the sum of the learners' losses."""
        self.inner.learn(model)  # the wrapped policy may learn from the round too
        self.stats = stats = {}
        for lr in self.composed:
            stats.update(lr.learn(model))
            if lr.moves_features:
                getattr(self.bid_learner.features, "cache", {}).clear()  # features of the old weights
        batches = [(lr, batch) for lr in self.composed if (batch := lr.batch(model)) is not None]
        for epoch in range(self.cfg.epochs if batches else 0):
            losses, stats = [], dict(self.stats)
            with autocast(self.device):
                for lr, batch in batches:
                    if (out := lr.loss(batch, epoch)) is not None:
                        losses.append(out[0]), stats.update(out[1])
            if losses:
                stats["grad_norm"] = self.adam.step(sum(losses))
        self.stats = stats

    # --- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "inner": self.inner.state_dict(),
            "bids": self.bid_learner.state_dict(),
            "actions": None if self.action_learner is None else self.action_learner.state_dict(),
            "optimizer": self.adam.state_dict(),
            "torch_rng": torch.get_rng_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.inner.load_state_dict(state["inner"])
        self.bid_learner.load_state_dict(state["bids"])
        if self.action_learner is not None:
            self.action_learner.load_state_dict(state["actions"])
        self.adam.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
