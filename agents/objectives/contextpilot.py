r"""``contextpilot``: extra branches where the context was edited; a snapshot's value is the mean reward of its
continuations.

In a world whose agents edit the context that later prompts read (longlookup's ``compactor`` writes ``keep: 1, 3``
and only those turns' facts stay; the world's ``context_edit`` signal, a text world's ``edit_roles``), an edit's
worth shows only in what the rollout does after it, and one rollout is one noisy draw of that. With
``agents.branches`` = N (market/branching.py), **where the branches start** (:func:`plan`): each full rollout's N
branches restart from the states right after its context edits, spread over its edits in order (a rollout that
made no edit before its last step restarts from uniform inner states, tree_opsd's layout).

**The advantage** (:func:`advantage`): the state s right after full rollout i's edit at step t has the
continuations i itself and i's branches from s; its value is their mean reward, and the edit is credited with it
against its group's mean outcome::

    V(s)   = mean_{k in C(s)} R_k,         C(s) = {i} + {branches of i with prefix t + 1}
    A_edit = (V(s) - mean_{full rollouts of the group} R) / (std_{every rollout of the group} R + eps)

The baseline is the full rollouts' mean, the value of the problem's start (the group's branches crowd where the
edits were, and would pull the baseline towards the very values it is measured against); the scale is the
spread of all the group's outcomes, as tree_advantage's, positive wherever V differs from the baseline, so the
edit keeps the sign of V(s) - mean. Every other step, a branch's own edit included (no branch restarts from a
branch's states), gets its tree advantage (agents/credit/advantages.py ``tree_advantage``: the mean outcome of the
rollouts below the state it led to, relative to its group). The loss is grpo's clipped surrogate on that advantage.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.advantages import tree_advantage
from agents.objectives.batch import EPS, PolicyBatch
from agents.objectives.grpo import Config as Grpo
from agents.objectives.grpo import loss as grpo_loss
from market.strict import STRICT
from skills.credit import relative

NEEDS = ("branch", "context_edit")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""


def plan(edits: np.ndarray, lengths: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(source, prefix) [M x n] of the branches: ``edits`` [T, M] marks the full rollouts' context edits (``lengths``
    [M] their steps); branch M + i x n + j of rollout i restarts right after its (j mod E)-th edit of the E it made
    before its last step, or, without one, at a uniform inner state (1 .. T_i - 1; 0 for a one-step rollout)."""
    source, prefix = [], []
    for i, T in enumerate(np.asarray(lengths, dtype=np.int64).tolist()):
        after = np.flatnonzero(edits[:T - 1, i]) + 1  # an edit at the last step leaves no state to restart from
        for j in range(n):
            prefix.append(int(after[j % after.size]) if after.size else int(rng.integers(1, T)) if T > 1 else 0)
        source += [i] * n
    return np.asarray(source, dtype=np.int64), np.asarray(prefix, dtype=np.int64)


def value(outcome: np.ndarray, source: np.ndarray, prefix: np.ndarray, i: int, p: int) -> float:
    """V of full rollout i's state before its step p: the mean reward of i and of its branches from there."""
    worlds = np.arange(len(source))
    through = (worlds == i) | ((source == i) & (worlds != i) & (prefix == p))
    return float(np.asarray(outcome, dtype=np.float64)[through].mean())


def advantage(outcome, source, prefix, t, b, group, edit, eps: float = EPS) -> np.ndarray:
    """[S] advantages of the acting steps (t [S], b [S]; ``edit`` [S] bool: the step edited the context) of a branching
    round (``outcome``, ``source``, ``prefix``, ``group`` [B] each, as ``tree_advantage`` takes them): the module
    docstring's formula, a full rollout's edit by :func:`value` of the state after it."""
    r = np.asarray(outcome, dtype=np.float64)
    source, prefix, group, t, b = (np.asarray(x) for x in (source, prefix, group, t, b))
    out = tree_advantage(r, source, prefix, t, b, group)
    full = source == np.arange(r.size)
    for k in np.flatnonzero(np.asarray(edit, dtype=bool) & full[b]).tolist():
        g = group == group[b[k]]
        v = value(r, source, prefix, int(b[k]), int(t[k]) + 1)
        out[k] = relative(v, r[g & full], eps, spread=r[g])
    return out


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    policy, stats = grpo_loss(batch, cfg.grpo)
    edit = batch.context_edit.bool()
    stats.update(edit_steps=float(edit.float().mean()), branch_steps=float(batch.branch.float().mean()),
                 edit_advantage=float(batch.advantage[edit].mean()) if edit.any() else 0.0)
    return policy, stats

