"""A round's bookkeeping: what one market step records and pays once the winners have acted.

:class:`Round` holds the round's records ([B] owners, steps taken, rewards earned, which worlds are still in
play; [T, B] the path and the trace's columns). Each step, after the auction and the act, a book

* ``buy``: the sale (market/brigade.py ``sale``): which winners won (a valid action), who pays the price to
  whom;
* ``book``: the step's records and its payments as the ledger's three [B] blocks, in the ledger's order:
  prices, fees, step rewards (a payment that is not made carries 0, which the ledger and the round's record
  leave out); it says whether a world finished (terminal shares to pay) and whether any is still in play.

:class:`Settlement` then moves the step's money through the ledger (a frozen round moves none). Two books,
picked once per round (``MarketModel.run_episodes``): :class:`NumpyBook`, the reference, in numpy
lines over [B] columns; :class:`CompiledBook`, the same results in one compiled pass each
(market/brigade_kernel.py) for a large market, where numpy's per-call cost is most of a step. Markets run both
ways to the same ledger hash and trace (tests/market/test_model.py). A reward that is not finite or beyond
int64 goes to the reference, which raises.
"""

from __future__ import annotations

import numpy as np

from market.brigade import Payments, sale, terminal_shares
from market.kernels import kernel
from market.ledger import Reason
from market.money import rint_micro
from market.population import HOUSE_ROW


class Round:
    """The records of one round of B worlds over at most T steps, written in place step by step."""

    def __init__(self, B: int, T: int, first: int):
        """``first``: the worlds [0, first) play from the start (the rest wait to branch)."""
        self.owner = np.full(B, -1, dtype=np.int64)  # previous winner's row per world
        self.path = np.full((T, B), -1, dtype=np.int64)
        self.active = np.arange(B) < first
        self.steps = np.zeros(B, dtype=np.int64)
        self.earned = np.zeros(B, dtype=np.int64)
        # the trace's [T, B] columns (a list of rows stacked at the end cost more)
        self.grid = {name: np.zeros((T, B), dtype) for name, dtype in
                     (("live", bool), ("winner", np.int64), ("price", np.int64), ("reward", np.float64), ("done", bool))}
        self.seen = None  # [T, B, F] the observations, allocated once the first one shows its shape

    def observed(self, t: int, obs) -> None:
        if self.seen is None:
            self.seen = np.zeros((len(self.path), *np.shape(obs)), np.asarray(obs).dtype)
        self.seen[t], self.grid["live"][t] = obs, self.active


class NumpyBook:
    """The reference bookkeeping, in numpy lines."""

    def __init__(self, B: int, payment: str, conserve: bool, reward_scale: int, fee: int, horizon: int):
        self.payment, self.conserve, self.scale, self.fee, self.horizon = payment, conserve, reward_scale, fee, horizon
        self.house = np.full(B, HOUSE_ROW)

    def buy(self, rnd: Round, winner: np.ndarray, actions: np.ndarray):
        """(won, winner: -1 where it did not win, payer, payee, pays) [B]; a winner's action -1 forfeits."""
        won = (winner >= 0) & (actions >= 0)
        winner = np.where(won, winner, -1)
        return (won, winner, *sale(rnd.owner, winner, won, self.payment, self.conserve))  # from the owner before

    def book(self, rnd: Round, t: int, reward, done, won, winner, price, payer, payee, pays):
        """(src, dst, amount [3B], reward in micro-credits [B], whether a world may have finished (its terminal
        reward to look for), whether any is in play).
        ``done`` is the world's, and-ed in place with the worlds in play."""
        active = rnd.active
        rnd.owner = np.where(won, winner, rnd.owner)
        rnd.path[t] = winner
        rnd.steps += active
        done &= active
        reward = np.where(active, reward, 0.0)
        micro = rint_micro(reward * self.scale)
        rnd.earned += micro
        rnd.grid["reward"][t], rnd.grid["done"][t] = reward, done
        src, dst = np.concatenate((payer, winner, self.house)), np.concatenate((payee, self.house, winner))
        amount = np.concatenate((price * pays, self.fee * won, micro * (won & ~done)))
        active &= ~done & (rnd.steps < self.horizon)  # a branch, started late, still has the horizon's steps only
        return src, dst, amount, micro, bool(done.any()), bool(active.any())


