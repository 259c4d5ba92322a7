r"""``stop_segment``: each commitment is credited by whether it moved the policy's belief toward the gold answer.

A step's reply is an intermediate commitment; two privileged passes score the gold final answer before it and
with it in the prompt (agents/objectives/privileged.py ``belief_gain``). A segment that moves the belief toward
the gold label earns a process reward, one that moves it away loses one, and one that moves it not at all
(a redundant re-check, a repeated offer) pays a small penalty. The process reward joins the outcome
advantage, centred within the step's group so a group's total is the outcome's::

    Delta_m = belief_after_m - belief_before_m
    u_m     = Delta_m - redundancy x [|Delta_m| < tol]
    A'_m    = A_m + coef x (u_m - mean_{k in group} u_k)
    L       = grpo's clipped surrogate on A'
"""

from __future__ import annotations

import dataclasses

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch
from agents.objectives.grpo import Config as Grpo
from agents.objectives.grpo import loss as grpo_loss
from agents.objectives.privileged import belief_gain
from market.strict import STRICT

NEEDS = ("belief_before", "belief_after")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    coef: float = Field(1.0, ge=0)
    """Weight of the segment's process reward beside the outcome advantage."""
    redundancy: float = Field(0.1, ge=0)
    """The penalty of a segment that leaves the belief where it was."""
    tol: float = Field(0.05, ge=0)
    """|Delta| below this (nats per answer token) is no movement."""


def process(batch: PolicyBatch, cfg: Config) -> torch.Tensor:
    """[M] u_m, centred within each group."""
    delta = belief_gain(batch)
    u = delta - cfg.redundancy * (delta.abs() < cfg.tol).to(delta.dtype)
    centred = u.clone()
    for g in torch.unique(batch.group):
        rows = batch.group == g
        centred[rows] = u[rows] - u[rows].mean()
    return centred


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    shaped = batch.advantage + cfg.coef * process(batch, cfg)
    value, stats = grpo_loss(dataclasses.replace(batch, advantage=shaped), cfg.grpo)
    stats.update(belief_gain=float(belief_gain(batch).mean()))
    return value, stats
