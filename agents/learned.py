"""``LearnedPolicy``: a scenario's policy plus a trained bid head (and optionally trained action logits).

The market knows one hook for agents' own bids, ``policy.bids(obs)`` (``market.bid_scheme`` =
``policy`` or ``learned``), and one for learning, ``policy.learn(model)``, called once per round
after the B episodes and before rent, deaths and births (so children inherit the updated rows).
This class composes rather than subclasses: it wraps any policy (rule, blocks, ...), answers
``eligible`` and the skill side by delegation, and adds

* ``bids``: the bid head (agents/bid_head.py) on phi(obs), [B, N] credits;
* ``act``: the inner policy's action, or with ``agents.actions = "grpo"`` an action sampled from
  theta[i] + rule_logit x onehot(rule's action) (theta: per-agent logits, trained by GRPO);
* births: every row operation the market asks of the policy (resize, spawn, inherit, revise) is
  applied to the inner policy, the head rows and theta together;
* ``learn``: one update from the round's trace (agents/learner.py);
* ``state_dict``: the inner policy's, the weights, Adam's state and the RNG states, so a resumed
  run continues bit for bit.

Every other call goes to the inner policy (:class:`market.protocols.PolicyWrapper`); scenario code
that reads its own policy's attributes (``rules``, ``recording``) goes through ``policy.unwrapped``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from agents.bid_head import BidHead, grow_rows, make_features
from agents.config import AgentsConfig
from agents.learner import (Learner, autocast, bid_objective, bucket_brigade_profit, group_advantage,
                            grpo_objective, pick_device, to_cpu)
from market.money import MICRO
from market.protocols import PolicyWrapper


class LearnedPolicy(PolicyWrapper):
    reads_auctions = True  # the bid objective replays every auction of the round

    def __init__(self, inner, cfg: AgentsConfig, seed: int = 0, features=None):
        super().__init__(inner)
        self.cfg = cfg
        self.device = pick_device(cfg.device)
        self.features = features or make_features(cfg, inner.space)
        self.rng = np.random.default_rng([seed, 0x1EA2])  # action sampling: a stream of its own
        self.acted = []  # (winners, rule action, action, log-prob) per act() since the last learn()
        self.stats = {}
        self.head = BidHead(self.features.size, cfg).to(self.device)
        self.theta = nn.Parameter(torch.zeros(2, len(inner.space.actions), device=self.device))
        params = list(self.head.parameters()) + ([self.theta] if cfg.actions == "grpo" else [])
        self.learner = Learner(params, cfg.lr, cfg.max_grad_norm)

    # --- the market's Policy protocol (eligible, describe and the rest go to the inner policy) ------
    @torch.no_grad()
    def bids(self, obs: np.ndarray) -> np.ndarray:
        phi = torch.as_tensor(self.features(obs), device=self.device)
        with autocast(self.device):
            return self.head.bids(phi).double().cpu().numpy()

    @torch.no_grad()
    def act(self, obs: np.ndarray, winners: np.ndarray) -> np.ndarray:
        actions = self.inner.act(obs, winners)
        if self.cfg.actions != "grpo":
            return actions
        acting = (winners >= 0) & (actions >= 0)
        logits = self._logits(np.maximum(winners, 0), np.maximum(actions, 0)).float().cpu().numpy()
        gumbel = -np.log(-np.log(np.clip(self.rng.random(logits.shape), 1e-300, 1.0 - 1e-16)))
        sampled = np.where(acting, np.argmax(logits + gumbel, axis=1), actions)
        logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        self.acted.append((np.where(acting, winners, -1), actions, sampled, logp[np.arange(len(sampled)), np.maximum(sampled, 0)]))
        return sampled

    def _logits(self, rows, rule_actions) -> torch.Tensor:
        """[M, A] action logits of agents ``rows`` whose rules say ``rule_actions``."""
        rows = torch.as_tensor(rows, device=self.device)
        prior = nn.functional.one_hot(torch.as_tensor(rule_actions, device=self.device), self.theta.shape[1])
        return self.theta[rows] + self.cfg.rule_logit * prior

    def resize(self, capacity: int) -> None:
        self.inner.resize(capacity)
        if self.head.resize(capacity):
            grow_rows(self.theta, capacity)  # action logits follow the head's rows
            self.learner.sync_rows()

    def spawn(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        self.inner.spawn(rows, rng)
        self.head.spawn(rows, rng)
        self._children(rows, None)

    def inherit(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        self.inner.inherit(rows, parents, rng)
        self.head.inherit(rows, parents, rng)
        self._children(rows, parents)

    def revise(self, rows, parents, obs, found, rng: np.random.Generator) -> np.ndarray:
        made = self.inner.revise(rows, parents, obs, found, rng)
        if made.any():
            self.head.inherit(rows[made], parents[made], rng)
            self._children(rows[made], parents[made])
        return made

    @torch.no_grad()
    def _children(self, rows: np.ndarray, parents: np.ndarray | None) -> None:
        """Newborn rows: theta copied from the parent (zero for a random newcomer); fresh Adam moments."""
        if rows.size == 0:
            return
        index = torch.as_tensor(rows, device=self.device)
        self.theta[index] = 0.0 if parents is None else self.theta[torch.as_tensor(parents, device=self.device)]
        self.learner.sync_rows(rows)

    # --- learning ---------------------------------------------------------------------------
    def learn(self, model) -> None:
        """One update from the round the model just ran (``model.trace``): bids, then actions."""
        self.inner.learn(model)  # the wrapped policy may learn from the round too
        trace, market, cfg = model.trace, model.cfg, self.cfg
        acted, self.acted = self.acted[-len(trace.path):], []  # this round's act() calls, one per step
        bid_batch = self._bid_batch(trace, market) if market.bid_scheme == "learned" else None
        act_batch = self._action_batch(trace, acted, model) if cfg.actions == "grpo" and acted else None
        if bid_batch is None and act_batch is None:
            return
        for epoch in range(cfg.epochs):
            losses, stats = [], {}
            with autocast(self.device):
                if bid_batch is not None and epoch == 0:  # REINFORCE is on-policy: the first step only
                    phi, eligible, winner, cap, advantage = bid_batch
                    bids = torch.minimum(self.head.bids(phi), cap)
                    loss, s = bid_objective(bids, eligible, winner, advantage, market.temperature, cfg.entropy)
                    losses.append(loss), stats.update(s)
                if act_batch is not None:
                    rows, rule_actions, actions, old_logp, advantage = act_batch
                    logp = torch.log_softmax(self._logits(rows, rule_actions).float(), -1)
                    chosen = logp.gather(1, actions[:, None])[:, 0]
                    ref = torch.log_softmax(cfg.rule_logit * nn.functional.one_hot(rule_actions, logp.shape[1]).float(), -1)
                    kl = (logp.exp() * (logp - ref)).sum(-1)
                    loss, s = grpo_objective(chosen, old_logp, advantage, cfg.clip, kl, cfg.kl)
                    losses.append(loss), stats.update(s)
            if losses:
                stats["grad_norm"] = self.learner.step(sum(losses))
        self.stats = stats

    def _bid_batch(self, trace, market):
        """Auctions of the round with a winner and a choice (>= 2 eligible) -> tensors for bid_objective."""
        choice = (trace.winner >= 0) & (trace.eligible.sum(-1) >= 2)
        t, b = np.nonzero(choice)
        if t.size == 0:
            return None
        N = self.head.capacity
        eligible = np.zeros((t.size, N), dtype=bool)
        eligible[:, : trace.eligible.shape[2]] = trace.eligible[t, b]  # the population may have grown since
        cap = np.full((t.size, N), np.inf)
        cap[:, : trace.wealth.shape[1]] = np.maximum(trace.wealth[t], 0) * market.bid_cap / MICRO
        if self.cfg.advantage == "global":
            advantage = group_advantage(trace.reward.sum(axis=0), self.cfg.group, normalize=False)[b]
        else:
            advantage = bucket_brigade_profit(trace)[t, b] / MICRO / self.cfg.bid_scale  # in typical bids
        d = self.device
        return (torch.as_tensor(self.features(trace.obs[t, b]), device=d), torch.as_tensor(eligible, device=d),
                torch.as_tensor(trace.winner[t, b], device=d), torch.as_tensor(cap, dtype=torch.float32, device=d),
                torch.as_tensor(advantage, dtype=torch.float32, device=d))

    def _action_batch(self, trace, acted, model=None):
        """Steps where a winner sampled an action -> tensors for grpo_objective (A broadcast per episode)."""
        rows, rule_actions, actions, logp = (np.stack(column) for column in zip(*acted))  # each [T, B]
        t, b = np.nonzero(rows >= 0)
        if t.size == 0:
            return None
        advantage = group_advantage(trace.reward.sum(axis=0), self.cfg.group, normalize=True)[b]
        if self.cfg.credit != "grpo" and model is not None:  # a per-step estimator (agents/credit)
            from agents.credit.step_advantages import step_advantages

            advantage = step_advantages(model, self.cfg.estimator(), self.cfg.group, actions, logp)[t, b]
        d = self.device
        return (torch.as_tensor(rows[t, b], device=d), torch.as_tensor(rule_actions[t, b], device=d),
                torch.as_tensor(actions[t, b], device=d),
                torch.as_tensor(logp[t, b], dtype=torch.float32, device=d),
                torch.as_tensor(advantage, dtype=torch.float32, device=d))

    # --- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "inner": self.inner.state_dict(),
            "head": to_cpu(self.head.state_dict()),
            "theta": self.theta.detach().cpu().clone(),
            "optimizer": self.learner.state_dict(),
            "rng": self.rng.bit_generator.state,
            "torch_rng": torch.get_rng_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.inner.load_state_dict(state["inner"])
        with torch.no_grad():  # shapes follow the checkpoint (the population may have grown)
            for name, value in state["head"].items():
                self.head.get_parameter(name).data = value.to(self.device).clone()
            self.theta.data = state["theta"].to(self.device).clone()
        self.learner.load_state_dict(state["optimizer"])
        self.rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"])
        self.acted.clear()
