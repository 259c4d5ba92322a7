"""What the learner calls: per-step advantages of a MarketModel round from an estimator.

``step_advantages(model, "draco", group=4, ...)`` (a name: the defaults; or an Estimator with its
settings, as ``AgentsConfig.estimator()`` builds it from ``[agents.credit_settings]``) turns the round
(model.trace with its payment record, the world's ``credit_signals``) into groups of trajectories
(agents/credit/market.py), runs the estimator on each group and scatters the advantages back to [T, B], aligned with
``model.trace.path`` (0 where nobody acted). Call it from ``policy.learn(model)``.

A world provides its signals through ``credit_signals(obs [T+1, F], actions [T], b, steps) -> dict``
(its ``credit_signals``, e.g. scenarios/relay.py) and names them in its scenario's ``SPEC.credit_signals``. A learning
market round adds ``outcome``, ``profit`` (the round's payments), ``score`` (the clearing price) and, when
actions are sampled, ``logp``: :func:`provides` is that whole set.
"""

from __future__ import annotations

import numpy as np

from agents.credit import make
from agents.credit.market import trajectories

ROUND = ("outcome", "profit", "score")


def provides(world_signals, sampled_actions: bool = True) -> set[str]:
    """The signals a learning round carries in a world that provides ``world_signals``."""
    return set(world_signals) | set(ROUND) | ({"logp"} if sampled_actions else set())


def step_advantages(model, estimator, group: int, actions: np.ndarray | None = None,
                    logp: np.ndarray | None = None) -> np.ndarray:
    """[T, B] advantages of the round ``model`` just ran (``estimator``: a name or an Estimator), its worlds in
    groups of ``group`` consecutive ones (agents.AgentsConfig.group_size)."""
    est = make(estimator) if isinstance(estimator, str) else estimator
    path = model.trace.path
    T, B = path.shape
    groups = trajectories(model, actions=actions,
                          world_signals=model.world.credit_signals, group=group, logp=logp)
    out = np.zeros((T, B))
    b = 0
    for g in groups:
        for t, adv in zip(g, est(g).steps):
            out[np.flatnonzero(path[:, b] >= 0), b] = adv
            b += 1
    return out
