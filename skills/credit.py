r"""Group-relative skill credit (after GRSE), and the presence-based baseline.

For each question q the team runs G complete rollouts (one *group*). Rollout g
has an outcome reward R_qg, a trace (skills/workflow.py) and, per agent, the
skills it used. Columns k index (agent, skill) pairs; u_qgk is how much agent
a(k) used skill s(k) in rollout g (1/0 by default). Then::

    r_qg   = R_qg - sum_roles lam * failed_role / total_role          workflow penalty
    A_qg   = (r_qg - mean_g r_qg) / (std_g r_qg + eps)                group-relative advantage (population std)
    v_qgk  = u_qgk - mean_g u_qgk                                      behaviour, relative to the group
    w_q    = 1 / (number of groups of the same question)              each distinct question counts once

    p_qga  = [agent a acted in rollout g] - mean_g [...]              participation, relative to the group

    credit = argmin_c  sum_q w_q sum_g (A_qg - sum_k v_qgk c_k - sum_a p_qga d_a)^2  +  ridge * (|c|^2 + |d|^2)
           = the first K entries of (X^T W X + ridge I)^-1 X^T W A,   X = [V P]

The numerator sum_q w_q sum_g A_qg v_qgk is the contrast the method is named
for: how much more agent a(k) used skill s(k) in the higher-advantage
rollouts of a question than in the lower ones (for one 0/1 skill it is the gap
in mean advantage between rollouts with and without it). Solving jointly over
all columns divides out co-occurrence: a skill that rides along with a strong
skill of the same agent is judged by the rollouts where the two differ, so a
skill merely present in successful runs gets no credit, and a harmful one
that co-occurs with success gets a negative one. (On the planted-skill test in
tests/skills/test_credit.py the contrast alone, per question, rates the
harmful skill +0.07; the joint fit rates it -0.68.) The ridge keeps columns without contrast at exactly 0.

The participation columns d_a (one per agent whose acting varies within some group; nuisance terms, not
reported) do the same for the agent itself: where the market routes an agent into some rollouts of a
question and past it in others, its acting at all carries the outcome (an answerer acts only once the
problem's expression is valid), and without d_a every skill it holds would share that success. With them a
skill is judged by what it changed among the rollouts its agent acted in: a harmful line of an agent that
acts only in good rollouts gets a negative credit (tests/skills/test_credit.py,
tests/scenarios/test_wordmath_evolve.py). Agents that act in every rollout add no column, so such teams
get exactly the credit of the skill columns alone.

Groups whose rewards are all equal (std = 0) have A = 0: they stay in the
fit (the skill varied and the reward did not) and are counted as evidence:
``consistent_success_k`` / ``consistent_failure_k`` = distinct questions with
an equal-reward group that used column k, with reward >= / < ``success``.
``support_k`` = distinct questions with a group in which u_qgk varies.

The presence-based baseline (what per-trajectory critics do) is

    presence_k = sum_qg r_qg [u_qgk > 0] / sum_qg [u_qgk > 0]

the mean reward of the rollouts where the skill was present; it credits any
skill that co-occurs with success.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass as config_dataclass

from skills.workflow import Trace
from market.strict import STRICT

EPS = 1e-6
"""The z-score's guard for a group whose outcomes all agree (std 0: every advantage 0): the one epsilon of the
learners, the credit estimators and the objectives."""


@config_dataclass(config=STRICT)
class CreditConfig:
    group_size: int = Field(4, ge=2)
    """G: complete team rollouts per question."""
    penalty: float = Field(0.1, ge=0)
    """lam of the workflow penalty (skills/workflow.py): a role whose every node failed loses lam."""
    eps: float = Field(EPS, gt=0)
    """Added to the group's reward std, so equal-reward groups get advantage 0."""
    ridge: float = Field(1.0, gt=0)
    """Ridge of the joint fit: shrinks columns with little contrast towards 0."""
    success: float = Field(0.5)
    """An equal-reward group at or above this reward is consistent success, below it consistent failure."""


@dataclass
class Rollout:
    """One complete team rollout."""

    reward: float
    """The outcome reward, before the workflow penalty."""
    trace: Trace | None = None
    skills: dict[str, set[str]] | None = None
    """Agent -> skills it used; None: read off the trace (Trace.skills_used)."""

    def used(self) -> dict[str, set[str]]:
        if self.skills is not None:
            return self.skills
        return self.trace.skills_used() if self.trace is not None else {}


@dataclass
class Batch:
    """Q groups of G rollouts as arrays (the input of :func:`group_relative_credit`)."""

    questions: np.ndarray  # [Q] question ids (a question may have several groups)
    rewards: np.ndarray  # [Q, G] outcome reward minus workflow penalty
    usage: np.ndarray  # [Q, G, K] float
    keys: list[tuple[str, str]]  # [K] (agent, skill) of each column
    acted: np.ndarray  # [Q, G, A] 1.0 where agent ``agents[a]`` acted in the rollout
    agents: list[str]  # [A]
    traces: list[list[Trace | None]] = field(default_factory=list)  # [Q][G]


@dataclass
class GroupCredit:
    advantage: np.ndarray  # [Q, G]
    credit: np.ndarray  # [K]
    support: np.ndarray  # [K] distinct questions with contrast
    consistent_success: np.ndarray  # [K] distinct questions
    consistent_failure: np.ndarray  # [K] distinct questions


