"""Interaction logs and their per-user, time-ordered split into history and held-out targets.

Both data sources (the synthetic world, a MovieLens file) produce one
:class:`Interactions` log; :func:`split` turns it into the :class:`Split` every
model, skill and metric of the scenario reads. Per user, interactions are
ordered by time; the last ``holdout`` are the *test* segment, the ``holdout``
before them the *validation* segment, the rest the *train* segment. Users with
fewer than ``2 * holdout + min_train`` interactions are dropped.

A request happens at the time of its first target: the user comes back and
asks. Items released later do not exist yet for it (:meth:`Split.released`),
so no operator and no baseline can recommend from the future.

Users are then dealt into three disjoint groups: *question* users (the
requests the team's rollouts answer), *validation* users (the gate) and
*test* users (the final report only). Collaborative signals are fitted on the
train segments of all users and never see a target. The request of a question
or validation user has history = its train segment and targets = its
validation segment; a test user's history also holds its validation segment
and its targets are its test segment (leave-last-out, as in the literature).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

QUESTION, VALIDATION, TEST = 0, 1, 2
GROUPS = ("question", "validation", "test")


@dataclass
class Interactions:
    """A raw log: one row per (user, item, time); ids are 0..n-1."""

    user: np.ndarray  # [E] int64
    item: np.ndarray  # [E] int64
    time: np.ndarray  # [E] float64, days
    n_users: int
    n_items: int
    item_genre: np.ndarray  # [I] int64 in 0..G-1
    genres: tuple[str, ...]  # genre names
    item_release: np.ndarray | None = None  # [I] days; None: the item's first interaction

    def release(self) -> np.ndarray:
        if self.item_release is not None:
            return self.item_release
        first = np.full(self.n_items, self.time.max() if self.time.size else 0.0)
        np.minimum.at(first, self.item, self.time)
        return first


@dataclass
class Split:
    n_users: int
    n_items: int
    item_genre: np.ndarray  # [I]
    n_genres: int
    genre_names: tuple[str, ...]
    item_release: np.ndarray  # [I] days
    sponsored: np.ndarray  # [I] bool: the business's promoted items (a fixed random subset)
    train: sp.csr_matrix  # [U, I] 1.0 where the user met the item in its train segment
    hist_ptr: np.ndarray  # [U+1] ragged history, each user's items oldest first
    hist_item: np.ndarray  # [H]
    hist_time: np.ndarray  # [H]
    targets: np.ndarray  # [U, holdout] the held-out items of the user's request
    request_time: np.ndarray  # [U] when the request is made: the time of its first target
    group: np.ndarray  # [U] QUESTION | VALIDATION | TEST
    user_ids: np.ndarray  # [U] the user's id in the Interactions log

    @property
    def now(self) -> np.ndarray:
        """[U] the moment of each user's request."""
        return self.request_time

    def released(self, users: np.ndarray) -> np.ndarray:
        """[B, I] bool: which items exist at each user's request."""
        return self.item_release[None, :] <= self.request_time[users, None]

    def strike(self, scores: np.ndarray, users: np.ndarray) -> np.ndarray:
        """[B, I] scores with each user's history items and the items not yet released at its request at -inf
        (in place): what no recommender may propose."""
        scores[self.history_matrix(users).nonzero()] = -np.inf
        scores[~self.released(users)] = -np.inf
        return scores

    @property
    def history_length(self) -> np.ndarray:
        return np.diff(self.hist_ptr)

    def users(self, group: int) -> np.ndarray:
        return np.flatnonzero(self.group == group)

    def history_matrix(self, users: np.ndarray) -> sp.csr_matrix:
        """[B, I] 1.0 on every history item of each user (the train segment, plus validation for test users)."""
        starts, ends = self.hist_ptr[users], self.hist_ptr[users + 1]
        lengths = ends - starts
        index = _ragged_index(starts, lengths)
        indptr = np.r_[0, np.cumsum(lengths)]
        data = np.ones(index.size, dtype=np.float32)
        m = sp.csr_matrix((data, self.hist_item[index], indptr), shape=(users.size, self.n_items))
        m.sum_duplicates()
        m.data[:] = 1.0
        return m

    def recent(self, users: np.ndarray, n: int, decay: float = 0.0) -> sp.csr_matrix:
        """[B, I] weights on each user's last ``n`` history items: 1 for the newest, times exp(-decay) per step back."""
        ends = self.hist_ptr[users + 1]
        lengths = np.minimum(ends - self.hist_ptr[users], n)
        index = _ragged_index(ends - lengths, lengths)
        back = (np.repeat(ends, lengths) - 1 - index).astype(np.float32)  # 0 for the newest
        indptr = np.r_[0, np.cumsum(lengths)]
        m = sp.csr_matrix((np.exp(-decay * back), self.hist_item[index], indptr), shape=(users.size, self.n_items))
        m.sum_duplicates()
        return m


