"""The money: an append-only ledger of integer transfers.

Every movement of money is one row ``(src, dst, amount, reason, episode,
step)`` between *account ids* (the house is account 0; traders have their Mesa
``unique_id``). :meth:`Ledger.transfer` is the only code that changes a
balance, so the invariants hold by construction and are checked cheaply on
each call:

* amounts are integers and never negative;
* no balance leaves int64 (``|balance| <= MAX_MICRO``, so negating one is exact): the transfer
  that would take one past is refused whole, so a sum never wraps (a wrapped house would still "conserve");
* neither side of a transfer is a dead account;
* the sum over all accounts is zero (money is only moved, never made);
* replaying the log from zero reproduces every balance (:func:`replay`).

``ledger_hash`` is a sha256 over the ordered log (little-endian packed rows),
so two runs with the same seed and config give the same hash, bit for bit.
A large flush is folded into it on a worker thread (:class:`Digest`), so a big
economy's next step runs while its last one is hashed.
"""

from __future__ import annotations

import hashlib
import os
import queue
import sys
import threading
from enum import IntEnum

import numpy as np

from market.kernels import kernel
from market.money import MAX_MICRO

TRANSFER_DTYPE = np.dtype(
    [("src", "<i8"), ("dst", "<i8"), ("amount", "<i8"), ("reason", "<i2"), ("episode", "<i8"), ("step", "<i4")]
)
HOUSE_ID = 0
_ROW_BYTES = np.dtype((np.void, TRANSFER_DTYPE.itemsize))
"""A log row as opaque bytes: numpy concatenates these as whole rows, where it copies structured rows field by
field."""


class Reason(IntEnum):
    BID = 1  # winner pays its price to the previous owner (or the house)
    REWARD = 2  # the world's reward, paid by the house
    RENT = 3  # periodic rent, paid to the house
    FUND = 4  # the house funds a newborn
    WRITE_OFF = 5  # the house absorbs a bankrupt agent's debt before removal
    FEE = 6  # the winner's per-action tax, paid to the house
    GIFT = 7  # one agent gives to another (the Boltzmann wealth model)
    COMPUTE = 8  # an agent pays the house for the LLM tokens its calls used (market.token_price)


_SAFE = 2.0**62  # below this, n amounts and the largest |balance| cannot together reach MAX_MICRO


class Digest:
    """sha256 of the ordered log, whose large chunks are hashed on a worker thread.

    Hashing is the one pass over every byte of the log, a sizeable share of a large economy's step. hashlib
    releases the GIL on a chunk this large, so one worker thread per process (FIFO: a ledger's chunks fold in
    the order they came) hashes while the economy runs on.

    Chunks of ``BACKGROUND_BYTES`` or more are copied into one of two ``HANDOFF_BYTES`` buffers, and a full
    buffer goes to the thread while the other fills; one larger than ``COPY_BYTES`` goes as it is. Why copies:
    handing each chunk over as it came pays a thread hand-off per chunk (wake-ups, GIL races), and holding the
    chunks themselves for a batch keeps the ledger's freed rows from being reused (fresh pages every step),
    while a copy into a reused buffer is cheap. Small chunks are hashed in place unless larger ones are still
    waiting. A buffer is filled again once the thread has folded it (the economy waits for that only if it
    filled the other one first). ``hexdigest`` hands over the rest and waits.
    """

    BACKGROUND_BYTES = 1 << 16
    HANDOFF_BYTES = 1 << 22
    """A buffer (4 MB): many steps of a large economy's log rows."""
    COPY_BYTES = 1 << 20
    """Larger chunks go to the thread as they are: a copy costs more than fresh pages save for them."""

    def __init__(self, data: bytes | np.ndarray = b""):
        self._sha = hashlib.sha256(data)
        self._queued = 0  # batches handed to the thread (written here), and how many it has folded (by it)
        self._folded = 0
        self._buffers: list[np.ndarray] = []  # two, made with the first large chunk; the first is filling
        self._tickets: list[int] = []  # per buffer: the batch number it was last handed over as
        self._filled = 0  # bytes of the first written
        self._error: BaseException | None = None

    def update(self, chunk: np.ndarray) -> None:
        """Fold ``chunk`` (C-contiguous, as the ledger's rows are) in; it must not change afterwards when it is
        larger than ``COPY_BYTES`` (the ledger hands out read-only rows)."""
        if chunk.nbytes < self.BACKGROUND_BYTES and not self._filled and self._folded == self._queued:
            self._sha.update(chunk)
            return
        if self._filled + chunk.nbytes > self.HANDOFF_BYTES or chunk.nbytes > self.COPY_BYTES:
            self._hand_off()
        if chunk.nbytes > self.COPY_BYTES:
            self._queue(chunk)
            return
        if not self._buffers:
            self._buffers, self._tickets = [np.empty(self.HANDOFF_BYTES, np.uint8) for _ in range(2)], [0, 0]
        if not self._filled and self._folded < self._tickets[0]:  # the thread may still be reading this buffer
            self._drain()
        end = self._filled + chunk.nbytes
        self._buffers[0][self._filled:end] = np.frombuffer(chunk, np.uint8)
        self._filled = end

    def _hand_off(self) -> None:
        """The filled part of the first buffer to the thread; the other buffer fills next."""
        if self._filled:
            self._queue(self._buffers[0][: self._filled])
            self._tickets[0] = self._queued  # free again once the thread has folded this many batches
            self._buffers.reverse()
            self._tickets.reverse()
            self._filled = 0

    def _queue(self, data: np.ndarray) -> None:
        self._queued += 1
        _hashing_queue().put((self, data))

    def _drain(self) -> None:
        if self._folded != self._queued:
            done = threading.Event()
            _hashing_queue().put((None, done))  # FIFO: set once every batch queued before it is folded
            done.wait()

    def _fold(self, data: np.ndarray) -> None:
        """The thread's part: fold one batch (an error is kept for ``hexdigest`` to raise)."""
        try:
            self._sha.update(data)
        except BaseException as error:  # noqa: BLE001 (it surfaces in hexdigest, not in a dead thread)
            self._error = error
        self._folded += 1

    def hexdigest(self) -> str:
        self._hand_off()
        self._drain()
        if self._error is not None:
            raise self._error
        return self._sha.hexdigest()


