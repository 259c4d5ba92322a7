"""What Blocks World tells the credit estimators (agents/credit): signals from a trajectory's observations.

Observations are the world's features, not its full state: state = the feature vector, progress =
prefix / n (the ``progress`` feature / 10), conditions = {deciles of the goal already correct},
labels from progress, role = the move, skill = the move's name. With :class:`BlocksRecorder` as the
world (it keeps the full stacks of every step) also the solver's value and the meter: m(s) = the
moves the hand-written solver (``SOLUTION``) needs from s to finish, computed exactly by running it
(:func:`solution_moves`); solver = -m(s) (cast), meter = m(s) (delta_ttg's target).
"""

from __future__ import annotations

import numpy as np

from agents.credit.triage import labels_from_progress
from scenarios.blocks.config import ACTIONS, Config
from scenarios.blocks.world import BlocksWorld, Instance

SIGNALS = ("outcome", "state", "progress", "conditions", "labels", "role", "skill")
RECORDED_SIGNALS = (*SIGNALS, "solver", "meter")


def credit_signals(features: tuple[str, ...], actions: tuple[str, ...] = ACTIONS):
    """``signals(obs [T+1, F], actions [T]) -> dict`` of Trajectory fields, for worlds observing ``features``."""
    column = {f: i for i, f in enumerate(features)}
    if "progress" not in column:
        raise ValueError("blocks credit signals need the 'progress' feature among blocks.features")

    def signals(obs: np.ndarray, act: np.ndarray, b=None, steps=None) -> dict:
        obs = np.asarray(obs)
        p = obs[:, column["progress"]] / 10.0
        names = [actions[a] if 0 <= a < len(actions) else "invalid" for a in np.asarray(act).tolist()]
        return {"state": [tuple(row) for row in obs.tolist()], "progress": p,
                "conditions": [frozenset(range(round(10 * x))) for x in p],
                "labels": labels_from_progress(p, [tuple(row) for row in obs.tolist()]), "role": names, "skill": names}

    return signals


def solution_moves(stack: np.ndarray, height: np.ndarray, horizon_factor: int = 6) -> np.ndarray:
    """[M] moves ``SOLUTION`` takes to finish from each state (``stack`` [M, 4, H], ``height`` [M, 4],
    stack 0 the goal), by running it; a state it does not finish within horizon_factor x n moves counts that many."""
    M = len(stack)
    if M == 0:
        return np.zeros(0)
    world = BlocksWorld(Config(horizon_factor=horizon_factor, curriculum=False))
    world.load([Instance(tuple(st[0, : h[0]].tolist()), tuple(tuple(st[k, : h[k]].tolist()) for k in (1, 2, 3)))
                for st, h in zip(np.asarray(stack), np.asarray(height))])
    moves, finished = np.zeros(M), world._complete()
    for _ in range(world.horizon):
        if finished.all():
            break
        action = world.oracle(world.observe())  # SOLUTION's move
        moves += ~finished
        world.step(action, (action >= 0) & ~finished)
        finished |= world._complete()
    return np.where(finished, moves, horizon_factor * world.n)


class BlocksRecorder(BlocksWorld):
    """The blocks world, keeping the full stacks of every step of the round (for solver values)."""

    def reset(self, batch, rng):
        super().reset(batch, rng)
        self.history = [(self.stack.copy(), self.height.copy())]

    def step(self, actions, acting):
        out = super().step(actions, acting)
        self.history.append((self.stack.copy(), self.height.copy()))
        return out

    def credit_signals(self, obs, actions, b, steps):
        out = credit_signals(tuple(self.cfg.features))(obs, actions)
        index = [*np.asarray(steps).tolist(), len(self.history) - 1]  # the states acted on, then the last
        m = solution_moves(np.stack([self.history[i][0][b] for i in index]),
                           np.stack([self.history[i][1][b] for i in index]), self.cfg.horizon_factor)
        return out | {"solver": -m, "meter": m}