def _ragged_index(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ranges [starts[i], starts[i] + lengths[i]) as one index array."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths) + np.arange(total) - offsets


def split(log: Interactions, holdout: int, min_train: int, validation_users: int, test_users: int,
          sponsored_share: float, seed: int) -> Split:
    """Time-ordered per-user split and the three user groups (see the module docstring)."""
    if holdout < 1 or min_train < 1:
        raise ValueError("holdout and min_train must be at least 1")
    order = np.lexsort((log.item, log.time, log.user))  # by user, then time (item breaks ties)
    user, item, time = log.user[order], log.item[order], log.time[order]
    counts = np.bincount(user, minlength=log.n_users)
    kept = np.flatnonzero(counts >= 2 * holdout + min_train)
    if kept.size < 3:
        raise ValueError(f"only {kept.size} users have {2 * holdout + min_train} interactions or more")
    new_id = np.full(log.n_users, -1)
    new_id[kept] = np.arange(kept.size)
    keep = new_id[user] >= 0
    user, item, time = new_id[user[keep]], item[keep], time[keep]
    n = kept.size
    counts = counts[kept]
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    from_end = np.repeat(starts + counts, counts) - 1 - np.arange(user.size)  # 0 = the user's last event
    segment = np.where(from_end < holdout, TEST, np.where(from_end < 2 * holdout, VALIDATION, QUESTION))

    rng = np.random.default_rng(seed)
    group = np.full(n, QUESTION)
    dealt = rng.permutation(n)
    n_val = min(validation_users, n // 3)
    n_test = min(test_users, n // 3)
    group[dealt[:n_val]] = VALIDATION
    group[dealt[n_val:n_val + n_test]] = TEST

    train_event = segment == QUESTION
    history = train_event | ((segment == VALIDATION) & (group[user] == TEST))
    target_segment = np.where(group == TEST, TEST, VALIDATION)
    is_target = segment == target_segment[user]
    targets = item[is_target].reshape(n, holdout)  # each kept user has exactly `holdout` of each segment
    request_time = time[is_target].reshape(n, holdout)[:, 0]  # sorted by time: the first target's

    h_counts = np.bincount(user[history], minlength=n)
    train = sp.csr_matrix((np.ones(int(train_event.sum()), dtype=np.float32),
                           (user[train_event], item[train_event])), shape=(n, log.n_items))
    train.sum_duplicates()
    train.data[:] = 1.0
    n_sponsored = max(1, round(sponsored_share * log.n_items))
    sponsored = np.zeros(log.n_items, dtype=bool)
    sponsored[rng.choice(log.n_items, size=n_sponsored, replace=False)] = True
    return Split(
        n_users=n, n_items=log.n_items, item_genre=log.item_genre, n_genres=len(log.genres), genre_names=log.genres,
        item_release=log.release(), sponsored=sponsored, train=train,
        hist_ptr=np.r_[0, np.cumsum(h_counts)], hist_item=item[history], hist_time=time[history],
        targets=targets, request_time=request_time, group=group, user_ids=kept,
    )
