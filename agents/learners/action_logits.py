"""Learned action logits (``agents.actions = "grpo"`` on a world of rule policies): a residual over each rule.

The winner's action is sampled from theta[i] + rule_logit x onehot(rule's action) (theta: per-agent logits
over the world's actions, zero for a newborn of no parent, its parent's for a child: a newborn follows its
rule). With ``agents.logits.per_state`` the residual reads the observation, theta[i] phi(obs) (theta[i]: a
[features, actions] matrix; phi one-hot per feature under ``agents.features = "numeric"``, so a residual per
agent and state on a world of one feature): a rule that wakes in several states learns an action for each.
After the round the objective ``agents.objective`` (agents/objectives) moves theta on the round's sampled
actions, one token each, with

* the advantage: each rollout's outcome against its group's (:func:`agents.credit.advantages.outcome_advantage`),
  among the rollouts of its sub-problem under ``agents.tasks = "scrl"`` (``class_advantage``), by the
  rollouts below each step on a branching round (``tree_advantage``), or a per-step estimator
  (``agents.credit``, agents/credit/step_advantages.py);
* a critic of (state, action) for the objectives that read one (tppo, pact, focus: agents/learners/critic.py), and
  the world's solver's action at each acted state for sero (``World.oracle``);
* ``agents.kl`` x the exact KL to the rule alone (the reference policy: ``agents.objectives.kl.exact_kl``).

With ``agents.branches`` = N it also says where a training round's branches start (``plan_branches``: the
market restarts those worlds there, market/model.py): focus's pick of the states whose critic error a
rollout reduces most (``focus.plan``), else tree_opsd's uniform prefixes (``tree_opsd.layout``).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from agents.learners import critic
from agents.credit.advantages import class_advantage, outcome_advantage, tree_advantage
from agents.learners.bid_head import grow_rows
from agents.config import AgentsConfig
from agents.credit.step_advantages import step_advantages
from agents.learners.base import RoundLearner, to_cpu
from agents.objectives import PolicyBatch, focus, process_branching, tree_opsd
from agents.objectives.kl import exact_kl, penalised


class ActionLogits(RoundLearner):
    PROVIDES = ("ref_logp", "token_logits", "value_logits", "state")
    """The rule's own probability of each sampled action (the reference policy), a critic's logits
    (agents/learners/critic.py) and state ids (equal observations)."""
    PROVIDES_WHERE = {"oracle": ("oracle_logp", "oracle_mask", "oracle_weight")}
    """The oracle's action at each step, scored (its world's solver)."""

    def __init__(self, cfg: AgentsConfig, actions: int, objective, features, device: torch.device, seed: int = 0):
        """``actions``: the world's action count; ``features``: phi(obs), read by the critic where the objective
        reads one and by the logits under ``per_state``."""
        self.cfg, self.objective, self.device = cfg, objective, device
        self.rng = np.random.default_rng([seed, 0x1EA2])  # action sampling: a stream of its own
        self.acted = []  # (winners, rule action, action, log-prob) per act() since the last learn()
        self.features = features
        shape = (2, features.size, actions) if cfg.logits.per_state else (2, actions)
        self.theta = nn.Parameter(torch.zeros(*shape, device=device))
        self.critic = None
        if critic.wanted(objective):
            self.critic = critic.ActionCritic(features.size, actions).to(device)
        self.updates = 0  # rounds whose action loss ran (the summary's policy_updates)

    @property
    def params(self) -> list:
        return [self.theta] + (list(self.critic.parameters()) if self.critic else [])

    @property
    def rows(self) -> list:
        return [self.theta]

    @property
    def branches(self) -> int:
        return self.cfg.branches

    # --- acting -----------------------------------------------------------------------------
    def act(self, obs: np.ndarray, winners: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The winners' actions sampled around their rules' ``actions``; recorded for the round's update."""
        acting = (winners >= 0) & (actions >= 0)
        with torch.no_grad():
            logits = self.logits(np.maximum(winners, 0), np.maximum(actions, 0), self._phi(obs)).float().cpu().numpy()
        gumbel = -np.log(-np.log(np.clip(self.rng.random(logits.shape), 1e-300, 1.0 - 1e-16)))
        sampled = np.where(acting, np.argmax(logits + gumbel, axis=1), actions)
        logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        self.acted.append((np.where(acting, winners, -1), actions, sampled, logp[np.arange(len(sampled)), np.maximum(sampled, 0)]))
        return sampled

    def logits(self, rows, rule_actions, phi: torch.Tensor | None = None) -> torch.Tensor:
        """[M, A] action logits of agents ``rows`` whose rules say ``rule_actions``; ``phi`` [M, D]: the
        observations' features, read under ``per_state`` (:meth:`_phi`)."""
        rows = torch.as_tensor(rows, device=self.device)
        prior = nn.functional.one_hot(torch.as_tensor(rule_actions, device=self.device), self.theta.shape[-1])
        residual = torch.einsum("md,mda->ma", phi, self.theta[rows]) if self.cfg.logits.per_state else self.theta[rows]
        return residual + self.cfg.logits.rule_logit * prior

    def _phi(self, obs) -> torch.Tensor | None:
        """phi(obs) on the device where the logits read it (``per_state``), else None."""
        return torch.as_tensor(self.features(obs), device=self.device) if self.cfg.logits.per_state else None

    def plan_branches(self, obs, lengths, outcome, rng):
        """focus: the candidate states (each full rollout's inner ones) its gain ranks, a state counted once per
        group however many rollouts reached it; every other objective: tree_opsd's layout, uniform prefixes."""
        N, M = self.cfg.branches, lengths.size
        if self.objective.name == "process_branching":  # where entropy plus future likelihood gain is high
            entropy, gain = process_branching.scores(self, obs, lengths, outcome)
            return process_branching.plan(entropy, gain, lengths, N, self.objective.cfg.beta)
        if self.objective.name != "focus":
            source, prefix = tree_opsd.layout(lengths, rng, N)
            return source[M:], prefix[M:]
        t, s = np.nonzero(np.arange(len(obs))[:, None] < lengths[None, :])  # every state a full rollout acted in
        group = s // self.cfg.group_size(M)
        _, state = np.unique(np.c_[group, obs[t, s]], axis=0, return_inverse=True)
        state = state.reshape(-1)
        visits = np.unique(np.c_[state, s], axis=0)  # (state, rollout) once each
        n = np.bincount(visits[:, 0], minlength=state.max() + 1)
        r = np.asarray(outcome, dtype=np.float64)
        mean = np.bincount(visits[:, 0], r[visits[:, 1]], minlength=n.size) / n
        var = np.bincount(visits[:, 0], (r[visits[:, 1]] - mean[visits[:, 0]]) ** 2, minlength=n.size) / n
        inner = (t >= 1) | (lengths[s] == 1)  # strictly inside a rollout, as tree_opsd's prefixes
        t, s, state = t[inner], s[inner], state[inner]
        with torch.no_grad():
            phi = torch.as_tensor(self.features(obs[t, s]), device=self.device)
            value = torch.sigmoid(self.critic.state(phi).float()).cpu().numpy()
        picks = focus.plan(value - mean[state], var[state], n[state], self.objective.cfg.kappa, M * N, state)
        return s[picks], t[picks]

    # --- births -------------------------------------------------------------------------------
    def resize(self, capacity: int) -> bool:
        if capacity <= self.theta.shape[0]:
            return False
        grow_rows(self.theta, capacity)  # the Parameter object, and so Adam's hold on it, stays
        return True

    @torch.no_grad()
    def born(self, rows: np.ndarray, parents: np.ndarray | None) -> None:
        """theta copied from the parent (zero for a random newcomer)."""
        index = torch.as_tensor(rows, device=self.device)
        self.theta[index] = 0.0 if parents is None else self.theta[torch.as_tensor(parents, device=self.device)]

    def report(self) -> dict:
        return {"policy_updates": self.updates}

    # --- learning -----------------------------------------------------------------------------
    def batch(self, model):
        """Steps where a winner sampled an action -> tensors for :meth:`loss` (A per step)."""
        trace = model.trace
        acted, self.acted = self.acted[-len(trace.path):], []  # this round's act() calls, one per step
        if not acted:
            return None
        rows, rule_actions, actions, logp = (np.stack(column) for column in zip(*acted))  # each [T, B]
        t, b = np.nonzero(rows >= 0)
        if t.size == 0:
            return None
        cfg, B = self.cfg, trace.path.shape[1]
        outcome = trace.reward.sum(axis=0)
        full = np.arange(B) if trace.source is None else trace.source  # each world's full rollout
        groups = full // cfg.group_size(int((full == np.arange(B)).sum()))  # a branch is in its source's group
        if trace.source is not None and self.objective.name == "process_branching":  # initial and branches apart
            advantage = process_branching.advantage(outcome, trace.source, trace.prefix, t, b, groups, self.objective.cfg)
        elif trace.source is not None:  # each step judged by the rollouts below it (agents.branches)
            advantage = tree_advantage(outcome, trace.source, trace.prefix, t, b, groups)
        elif cfg.tasks == "scrl":  # sub-problems differ in difficulty: normalised among each one's rollouts
            advantage = class_advantage(model.world.task_ids, outcome)[b]
        else:
            advantage = outcome_advantage(outcome, cfg.group_size(B), normalize=True)[b]
        if cfg.credit != "grpo":  # a per-step estimator (agents/credit)
            advantage = step_advantages(model, cfg.estimator(), cfg.group_size(B), actions, logp)[t, b]
        d = self.device
        solved = torch.as_tensor(trace.solved, dtype=torch.float32, device=d)
        groups = torch.as_tensor(groups, device=d)  # each world's outcome (success) and group
        rows, rule_actions = torch.as_tensor(rows[t, b], device=d), torch.as_tensor(rule_actions[t, b], device=d)
        obs, needs = trace.obs[t, b], self.objective.needs
        reads = self.critic is not None or self.cfg.logits.per_state
        phi = torch.as_tensor(self.features(obs), device=d) if reads else None
        oracle, fixed = None, {}
        if "branch" in needs and trace.source is not None:  # the steps of restarted rollouts
            fixed["branch"] = torch.as_tensor(trace.source[b] != b, device=d)
        if "state" in needs:  # equal observations: the same state
            fixed["state"] = torch.as_tensor(np.unique(obs, axis=0, return_inverse=True)[1].reshape(-1), device=d)
        if "oracle_logp" in needs:  # the solver's action where the step acted, weighted by its probability before
            oracle = torch.as_tensor(model.world.oracle(obs), device=d)  # the update
            with torch.no_grad():
                before = torch.log_softmax(self.logits(rows, rule_actions, phi).float(), -1)
            fixed.update(oracle_mask=oracle >= 0, oracle_weight=before.gather(1, oracle.clamp(min=0)[:, None])[:, 0].exp())
        self.updates += 1
        return (rows, rule_actions, torch.as_tensor(actions[t, b], device=d),
                torch.as_tensor(logp[t, b], dtype=torch.float32, device=d),
                torch.as_tensor(advantage, dtype=torch.float32, device=d), torch.as_tensor(b, device=d), phi, oracle,
                fixed, solved, groups)

    def loss(self, batch, epoch: int):
        """The configured objective on the round's sampled actions, one token each, plus ``kl`` x the exact KL to
        the rule alone (the reference policy). Signals, where they are asked for: the critic's logits of each
        (state, action) and state, the oracle's action scored (sero), and ``fixed``, those the update does not
        move (state ids, the oracle's mask and weight)."""
        rows, rule_actions, actions, old_logp, advantage, world, phi, oracle, fixed, solved, groups = batch
        logp = torch.log_softmax(self.logits(rows, rule_actions, phi).float(), -1)
        chosen = logp.gather(1, actions[:, None])[:, 0]
        ref = torch.log_softmax(self.cfg.logits.rule_logit * nn.functional.one_hot(rule_actions, logp.shape[1]).float(), -1)
        signals = dict(fixed)
        if self.critic is not None:
            signals.update(token_logits=self.critic(phi, actions), value_logits=self.critic.state(phi))
        if oracle is not None:
            signals["oracle_logp"] = logp.gather(1, oracle.clamp(min=0)[:, None])[:, 0]
        batch = PolicyBatch.one_token(logp=chosen, old_logp=old_logp, advantage=advantage, outcome=solved[world],
                                      group=groups[world], episode=world,
                                      entropy=-(logp.exp() * logp).sum(-1).detach(),
                                      ref_logp=ref.gather(1, actions[:, None])[:, 0], **signals)
        value, stats = self.objective(batch)
        kl = exact_kl(logp, ref)
        return penalised(value, kl, self.cfg.kl), {**stats, "kl": float(kl.detach().mean())}

    # --- checkpoints ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"theta": self.theta.detach().cpu().clone(), "rng": self.rng.bit_generator.state,
                "critic": None if self.critic is None else to_cpu(self.critic.state_dict()), "updates": self.updates}

    def load_state_dict(self, state: dict) -> None:
        with torch.no_grad():
            self.theta.data = state["theta"].to(self.device).clone()
            if self.critic is not None:
                self.critic.load_state_dict(state["critic"])
        self.rng.bit_generator.state = state["rng"]
        self.updates = state["updates"]
        self.acted.clear()
