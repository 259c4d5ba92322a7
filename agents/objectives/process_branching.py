r"""``process_branching``: branch where the decision is uncertain and consequential; initial and branch rollouts
normalised apart; the decision at a branch state credited against its alternatives, clipped at Omega.

Where a world restarts from a state another rollout reached (``agents.branches`` = N, market/branching.py), a round
plays M full rollouts, then N branches of each. **Where they branch** (:func:`plan`): at each inner state p of full
rollout i, the policy's entropy there (how uncertain the decision is) plus beta times the future likelihood gain of
the decision taken (how far it moved the critic's probability of success; the last step's next value is the
outcome itself)::

    score_{i,p} = H(pi(. | s_p)) + beta |V(s_{p+1}) - V(s_p)|,   V = sigmoid(critic),   p in 1 .. T_i - 1

and its N branches start from its N highest-scoring states (repeating them when it has fewer).

**The advantage** (:func:`advantage`, in place of agents/credit/advantages.py ``tree_advantage``): initial and branch
rollouts are normalised apart, a full rollout among its group's full rollouts, a branch among the rollouts through
its branch state (its source and the source's branches from the same state), so that branches, which share a
prefix and so a part of their outcome, do not shrink the initial rollouts' spread. The decision at a branch state,
the source's and each branch's first own step, is credited besides with its outcome against the mean of the
rollouts through that state, clipped at Omega::

    A_step = (R - mean_set) / (std_set + eps) + clip(F, -Omega, Omega)
    F      = R - mean_{rollouts through the branch state}    at a branch decision, else 0

The loss is grpo's clipped surrogate on that advantage plus critic_coef x the critic's BCE on the outcome (the
critic's value of each state is what :func:`plan` reads).
"""

from __future__ import annotations

import numpy as np
import torch
from pydantic import Field
from pydantic.dataclasses import dataclass
from torch.nn import functional as F

from agents.objectives.batch import EPS, PolicyBatch
from agents.objectives.grpo import Config as Grpo
from agents.objectives.grpo import loss as grpo_loss
from market.strict import STRICT
from skills.credit import relative

NEEDS = ("value_logits", "branch")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    omega: float = Field(1.0, gt=0)
    """Omega: the future-aware term of a branch decision is clipped to [-omega, omega]."""
    beta: float = Field(1.0, ge=0)
    """Weight of the future likelihood gain beside the entropy in the branch score."""
    critic_coef: float = Field(0.5, ge=0)
    """Weight of the critic's BCE in the summed loss."""


def plan(entropy: np.ndarray, gain: np.ndarray, lengths: np.ndarray, n: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """(source, prefix) [M x n] of the branches: rollout i's n best-scoring inner states (entropy [T, M] and gain
    [T, M] per time and full rollout; ``lengths`` [M] their steps), branch M + i x n + j from its j-th best."""
    source, prefix = [], []
    for i, T in enumerate(np.asarray(lengths, dtype=np.int64).tolist()):
        inner = np.arange(1, T) if T > 1 else np.zeros(1, dtype=np.int64)  # a one-step rollout restarts at 0
        score = entropy[inner, i] + beta * np.abs(gain[inner, i])
        ranked = inner[np.argsort(-score, kind="stable")]
        source += [i] * n
        prefix += [int(ranked[j % ranked.size]) for j in range(n)]
    return np.asarray(source, dtype=np.int64), np.asarray(prefix, dtype=np.int64)


@torch.no_grad()
def scores(learner, obs: np.ndarray, lengths: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """entropy [T, M] and gain [T, M] of the full rollouts' steps so far, from the action-logit learner
    (agents/learners/action_logits.py): its logits at each (winner, rule action) it recorded and its critic's state values."""
    T, M = obs.shape[:2]
    rows, rule = (np.stack(column)[:, :M] for column in list(zip(*learner.acted[-T:]))[:2])  # [T, M] each
    logp = torch.log_softmax(learner.logits(np.maximum(rows, 0), np.maximum(rule, 0)).float(), -1)  # [T, M, A]
    entropy = np.where(rows >= 0, -(logp.exp() * logp).sum(-1).cpu().numpy(), 0.0)
    phi = torch.as_tensor(learner.critic_features(obs.reshape(T * M, *obs.shape[2:])), device=learner.device)
    value = torch.sigmoid(learner.critic.state(phi).float()).cpu().numpy().reshape(T, M)
    last = np.arange(T)[:, None] >= np.asarray(lengths)[None, :] - 1
    after = np.where(last, np.asarray(outcome, dtype=np.float64)[None, :], np.r_[value[1:], value[-1:]])
    return entropy, after - value


def advantage(outcome, source, prefix, t, b, group, cfg: Config, eps: float = EPS) -> np.ndarray:
    """[S] advantages of the acting steps (t [S], b [S]) of a branching round (``source``, ``prefix``, ``group``,
    ``outcome`` [B] each, as agents/credit/advantages.py ``tree_advantage`` takes them): the module docstring's formula."""
    r = np.asarray(outcome, dtype=np.float64)
    source, prefix, group = (np.asarray(x) for x in (source, prefix, group))
    worlds = np.arange(r.size)
    full = source == worlds

    def through(i, p):  # the rollouts through full rollout i's state p: i and its branches from p
        return (worlds == i) | (~full & (source == i) & (prefix == p))

    sets = [full & (group == group[w]) if full[w] else through(source[w], prefix[w]) for w in worlds]
    mean = np.array([r[s].mean() for s in sets])
    apart = np.array([relative(r[w], r[s], eps) for w, s in enumerate(sets)])
    t, b = np.asarray(t), np.asarray(b)
    first = {w: t[b == w].min() for w in np.unique(b)}
    future = np.zeros(t.size)
    for k, (tk, w) in enumerate(zip(t.tolist(), b.tolist())):
        if full[w] and (~full & (source == w) & (prefix == tk)).any():  # the source's decision at a branch state
            future[k] = r[w] - r[through(w, tk)].mean()
        elif not full[w] and tk == first[w]:  # a branch's first own decision
            future[k] = r[w] - mean[w]
    return apart[b] + np.clip(future, -cfg.omega, cfg.omega)


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    first = batch.mask.to(torch.int8).argmax(1, keepdim=True)  # each step's first real token: its state's value
    c = batch.value_logits.gather(1, first)[:, 0]
    policy, stats = grpo_loss(batch, cfg.grpo)
    critic = F.binary_cross_entropy_with_logits(c, batch.outcome.to(c.dtype))
    branch = batch.branch.bool()
    stats.update(critic_loss=float(critic.detach()), branch_steps=float(branch.float().mean()),
                 branch_advantage=float(batch.advantage[branch].mean()) if branch.any() else 0.0,
                 initial_advantage=float(batch.advantage[~branch].mean()) if (~branch).any() else 0.0)
    return policy + cfg.critic_coef * critic, stats
