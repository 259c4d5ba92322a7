r"""A MarketModel round -> groups of trajectories (its RoundTrace and payment record).

World b of the round is one trajectory: its acting steps (path[t, b] >= 0), in order, with
the observation each winner acted on, then the world's final observation. Consecutive worlds
form a group (G worlds of the same task: ``group``). Signals filled here:

* ``profit``: what each acting step made on its own, read from the round's payments
  (:func:`agents.credit.advantages.step_profit`);
* ``score`` = the clearing price in credits (the winner's bid: its own score for its action);
* whatever ``world_signals(obs [T+1, F], actions [T], b, steps [T]) -> dict`` returns
  (each world's ``credit_signals``, e.g. scenarios/relay.py; ``b`` is the world's index in the batch, ``steps`` the acting
  steps' indices in the round, for a world that recorded more than its observations).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from agents.credit.advantages import step_profit
from agents.credit.base import Trajectory
from market.money import MICRO


def trajectories(model, actions: np.ndarray | None = None, world_signals: Callable | None = None,
                 final_obs: np.ndarray | None = None, group: int = 1,
                 logp: np.ndarray | None = None) -> list[list[Trajectory]]:
    """The last round of ``model`` as ``B // group`` groups. ``actions`` [T, B] (default: the policy's
    ``act`` replayed, exact for deterministic rule policies); ``logp`` [T, B] optional; ``final_obs``
    [B, F] (default: the world's current observation, right for a call inside ``policy.learn``)."""
    trace = model.trace
    T, B = trace.path.shape
    if actions is None:
        actions = np.stack([model.policy.act(trace.obs[t], trace.path[t]) for t in range(T)]) if T else np.zeros((0, B), int)
    final_obs = model.world.observe() if final_obs is None else final_obs
    profit = step_profit(trace) / MICRO
    out = []
    for b in range(B):
        steps = np.flatnonzero(trace.path[:, b] >= 0)
        rows = trace.path[steps, b]
        obs = np.concatenate([trace.obs[steps, b], np.asarray(final_obs)[b][None]])
        fields = {"outcome": float(trace.solved[b]), "agent": rows.copy(), "action": np.asarray(actions)[steps, b].copy(),
                  "reward": np.asarray(trace.reward)[steps, b].astype(np.float64),
                  "score": np.asarray(trace.price)[steps, b] / MICRO,
                  "profit": profit[steps, b]}
        if logp is not None:
            fields["logp"] = np.asarray(logp)[steps, b].astype(np.float64)
        if world_signals is not None:
            fields.update(world_signals(obs, fields["action"], b, steps))
        out.append(Trajectory(**fields))
    return [out[i: i + group] for i in range(0, B, group)]