_HASHING: tuple[int, queue.SimpleQueue] | None = None


def _hashing_queue() -> queue.SimpleQueue:
    """The queue of the process's hashing thread, started on first use and again after a fork (a child
    inherits no threads)."""
    global _HASHING
    if _HASHING is None or _HASHING[0] != os.getpid():
        jobs = queue.SimpleQueue()
        threading.Thread(target=_hash_forever, args=(jobs,), name="ledger-sha256", daemon=True).start()
        _HASHING = os.getpid(), jobs
    return _HASHING[1]


def _hash_forever(jobs: queue.SimpleQueue) -> None:
    while True:
        digest, item = jobs.get()
        if digest is None:
            item.set()
        else:
            digest._fold(item)
        del digest, item  # not held while it waits: a chunk it was handed is freed as soon as the ledger drops it


class LedgerError(RuntimeError):
    """A transfer broke an invariant (negative amount, dead account, a balance past int64)."""


class Ledger:
    """Balances by row plus the append-only log of transfers by account id.

    ``balance``, ``ids`` and ``alive`` are the population's arrays (shared, not
    copied): rows are recycled when agents die, account ids never are.
    """

    compiled_rows: int | None = 1024
    """A transfer of this many rows or more, or any transfer in a population of this many rows or more, takes
    the compiled path (market/ledger_kernel.py, numba: imported on first use, so a small economy that never
    moves this much at once never loads it). So does every transfer once numba is loaded anyway (a kernel of
    the world's or of the rules needed it, as in blocks): there its one call beats numpy's dozen on any size.
    None: never (the numpy path, which a test compares it with)."""

    def __init__(self, population):
        self.pop = population
        self._pending: list = []  # per transfer() call: its columns (or scalars) and step, or its log rows (compiled)
        self._digest = Digest()
        self.count = 0

    def transfer(self, src, dst, amount, reason, episode, step: int) -> None:
        """Move ``amount[i]`` from row ``src[i]`` to row ``dst[i]``, all at once.

        Any of ``src``, ``dst``, ``amount``, ``reason``, ``episode`` may be a scalar (e.g. the
        house row) and broadcasts against the others, so one call can carry a whole step's
        payments of several kinds; zero amounts are dropped (they move nothing and would only
        bloat the log). A scalar ``amount``, ``reason`` or ``episode`` stays one until
        :meth:`pending` writes the rows (broadcasting it here costs more than the call's checks).
        """
        if not _are_columns(src, dst, amount, reason, episode):  # (the market's own calls are, and skip this)
            src, dst, amount, reason, episode = _to_columns(src, dst, amount, reason, episode)
        if src.size == 0:
            return
        if self._compiled(max(src.size, self.pop.capacity)) and self._move_compiled(
                src, dst, amount, reason, episode, step):
            return
        if amount.ndim == 0:
            if amount == 0:
                return
        else:
            keep = amount != 0
            if not keep.all():
                src, dst = src[keep], dst[keep]
                amount, reason, episode = (a[keep] if a.ndim else a for a in (amount, reason, episode))
            if src.size == 0:
                return
        if amount.min() < 0:
            raise LedgerError(f"negative transfer amount {amount.min()}")
        rows = np.concatenate((src, dst))
        if rows.min() < 0:
            raise LedgerError("transfer names row -1: no such account")
        alive, wealth = self.pop.alive, self.pop.wealth
        if not alive[rows].all():
            raise LedgerError("transfer touches a dead account")
        # int64 cannot overflow when n amounts and the largest touched |balance| stay below 2^62 (every call of
        # an ordinary run); otherwise each touched balance is computed exactly in Python ints first
        if float(amount.max()) * src.size + float(np.abs(wealth[rows]).max()) >= _SAFE:
            self._check_exact(src, dst, np.broadcast_to(amount, src.shape))
        np.subtract.at(wealth, src, amount)  # .at: a row may appear several times
        np.add.at(wealth, dst, amount)
        ids = self.pop.ids
        self._pending.append((ids[src], ids[dst], amount, reason, episode, step))
        self.count += src.size

    def _compiled(self, rows: int) -> bool:
        return self.compiled_rows is not None and (rows >= self.compiled_rows or "numba" in sys.modules)

    def _move_compiled(self, src, dst, amount, reason, episode, step: int) -> bool:
        """The same transfer in one compiled call that also drops zero amounts and writes the log rows; False:
        it moved nothing and the numpy path decides (an error to raise, or balances near int64)."""
        rows = np.empty(src.size, dtype=TRANSFER_DTYPE)
        pop = self.pop
        if not (amount.ndim and reason.ndim and episode.ndim):  # the kernel reads a scalar as a 1-row column
            amount, reason, episode = amount.reshape(-1), reason.reshape(-1), episode.reshape(-1)
        written = kernel("market.ledger_kernel").move(pop.wealth, pop.alive, pop.ids, src, dst, amount, reason,
                                                      episode, step, _SAFE, rows)
        if written < 0:
            return False
        if written:
            self._pending.append(rows if written == rows.size else rows[:written])
            self.count += written
        return True

    def _check_exact(self, src, dst, amount) -> None:
        """Refuse, before anything moves, a transfer after which some balance would be past MAX_MICRO."""
        balance = {}
        for s, d, a in zip(src.tolist(), dst.tolist(), amount.tolist()):
            balance[s] = balance.get(s, int(self.pop.wealth[s])) - a
            balance[d] = balance.get(d, int(self.pop.wealth[d])) + a
        for row, value in balance.items():
            if abs(value) > MAX_MICRO:
                raise LedgerError(f"transfer would take account {int(self.pop.ids[row])}'s balance to {value} "
                                  f"micro-credits, past int64 (|balance| <= {MAX_MICRO})")

    def pending(self) -> np.ndarray:
        """The transfers since the last flush, in order, without flushing (a learner reads its round's); read-only."""
        rows = self._rows()
        rows = rows.view()
        rows.flags.writeable = False  # it may be the compiled path's own rows, which flush will hash
        return rows

    def _rows(self) -> np.ndarray:
        """Pack the pending calls: runs of column calls in one go each, compiled calls' rows as they are."""
        chunks, run = [], []
        for call in self._pending:
            if isinstance(call, np.ndarray):
                chunks += [pack(run), call] if run else [call]
                run = []
            else:
                run.append(call)
        if run or not chunks:
            chunks.append(pack(run))
        if len(chunks) == 1:
            return chunks[0]
        return np.concatenate([c.view(_ROW_BYTES) for c in chunks]).view(TRANSFER_DTYPE)

    def flush(self) -> np.ndarray:
        """Return the transfers since the last flush (in order, read-only) and fold them into the hash."""
        rows = self._rows()
        self._pending.clear()
        rows.flags.writeable = False  # the hash may still be reading them
        self._digest.update(rows)  # its bytes, as tobytes() would give them, without the copy
        return rows

    def restore(self, transfers: np.ndarray) -> None:
        """Restart from a stored log prefix (resume): the hash and count of exactly those rows."""
        self._pending.clear()
        self._digest = Digest(np.ascontiguousarray(transfers, dtype=TRANSFER_DTYPE).tobytes())
        self.count = len(transfers)

    @property
    def hash(self) -> str:
        """sha256 of the flushed log so far (call :meth:`flush` first for the whole log)."""
        return self._digest.hexdigest()