class CompiledBook(NumpyBook):
    """The reference's results in compiled passes (market/brigade_kernel.py)."""

    def __init__(self, B: int, *args):
        super().__init__(B, *args)
        self.kernels = kernel("market.brigade_kernel")
        self.pays, self.payer, self.payee, self.micro = np.empty(B, bool), *(np.empty(B, np.int64) for _ in range(3))

    def buy(self, rnd: Round, winner: np.ndarray, actions: np.ndarray):
        B = winner.size
        won, acted = np.empty(B, bool), np.empty(B, np.int64)
        self.kernels.buy(winner, actions, rnd.owner, self.payment == "bucket_brigade", self.conserve, HOUSE_ROW,
                         won, acted, self.payer, self.payee, self.pays)
        return won, acted, self.payer, self.payee, self.pays

    def book(self, rnd: Round, t: int, reward, done, won, winner, price, payer, payee, pays):
        if getattr(reward, "dtype", None) == np.float64 and getattr(done, "dtype", None) == bool:
            src, dst, amount = np.empty((3, 3 * winner.size), np.int64)  # kept by the round's record: new every step
            flags = self.kernels.book(reward, self.scale, done, rnd.active, won, winner, rnd.owner, price, payer, payee,
                                      pays, self.fee, HOUSE_ROW, self.horizon, rnd.steps, rnd.earned, rnd.path[t],
                                      rnd.grid["reward"][t], rnd.grid["done"][t], self.micro, src, dst, amount)
            if flags >= 0:
                k = self.kernels
                return src, dst, amount, self.micro, bool(flags & k.FINISHED), bool(flags & k.ACTIVE)
        return super().book(rnd, t, reward, done, won, winner, price, payer, payee, pays)


class Settlement:
    """A settled round's money: each step's payments through the ledger and into the round's record
    (``payments``, market/brigade.py), with the terminal reward of each world that finished (its final owner's,
    or its path's authors' shares)."""

    def __init__(self, ledger, B: int, episode_ids: np.ndarray, terminal: str):
        self.ledger, self.terminal, self.episode_ids = ledger, terminal, episode_ids
        self.payments = Payments()
        self.worlds = np.arange(B)
        self.reasons = np.repeat(np.array([Reason.BID, Reason.FEE, Reason.REWARD], dtype=np.int16), B)  # the ledger's dtype
        self.where = np.tile(self.worlds, 3)
        self.episodes = episode_ids[self.where]

    def __call__(self, rnd: Round, t: int, src, dst, amount, micro, done, ended: bool) -> np.ndarray:
        """Pay step ``t``'s book; returns the rows whose balance it may have moved."""
        reason, at, episode = self.reasons, self.where, self.episodes
        finished = self.worlds[done & (micro > 0) & (rnd.owner >= 0)] if ended else self.worlds[:0]
        if finished.size:
            k, rows, amounts = terminal_shares(finished, micro, rnd.owner, rnd.path[: t + 1], self.terminal)
            terminal = [np.full(k.size, HOUSE_ROW), rows, amounts, np.full(k.size, Reason.REWARD, np.int16), finished[k]]
            src, dst, amount, reason, at = (np.concatenate(pair) for pair in zip((src, dst, amount, reason, at), terminal))
            episode = self.episode_ids[at]
        self.ledger.transfer(src, dst, amount, reason, episode, t)
        self.payments.add(t, at, src, dst, amount, reason)
        return np.concatenate((src, dst))
