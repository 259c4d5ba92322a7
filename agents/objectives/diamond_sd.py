r"""``diamond_sd``: a failure is taught where it went wrong, and only by what the agents themselves did right there.

Many tasks are order-free sub-goals (fetch three items, prove three lemmas): a state's canonical form is the set of
sub-goals it has achieved (the world's ``subgoals``), so rollouts that took different orders meet in one state graph,
the lattice of sets (a diamond, for two sub-goals). Every node a success passed through can still reach the goal:
those nodes are the success-reachable region. A failed episode's **breakpoint** is its first step whose resulting
node lies outside the region (it did what no success did, and the goal was lost there); a failure that never left
the region (it stalled: refused replies until the horizon) breaks at its first step that took no edge at all (its
node unchanged). Its steps before the breakpoint were on a success path and are not blamed beyond grpo's outcome
advantage. From the breakpoint on, a step at a canonical state (problem, role, sub-goals) where an own verified
success also acted (this round's, or one remembered from earlier rounds: :class:`Memory`, bounded) is a **recovery
step**: the policy, under the step's own prompt, is trained to write the reply that success wrote there (forward
cross-entropy, as distil trains on its teacher's samples; the target is the agents' own verified reply: no teacher,
no privileged prompt)::

    L = grpo's clipped surrogate on A_m
        - beta x mean_{m in R} mean_t log pi(z_{m,t} | x_m)     (R: recovery steps, z_m: the retrieved reply)

A success's reply is remembered only where it moved its episode on (a refused reply teaches nothing). The LoRA learner
(agents/learners/lm_grpo.py) calls :func:`plan` on each round's steps and scores the retrieved replies before the update.
"""

from __future__ import annotations

import collections
from typing import NamedTuple

import numpy as np
import torch
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch, step_mean
from agents.objectives.grpo import Config as Grpo
from agents.objectives.grpo import loss as grpo_loss
from market.strict import STRICT

NEEDS = ("subgoals", "breakpoint", "retrieved_logp", "retrieved_mask")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    beta: float = Field(1.0, ge=0)
    """Weight of the cross-entropy on the replies retrieved for the recovery steps."""
    memory: int = Field(4096, ge=1)
    """Nodes (problem, sub-goals) of own successes the LoRA learner remembers across rounds, the least recently
    seen forgotten first; checkpointed with the learner."""


class Step(NamedTuple):
    """One step of a round, as the state graph sees it (``before``, ``after``: the sub-goals achieved around it)."""

    episode: int
    solved: bool
    problem: str
    role: str
    before: frozenset
    after: frozenset
    reply: str


class Memory:
    """Own verified successes: node (problem, sorted sub-goals) -> {role: the reply a success wrote there that moved it
    on}; every node of a success path is in it (the goal's too, with no reply), so its nodes are the region."""

    def __init__(self, size: int):
        self.size, self.nodes = size, collections.OrderedDict()

    def remember(self, path: list[Step]) -> None:
        for s in path:
            replies = self._node(s.problem, s.before)
            if s.after != s.before:
                replies[s.role] = s.reply
        self._node(path[-1].problem, path[-1].after)

    def _node(self, problem: str, subgoals) -> dict:
        key = (problem, tuple(sorted(subgoals)))
        self.nodes[key] = self.nodes.pop(key, {})
        while len(self.nodes) > self.size:
            self.nodes.popitem(last=False)
        return self.nodes[key]

    def __contains__(self, node) -> bool:
        return (node[0], tuple(sorted(node[1]))) in self.nodes

    def reply(self, s: Step) -> str | None:
        return self.nodes.get((s.problem, tuple(sorted(s.before))), {}).get(s.role)

    def state_dict(self) -> list:
        return [[problem, list(subgoals), dict(replies)] for (problem, subgoals), replies in self.nodes.items()]

    def load_state_dict(self, state: list) -> None:
        self.nodes = collections.OrderedDict(((p, tuple(g)), dict(r)) for p, g, r in state)


def round_steps(task, solved, rows) -> list[Step]:
    """The state graph's view of a round's completions ``rows`` (world, the observation it acted on, role, the text
    the world accepted or None, the reply as written), through the text task's ``canonical`` (scenarios/text/adapter.py);
    ``solved`` [B]: each world's outcome."""
    out = []
    for world, obs, role, accepted, reply in rows:
        problem, before, after = task.canonical(obs, role, accepted)
        out.append(Step(int(world), bool(solved[world]), problem, role, before, after, reply))
    return out


def breakpoint_of(path: list[Step], memory: Memory) -> int | None:
    """The index of a failed episode's breakpoint (module docstring); None where no success is known on its problem
    or it never left the region and never stalled."""
    if (path[0].problem, path[0].before) not in memory:
        return None
    left = [k for k, s in enumerate(path) if (s.problem, s.after) not in memory]
    stalled = [k for k, s in enumerate(path) if s.after == s.before]
    return (left or stalled or [None])[0]


def plan(steps: list[Step], memory: Memory) -> tuple[list[str | None], np.ndarray, np.ndarray]:
    """(each step's retrieved reply, None but at recovery steps; [n] bool breakpoints; [n] canonical state ids) for a
    round's ``steps`` (each episode's in time order); the round's successes are remembered first."""
    episodes: dict[int, list[int]] = {}
    for i, s in enumerate(steps):
        episodes.setdefault(s.episode, []).append(i)
    for rows in episodes.values():
        if steps[rows[0]].solved:
            memory.remember([steps[i] for i in rows])
    retrieved, breaks = [None] * len(steps), np.zeros(len(steps), dtype=bool)
    for rows in episodes.values():
        k = None if steps[rows[0]].solved else breakpoint_of([steps[i] for i in rows], memory)
        if k is not None:
            breaks[rows[k]] = True
            for i in rows[k:]:
                retrieved[i] = memory.reply(steps[i])
    index: dict = {}
    ids = np.array([index.setdefault((s.problem, s.role, tuple(sorted(s.before))), len(index)) for s in steps],
                   dtype=np.int64)
    return retrieved, breaks, ids


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    surrogate, stats = grpo_loss(batch, cfg.grpo)
    recovery = batch.retrieved_mask.any(1)
    nll = -step_mean(batch.retrieved_logp, batch.retrieved_mask)[recovery]
    cross_entropy = nll.mean() if nll.numel() else surrogate.new_zeros(())
    stats.update(breakpoints=float(batch.breakpoint.sum()), recovery_steps=float(recovery.sum()),
                 canonical_states=float(torch.unique(batch.subgoals).numel()),
                 recovery_nll=float(cross_entropy.detach()))
    return surrogate + cfg.beta * cross_entropy, stats