def pack(calls: list[tuple]) -> np.ndarray:
    """Log rows of transfer() calls kept as columns: (src ids, dst ids, amount, reason, episode, step) each,
    where amount, reason and episode may be scalars (expanded here, not on the hot path); one step per call."""
    sizes = [len(c[0]) for c in calls]
    rows = np.empty(sum(sizes), dtype=TRANSFER_DTYPE)
    if calls:
        *arrays, steps = zip(*calls)
        for name, parts in zip(TRANSFER_DTYPE.names, arrays):
            rows[name] = parts[0] if len(parts) == 1 else np.concatenate(
                [c if c.ndim else np.repeat(c, size) for c, size in zip(parts, sizes)])
        rows["step"] = np.repeat(steps, sizes)
    return rows


_COLUMN_DTYPES = (np.dtype(np.int64), np.dtype(np.int64), np.dtype(np.int64), np.dtype(np.int16), np.dtype(np.int64))
"""A transfer's (src, dst, amount, reason, episode) as the ledger keeps them."""


def _are_columns(*arrays) -> bool:
    """Whether a transfer's arguments are already 1-D arrays of one length and the ledger's dtypes: then
    :func:`_to_columns` would return them as they are, and skipping it is a third of a small transfer's cost."""
    n = arrays[0].size if type(arrays[0]) is np.ndarray else -1
    for a, dtype in zip(arrays, _COLUMN_DTYPES):
        if type(a) is not np.ndarray or a.ndim != 1 or a.size != n or a.dtype != dtype:
            return False
    return True


