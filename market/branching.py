"""The branches of a training round: where worlds restart from states other rollouts reached.

A policy that branches (``policy.branches`` = N, agents.branches) has its round of B worlds play the first
M = B / (1 + N) in full, the others waiting. The planner snapshots the full rollouts' states before each step;
once they are all over, the policy picks a state of each branch's source rollout (``policy.plan_branches``),
the world restores it there, and the branches play on from it, in lockstep, their money moving as any
world's. The trace then says each world's source and how many of its steps it took over (``source``,
``prefix``), which the learner reads (agents/credit/advantages.py ``tree_advantage``).
"""

from __future__ import annotations

import numpy as np


class Branches:
    def __init__(self, n: int, B: int):
        """``n`` branches per full rollout (0: none) in a round of ``B`` worlds."""
        self.n, self.full = n, B // (1 + n)
        self.snapshots: list = []  # the full rollouts' states before each step, until they branch
        self.tree: tuple[np.ndarray, np.ndarray] | None = None  # (source, prefix) once branched

    def horizon(self, horizon: int) -> int:
        """Steps the round may take: a branch may start at the horizon."""
        return horizon * (2 if self.n else 1)

    def before_step(self, world) -> None:
        if self.n and self.tree is None:
            self.snapshots.append(world.snapshot())

    def after_step(self, model, world, rnd, t: int) -> bool:
        """Whether the branches started now (their worlds then play): once every full rollout is over."""
        if not self.n or self.tree is not None or rnd.active[: self.full].any():
            return False
        self.tree = self.fork(model, world, rnd, t)
        rnd.active[self.full:] = True
        return True

    def trace_fields(self) -> dict:
        return dict(zip(("source", "prefix"), self.tree or ()))

    def fork(self, model, world, rnd, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Start the branches, worlds M.., from the states of the full rollouts the policy picks. A branch takes
        over the world as its source held it then: its next winner pays the owner of that moment (bucket
        brigade), and the steps already taken count against its horizon. Its own steps, payments and trace
        columns start now; what its source did before was paid in the source's world. Returns (source [B],
        prefix [B]) for the trace."""
        M, path, steps, owner = self.full, rnd.path, rnd.steps, rnd.owner
        B, T = path.shape[1], t + 1
        outcome = np.asarray(world.solved[:M], dtype=np.float64)
        source, prefix = model.policy.plan_branches(rnd.seen[:T, :M], steps[:M].copy(), outcome, model.rng)
        source, prefix = np.asarray(source, dtype=np.int64), np.asarray(prefix, dtype=np.int64)
        if source.shape != (B - M,) or prefix.shape != source.shape or ((source < 0) | (source >= M)).any() \
                or ((prefix < 0) | (prefix >= np.maximum(steps[source], 1))).any():
            raise ValueError(f"plan_branches: {B - M} branches of {M} rollouts need a source and a prefix below "
                             f"its length each; got sources {source.tolist()}, prefixes {prefix.tolist()}")
        branch = np.arange(M, B)
        for p in np.unique(prefix):
            world.restore(self.snapshots[p], source[prefix == p], branch[prefix == p])
        before = (path[:T, source] >= 0) & (np.arange(T)[:, None] < prefix)  # the source's actions in its prefix
        last = np.where(before, np.arange(T)[:, None], -1).max(axis=0, initial=-1)
        owner[branch] = np.where(last >= 0, path[np.maximum(last, 0), source], -1)
        steps[branch] = prefix
        return np.r_[np.arange(M), source], np.r_[np.zeros(M, dtype=np.int64), prefix]
