"""What a round earned, read once: outcome advantages, per-step and per-holding profit, turn earnings.

Every learner and credit estimator that asks "how much did this step, turn or rollout earn?" reads it
here, from the round's record (``model.trace``: its outcomes and its payment record, market/brigade.py):

* :func:`outcome_advantage`: each rollout's outcome relative to its group of G consecutive rollouts;
  normalised, it is GRPO's z-score, ``skills.credit.advantages`` (the one z-score of the code base),
  laid out over a round's [B] worlds; unnormalised, the REINFORCE bid baseline r - mean.
* :func:`class_advantage`: the same z-score among the rollouts that share a task id (scrl's sub-problems,
  whose groups are not consecutive and not of one size).
* :func:`tree_advantage`: a step of a branching round, judged by the rollouts below the state it led to.
* :func:`holding_profit`: what each holding (a run of consecutive actions by one agent in one world)
  made, credited to the step that bought it (the REINFORCE bids' ``local`` advantage).
* :func:`step_profit`: what each acting step made on its own (the credit estimators' ``profit``
  signal): the next acting step's price paid to its winner, less the price and fee it paid, plus the
  reward paid to it at that step. Unlike :func:`holding_profit`, two consecutive steps of one owner
  each get their own step's flows.
* :func:`turn_earnings`: each holding's earnings before what it paid to buy (value bids' target).
"""

from __future__ import annotations

import numpy as np

from market.ledger import Reason
from market.money import MICRO
from skills.credit import EPS, advantages, grouped_relative


def outcome_advantage(outcome: np.ndarray, group: int, normalize: bool) -> np.ndarray:
    """[B] outcomes -> [B] advantages relative to their group of ``group`` consecutive rollouts (the whole round:
    ``group`` = B; agents.AgentsConfig.group_size reads agents.group = 0 so).

    ``normalize``: (r - mean) / (std + eps) (GRPO); otherwise r - mean (the bid baseline).
    Groups whose rollouts all scored the same get zero advantage: nothing to contrast.
    """
    r = np.asarray(outcome, dtype=np.float64)
    g = r.reshape(-1, group)
    return (advantages(g, EPS) if normalize else g - g.mean(axis=1, keepdims=True)).reshape(-1)


def class_advantage(ids, outcome: np.ndarray) -> np.ndarray:
    """[n] outcomes -> the z-score among the rollouts that share an id (hashable task specs; 0 where they agree)."""
    r = np.asarray(outcome, dtype=np.float64)
    index: dict = {}
    cls = np.array([index.setdefault(t, len(index)) for t in ids], dtype=np.int64)
    out = np.zeros_like(r)
    for c in range(len(index)):
        members = cls == c
        out[members] = advantages(r[members][None], EPS)[0]
    return out


def tree_advantage(outcome: np.ndarray, source: np.ndarray, prefix: np.ndarray, t: np.ndarray, b: np.ndarray,
                   group: np.ndarray) -> np.ndarray:
    """[S] advantages of the acting steps (t [S], b [S]) of a round whose worlds branch (``RoundTrace.source``,
    ``RoundTrace.prefix``, [B] each; ``outcome`` [B], ``group`` [B] ids).

    A step is worth the mean outcome of the rollouts below the state it led to: for step t of a full rollout,
    the rollout and those of its branches that kept more than t of its steps (they passed through that
    state); for a branch's own step, the branch alone. Then, as GRPO's, relative to the outcomes of the
    step's group (its full rollouts and their branches): A = (V - mean_g) / (std_g + eps). A shared prefix
    step is thus judged by several rollouts, and where branches of one state part ways each move is judged
    by the rollouts it led to.
    """
    r = np.asarray(outcome, dtype=np.float64)
    own = source[b] != b  # a branch's own step
    below = (source[None, :] == b[:, None]) & (prefix[None, :] > t[:, None]) & ~own[:, None]
    below[np.arange(b.size), b] = True
    value = (below * r).sum(1) / below.sum(1)
    return grouped_relative(value, group[b], r, group, EPS)


def holding_profit(trace) -> np.ndarray:
    """[T, B] micro-credits each step's winner made from that step, read from the round's payments.

    Everything a holding brings (market/brigade.py: the price paid to buy the world, fees, rewards,
    what the next owner pays for it) is credited to the step that bought it; later steps of the
    holding get 0. Summed per agent this is exactly that agent's BID + FEE + REWARD flows in the
    round's ledger (tested).
    """
    held, _ = trace.payments.holdings(trace.path)
    profit = np.zeros(trace.path.shape, dtype=np.int64)
    profit[held.start, held.world] = held.sold + held.rewards - held.bought - held.fees
    return profit


def turn_earnings(trace) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every turn (holding) of the round -> (agent rows, step bought, world, credits earned) [K] each.

    A turn earned the price its successor paid for the world, plus the world's rewards it received,
    minus its action fees (``Holdings``: the round's ledger flows, before what it paid to buy).
    """
    held, _ = trace.payments.holdings(trace.path)
    return held.agent, held.start, held.world, (held.sold + held.rewards - held.fees) / MICRO


def step_profit(trace) -> np.ndarray:
    """[T, B] micro-credits each acting step made on its own (0 where nobody acted)::

        profit_k = BID to i at t_{k+1}  -  (BID + FEE) from i at t_k  +  REWARD to i at t_k

    (i the step's winner, t_{k+1} its world's next acting step; a world's last step has no successor's price)."""
    path = trace.path
    T, B = path.shape
    world, t = np.nonzero(path.T >= 0)  # acting steps, world by world, in time order
    profit = np.zeros(path.shape, dtype=np.int64)
    if t.size == 0:
        return profit
    rows = path[t, world]
    nxt = np.r_[t[1:], -1]
    nxt[np.r_[world[1:] != world[:-1], True]] = -1  # a world's last acting step
    pt, pw, src, dst, amount, reason = trace.payments.columns()
    width = int(max(src.max(initial=0), dst.max(initial=0), path.max(initial=0))) + 1

    def summed(kind: np.ndarray, who: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """[S] the payments of ``kind`` to or from each acting step's winner in its world at ``steps``."""
        keys = (pw[kind] * T + pt[kind]) * width + who[kind]
        uniq, inverse = np.unique(keys, return_inverse=True)
        sums = np.zeros(uniq.size, dtype=np.int64)
        np.add.at(sums, inverse.reshape(-1), amount[kind])
        query = (world * T + np.maximum(steps, 0)) * width + rows
        if uniq.size == 0:
            return np.zeros(query.size, dtype=np.int64)
        at = np.minimum(np.searchsorted(uniq, query), uniq.size - 1)
        return np.where(uniq[at] == query, sums[at], 0)

    bid = reason == Reason.BID
    profit[t, world] = (summed(bid, dst, nxt) * (nxt >= 0) - summed(bid | (reason == Reason.FEE), src, t)
                        + summed(reason == Reason.REWARD, dst, t))
    return profit