def _to_columns(src, dst, amount, reason, episode) -> tuple[np.ndarray, ...]:
    """A transfer's arguments as the ledger's columns: ``src`` and ``dst`` broadcast to 1-D, the others 1-D
    or scalars (a scalar stays one until :func:`pack` writes the rows)."""
    try:
        amount = np.asarray(amount)
        if amount.dtype.kind not in "iub":  # a float amount would be truncated (or wrap) by the cast
            raise LedgerError(f"transfer amount of dtype {amount.dtype}: amounts are integer micro-credits")
        src, dst, amount, reason, episode = (
            np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
            amount.astype(np.int64, casting="safe", copy=False), np.asarray(reason, dtype=np.int16),
            np.asarray(episode, dtype=np.int64))
    except (OverflowError, TypeError) as err:  # a Python int past int64, a uint64 beyond it
        raise LedgerError(f"transfer amount not an int64: {err}") from None
    shape = np.broadcast(src, dst, amount, reason, episode).shape
    src, dst = column(src, shape), column(dst, shape)
    amount, reason, episode = (a if a.ndim == 0 else column(a, shape) for a in (amount, reason, episode))
    return src, dst, amount, reason, episode


def as_columns(*arrays: np.ndarray) -> list[np.ndarray]:
    """``arrays`` broadcast to one shape and flattened: those already 1-D of that shape pass as they are
    (``np.broadcast_arrays`` costs more than a small transfer's own work)."""
    shape = np.broadcast(*arrays).shape
    return [column(a, shape) for a in arrays]


def column(a: np.ndarray, shape: tuple) -> np.ndarray:
    """``a`` broadcast to ``shape`` and flattened; already 1-D of that shape, as it is (a scalar broadcast to 1-D
    stays a view: funding a million newborns from the house copies no column of house rows)."""
    return a if a.shape == shape and a.ndim == 1 else np.broadcast_to(a, shape).reshape(-1)


def replay(transfers: np.ndarray) -> dict[int, int]:
    """Balances by account id, recomputed from zero out of a transfer log alone.

    Args:
        transfers: The log as a structured array with ``src``, ``dst`` and ``amount`` columns (micro-credits), as
            ``open_run(...).transfers`` holds it.

    Returns:
        Account id -> balance in micro-credits (the house is account 0). ``conservation_ok`` compares these with
        the stored balances.
    """
    accounts = np.union1d(transfers["src"], transfers["dst"])
    balance = np.zeros(accounts.size, dtype=np.int64)
    np.subtract.at(balance, np.searchsorted(accounts, transfers["src"]), transfers["amount"])
    np.add.at(balance, np.searchsorted(accounts, transfers["dst"]), transfers["amount"])
    return dict(zip(accounts.tolist(), balance.tolist()))