def batch(groups: Sequence[tuple[Hashable, Sequence[Rollout]]], cfg: CreditConfig) -> Batch:
    """Stack (question, rollouts) groups; every group must hold ``cfg.group_size`` rollouts."""
    for question, rollouts in groups:
        if len(rollouts) != cfg.group_size:
            raise ValueError(f"question {question!r}: {len(rollouts)} rollouts, expected group_size={cfg.group_size}")
    used = [[r.used() for r in rollouts] for _, rollouts in groups]
    keys = sorted({(agent, skill) for group in used for u in group for agent, skills in u.items() for skill in skills})
    column = {key: k for k, key in enumerate(keys)}
    usage = np.zeros((len(groups), cfg.group_size, len(keys)))
    for q, group in enumerate(used):
        for g, u in enumerate(group):
            usage[q, g, [column[(a, s)] for a, skills in u.items() for s in skills]] = 1.0
    rewards = np.array([[r.reward - (r.trace.penalty(cfg.penalty) if r.trace else 0.0) for r in rollouts]
                        for _, rollouts in groups], dtype=np.float64).reshape(len(groups), cfg.group_size)
    agents = sorted({agent for group in used for u in group for agent in u})
    acted = np.array([[[agent in u for agent in agents] for u in group] for group in used],
                     dtype=np.float64).reshape(len(groups), cfg.group_size, len(agents))
    questions = np.empty(len(groups), dtype=object)
    questions[:] = [question for question, _ in groups]
    traces = [[r.trace for r in rollouts] for _, rollouts in groups]
    return Batch(questions, rewards, usage, keys, acted, agents, traces)


def advantages(rewards: np.ndarray, eps: float = EPS) -> np.ndarray:
    """[Q, G] -> (r - group mean) / (group std + eps): the grouped z-score every learner and credit reads."""
    return (rewards - rewards.mean(1, keepdims=True)) / (rewards.std(1, keepdims=True) + eps)


def relative(value, reference, eps: float = EPS, spread=None):
    """``value`` as a z-score against the ``reference`` outcomes, (value - mean) / (std + eps), the std taken over
    ``spread`` where given (a group's every rollout, where the mean is over its full rollouts alone): a state's worth
    or a skill's credit judged by one group's outcomes."""
    reference = np.asarray(reference, dtype=np.float64)
    spread = reference if spread is None else np.asarray(spread, dtype=np.float64)
    return (value - reference.mean()) / (spread.std() + eps)


def grouped_relative(value: np.ndarray, value_group: np.ndarray, reference: np.ndarray, group: np.ndarray,
                     eps: float = EPS) -> np.ndarray:
    """[S] ``value`` as z-scores against the ``reference`` [B] outcomes of its group (``value_group`` [S] and ``group``
    [B] int ids), each group's mean and population std counted at once."""
    count = np.bincount(group)
    mean = np.bincount(group, reference) / np.maximum(count, 1)
    std = np.sqrt(np.bincount(group, (reference - mean[group]) ** 2) / np.maximum(count, 1))
    return (value - mean[value_group]) / (std[value_group] + eps)


def _distinct(inverse: np.ndarray, per_group: np.ndarray) -> np.ndarray:
    """[Q, K] bool per group -> [K] number of distinct questions where any of its groups is True."""
    hit = np.zeros((inverse.max() + 1, per_group.shape[1]), dtype=bool)
    np.logical_or.at(hit, inverse, per_group)
    return hit.sum(0)


def group_relative_credit(rewards: np.ndarray, usage: np.ndarray, questions: np.ndarray,
                          cfg: CreditConfig, acted: np.ndarray | None = None) -> GroupCredit:
    """The formula in the module docstring; rewards [Q, G] already carry the workflow penalty; ``acted``
    [Q, G, A] (``Batch.acted``) adds the participation columns."""
    rewards, usage = np.asarray(rewards, dtype=np.float64), np.asarray(usage, dtype=np.float64)
    A = advantages(rewards, cfg.eps)
    X = usage
    if acted is not None:
        X = np.concatenate([usage, acted[:, :, (np.ptp(acted, axis=1) > 0).any(0)]], axis=2)
    V = X - X.mean(1, keepdims=True)  # [Q, G, K + varying agents]
    _, inverse, counts = np.unique(np.asarray(questions).astype(str), return_inverse=True,
                                      return_counts=True)
    w = 1.0 / counts[inverse]  # [Q]
    M = np.einsum("q,qgk,qgj->kj", w, V, V) + cfg.ridge * np.eye(V.shape[2])
    b = np.einsum("q,qgk,qg->k", w, V, A)
    credit = np.linalg.solve(M, b)[: usage.shape[2]]

    used = usage.max(1) > 0  # [Q, K]
    equal = rewards.std(1) == 0  # [Q]
    success = rewards[:, 0] >= cfg.success
    return GroupCredit(
        advantage=A,
        credit=credit,
        support=_distinct(inverse, np.ptp(usage, axis=1) > 0),
        consistent_success=_distinct(inverse, used & (equal & success)[:, None]),
        consistent_failure=_distinct(inverse, used & (equal & ~success)[:, None]),
    )


def presence_credit(rewards: np.ndarray, usage: np.ndarray) -> np.ndarray:
    """[K] mean reward of the rollouts where each column was present (NaN where never)."""
    present = np.asarray(usage) > 0  # [Q, G, K]
    n = present.sum((0, 1))
    total = np.einsum("qg,qgk->k", np.asarray(rewards, dtype=np.float64), present)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan)
