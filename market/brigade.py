"""The bucket brigade: who pays whom as a world changes hands, and what each holding earned.

The payment rule is written once, here (phases 4-6 of a step, market/model.py; docs: concepts/bucket-brigade.md):

* :func:`sale`: the step's winner buys the world from its previous owner (``payment =
  "bucket_brigade"``) or from the house (``"final_only"``); with ``conserve = false`` the house
  pays the seller instead of the buyer (money is minted). An owner that outbids everyone keeps
  the world for free.
* :func:`terminal_shares`: a finished world's reward goes to its final owner (``terminal =
  "owner"``, Hayek) or in equal integer shares to the path's unique authors (``"authors"``, EoM;
  the remainder stays with the house).

``MarketModel.run_episodes`` moves the money through the ledger and records every in-episode
payment of the round in :class:`Payments` (rows, world, step). Everything that asks what an agent
earned reads that record instead of working the rule out again: :meth:`Payments.holdings` gives
each *holding* (a run of consecutive actions by one agent in one world; forfeited steps do not
break it) its income and costs, which the learners read through agents/credit/advantages.py (value bids' turn
earnings, the REINFORCE bids' local advantage); the credit estimators' per-step ``profit`` reads the same
record step by step there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from market.ledger import Reason, as_columns
from market.population import HOUSE_ROW


def _one_length(arrays) -> bool:
    """Whether ``arrays`` are already columns (1-D arrays of one length), as the market's payments are."""
    return all(type(a) is np.ndarray and a.ndim == 1 and a.size == arrays[0].size for a in arrays)


def sale(owner: np.ndarray, winner: np.ndarray, won: np.ndarray, payment: str, conserve: bool):
    """[B] (payer, payee, pays): who pays the step's price to whom, and in which worlds money moves."""
    B = winner.size
    payee = owner if payment == "bucket_brigade" else np.full(B, -1)
    payee = np.where(payee >= 0, payee, HOUSE_ROW)
    payer = winner if conserve else np.full(B, HOUSE_ROW)  # not conserved: the house mints it
    pays = won & (payee != winner) & (payer != payee)
    return payer, payee, pays


def terminal_shares(worlds: np.ndarray, reward: np.ndarray, owner: np.ndarray, path: np.ndarray, terminal: str):
    """(worlds' index k [M], recipient rows [M], amounts [M]) of the terminal rewards of ``worlds``
    (``reward`` [B] micro-credits, ``path`` [t+1, B] the winners so far)."""
    if terminal == "owner":
        return np.arange(worlds.size), owner[worlds], reward[worlds]
    steps, k = np.nonzero(path[:, worlds] >= 0)  # every action on the finished worlds' paths
    pairs = np.unique(np.stack([k, path[steps, worlds[k]]], axis=1), axis=0)  # (world, author), both ascending
    world, authors = pairs[:, 0], pairs[:, 1]
    split = reward[worlds] // np.bincount(world, minlength=worlds.size)
    return world, authors, split[world]


@dataclass
class Holdings:
    """Per holding k, in (world, time) order: who held which world from which step, and its money."""

    agent: np.ndarray  # [K] row
    world: np.ndarray  # [K]
    start: np.ndarray  # [K] the step it bought (or took) the world at
    sold: np.ndarray  # [K] micro-credits its successor paid for the world (BID in)
    bought: np.ndarray  # [K] what it paid for the world (BID out; 0 when the house paid)
    fees: np.ndarray  # [K] action fees it paid while holding
    rewards: np.ndarray  # [K] world rewards it received (step rewards; terminal shares at its latest holding)


class Payments:
    """One round's in-episode payments, in the order made: step, world, payer row, payee row, amount, reason."""

    def __init__(self):
        self._parts: list[tuple] = []  # per add(): its arguments as given
        self._columns: tuple[np.ndarray, ...] | None = None

    def add(self, t: int, worlds, src, dst, amount, reason) -> None:
        """Record payments made at step ``t``; the arguments broadcast as the ledger's (``reason`` too). They are
        kept as given, so they must not change afterwards, and brought to columns when read: a round's record
        is read by a learner or a credit estimator, if at all, once, while the checks cost every auction step."""
        self._parts.append((t, worlds, src, dst, amount, reason))
        self._columns = None

    def columns(self) -> tuple[np.ndarray, ...]:
        """(t, world, src, dst, amount, reason), each [M], zero amounts left out (as the ledger leaves them)."""
        if self._columns is None:
            # the market's own parts are already columns of one length: only others are broadcast (~15 us a
            # part, a third of a blocks round's learning when every part went through it)
            parts = [arrays if _one_length(arrays) else as_columns(*map(np.asarray, arrays)) for _, *arrays in self._parts]
            t = np.repeat(np.array([p[0] for p in self._parts], dtype=np.int64), [c[0].size for c in parts])
            columns = [t, *(np.concatenate(c).astype(np.int64, copy=False) for c in zip(*parts))] if parts \
                else [np.zeros(0, np.int64)] * 6
            keep = columns[4] != 0
            self._columns = tuple(c[keep] for c in columns)
        return self._columns

    def holdings(self, path: np.ndarray) -> tuple[Holdings, np.ndarray]:
        """The round's holdings, given its winners ``path`` [T, B] (-1: nobody acted), and for every
        acting step (world-major order) the holding it belongs to ([S] index into the holdings).

        A payment to or from an agent in world b at step t belongs to that agent's holding that
        contains t or, for income arriving later (its successor's price, a terminal share), its
        latest holding before t.
        """
        T, B = path.shape
        world, t = np.nonzero(path.T >= 0)  # acting steps, world by world
        agent = path[t, world]
        start = np.ones(agent.size, dtype=bool)
        start[1:] = (agent[1:] != agent[:-1]) | (world[1:] != world[:-1])
        turn = np.cumsum(start) - 1
        K = int(start.sum())
        held = Holdings(agent[start], world[start], t[start], *(np.zeros(K, dtype=np.int64) for _ in range(4)))
        pt, pw, src, dst, amount, reason = self.columns()
        if K == 0 or pt.size == 0:
            return held, turn
        key = (agent * B + world) * T + t  # (agent, world, step) of every acting step
        by_key = np.argsort(key, kind="stable")

        def owner_turn(rows: np.ndarray) -> np.ndarray:
            """The holding of ``rows`` (in world pw at step pt) each payment belongs to; -1: not an agent's."""
            at = np.searchsorted(key[by_key], (rows * B + pw) * T + pt, side="right") - 1  # latest action <= pt
            step = by_key[np.maximum(at, 0)]
            ok = (at >= 0) & (agent[step] == rows) & (world[step] == pw) & (rows != HOUSE_ROW)
            return np.where(ok, turn[step], -1)

        into, out_of = owner_turn(dst), owner_turn(src)
        bid, fee, rew = reason == Reason.BID, reason == Reason.FEE, reason == Reason.REWARD
        for column, side, kind in ((held.sold, into, bid), (held.bought, out_of, bid), (held.fees, out_of, fee),
                                   (held.rewards, into, rew)):
            sel = kind & (side >= 0)
            np.add.at(column, side[sel], amount[sel])
        return held, turn
