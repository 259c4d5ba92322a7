"""The population as struct-of-arrays.

Every per-agent quantity the engine touches on the hot path is a numpy array
indexed by *row*. Row 0 is the house (account id 0, always alive, never bids).
Rows of dead agents go to a free list and are recycled by later births, so the
arrays grow only when the live population outgrows them (amortised doubling),
never per birth. Account ids (``ids``) are never reused.
"""

from __future__ import annotations

import numpy as np

HOUSE_ROW = 0

# column -> (dtype, fill value of an unused row)
COLUMNS = {
    "ids": (np.int64, -1),  # account id (the Mesa unique_id; the house is 0)
    "alive": (bool, False),
    "wealth": (np.int64, 0),  # micro-credits; changed only by the Ledger
    "bid": (np.int64, 0),  # the agent's own bid parameter (fixed schemes)
    "parent": (np.int64, -1),  # parent's account id
    "born": (np.int64, 0),  # episode of birth
    "tokens": (np.int64, 0),  # LLM tokens the agent's calls used while it traded (charged at market.token_price)
}


class Population:
    def __init__(self, capacity: int = 16):
        capacity = max(int(capacity), 2)
        for name, (dtype, fill) in COLUMNS.items():
            setattr(self, name, np.full(capacity, fill, dtype=dtype))
        self.ids[HOUSE_ROW] = 0
        self.alive[HOUSE_ROW] = True
        self._free = np.arange(capacity - 1, 0, -1)  # a stack: the lowest free row is last, so pops first

    @property
    def capacity(self) -> int:
        return self.ids.size

    @property
    def traders(self) -> np.ndarray:
        """Boolean mask over rows: alive agents, the house excluded."""
        mask = self.alive.copy()
        mask[HOUSE_ROW] = False
        return mask

    @property
    def size(self) -> int:
        return int(np.count_nonzero(self.alive)) - 1  # (a bool sum converts every element: 5x slower)

    def allocate(self, n: int) -> np.ndarray:
        """Rows for ``n`` newborns (not yet alive): recycled rows first, then new ones."""
        while self._free.size < n:
            self._grow()
        rows, self._free = self._free[self._free.size - n :][::-1].copy(), self._free[: self._free.size - n].copy()
        return rows

    def release(self, rows: np.ndarray) -> None:
        """Mark rows dead and return them to the free list (their balance must be zero)."""
        assert not self.wealth[rows].any(), "a row is released only with a zero balance"
        self.alive[rows] = False
        self._free = np.sort(np.concatenate([self._free, rows]))[::-1]

    def _grow(self) -> None:
        old = self.capacity
        for name, (dtype, fill) in COLUMNS.items():
            grown = np.full(2 * old, fill, dtype=dtype)
            grown[:old] = getattr(self, name)
            setattr(self, name, grown)
        self._free = np.concatenate([np.arange(2 * old - 1, old - 1, -1), self._free])

    def state_dict(self) -> dict:
        return {name: getattr(self, name).copy() for name in COLUMNS} | {"free": self._free.tolist()}

    def load_state_dict(self, state: dict) -> None:
        for name, (dtype, fill) in COLUMNS.items():  # a checkpoint older than a column: the column's fill
            setattr(self, name, state[name].copy() if name in state else np.full(state["ids"].size, fill, dtype=dtype))
        self._free = np.array(state["free"], dtype=np.int64)
