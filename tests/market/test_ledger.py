"""The integer ledger: transfers, its guards, replay, hash; random operation sequences on Population+Ledger."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from market import HOUSE_ROW, Ledger, LedgerError, Population, Reason, replay
from market.ledger import TRANSFER_DTYPE


def fresh(n_traders=3):
    """A population with the house and n funded traders (ids 1..n), plus its ledger."""
    pop = Population(capacity=4)
    ledger = Ledger(pop)
    rows = pop.allocate(n_traders)
    pop.ids[rows] = np.arange(1, n_traders + 1)
    pop.alive[rows] = True
    ledger.transfer(np.full(n_traders, HOUSE_ROW), rows, 100, Reason.FUND, 0, -1)
    return pop, ledger, rows


def test_transfer_moves_money_and_logs_ids():
    pop, ledger, rows = fresh()
    ledger.transfer([rows[0]], [rows[1]], 30, Reason.BID, 7, 2)
    assert pop.wealth[rows].tolist() == [70, 130, 100]
    assert pop.wealth[HOUSE_ROW] == -300
    log = ledger.flush()
    assert log.dtype == TRANSFER_DTYPE and log.size == 4 and ledger.count == 4
    last = log[-1]
    assert (last["src"], last["dst"], last["amount"], last["reason"], last["episode"], last["step"]) == (1, 2, 30, Reason.BID, 7, 2)
    assert replay(log) == {0: -300, 1: 70, 2: 130, 3: 100}


def test_zero_amounts_are_dropped():
    pop, ledger, rows = fresh()
    ledger.flush()
    ledger.transfer(rows, HOUSE_ROW, [0, 5, 0], Reason.RENT, 1, -1)
    log = ledger.flush()
    assert log["amount"].tolist() == [5] and log["src"].tolist() == [2]


def test_negative_amount_raises_and_changes_nothing():
    pop, ledger, rows = fresh()
    before = pop.wealth.copy()
    with pytest.raises(LedgerError, match="negative"):
        ledger.transfer([rows[0]], [rows[1]], -1, Reason.BID, 0, 0)
    assert (pop.wealth == before).all()


@pytest.mark.parametrize("side", ["src", "dst"])
def test_dead_account_raises_and_changes_nothing(side):
    pop, ledger, rows = fresh()
    ledger.transfer([rows[2]], [HOUSE_ROW], 100, Reason.RENT, 0, -1)  # empty it, then it dies
    pop.release(rows[2:])
    before = pop.wealth.copy()
    src, dst = (rows[2], rows[0]) if side == "src" else (rows[0], rows[2])
    with pytest.raises(LedgerError, match="dead"):
        ledger.transfer([src], [dst], 1, Reason.BID, 0, 0)
    assert (pop.wealth == before).all()


def test_negative_row_is_not_an_account():
    pop, ledger, rows = fresh(3)  # capacity 4: the last row (3) is a live trader
    with pytest.raises(LedgerError):
        ledger.transfer([HOUSE_ROW], [-1], 1, Reason.REWARD, 0, 0)


def test_a_zero_amount_from_row_minus_one_stays_on_the_compiled_path():
    """The market's idle worlds (no winner) put row -1 in a step's transfer with amount 0: it moves nothing,
    so neither path reads it, and the compiled one must not hand the step to numpy for it (in blocks' late
    steps, most worlds are idle, and the numpy path cost ~20 us a step more)."""
    books = []
    for compiled_rows in (1, None):
        pop, ledger, rows = fresh(3)
        ledger.compiled_rows = compiled_rows
        ledger.transfer(np.array([rows[0], -1]), np.array([rows[1], HOUSE_ROW]), np.array([5, 0]),
                        np.array([Reason.BID, Reason.FEE], dtype=np.int16), np.array([0, 1]), 0)
        compiled = isinstance(ledger._pending[-1], np.ndarray)  # the kernel's log rows; numpy keeps the columns
        assert compiled == (compiled_rows == 1)
        books.append((pop.wealth.tolist(), ledger.flush().tobytes()))
    assert books[0] == books[1]


def test_hash_covers_flushed_log_in_order():
    a, la, ra = fresh()
    b, lb, rb = fresh()
    la.transfer([ra[0]], [ra[1]], 1, Reason.BID, 0, 0)
    la.transfer([ra[1]], [ra[2]], 2, Reason.BID, 0, 1)
    lb.transfer([rb[1]], [rb[2]], 2, Reason.BID, 0, 1)
    lb.transfer([rb[0]], [rb[1]], 1, Reason.BID, 0, 0)
    before = la.hash
    la.flush(), lb.flush()
    assert la.hash != before  # the hash folds in only what was flushed
    assert la.hash != lb.hash  # same transfers, another order
    c, lc, rc = fresh()
    lc.transfer([rc[0]], [rc[1]], 1, Reason.BID, 0, 0)
    lc.transfer([rc[1]], [rc[2]], 2, Reason.BID, 0, 1)
    lc.flush()
    assert lc.hash == la.hash


# ------------------------------------------------------------------ property: random sequences of operations
op = st.one_of(
    st.tuples(st.just("birth"), st.integers(1, 3), st.integers(0, 50)),  # n newborns, funding each
    st.tuples(st.just("pay"), st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 80)),
    st.tuples(st.just("rent"), st.integers(0, 30)),
    st.tuples(st.just("death"), st.integers(0, 10**6)),
    st.tuples(st.just("bad_negative"), st.integers(1, 10)),
    st.tuples(st.just("bad_dead"), st.integers(0, 10**6)),
)


@settings(max_examples=50, deadline=None)
@given(st.lists(op, max_size=40))
def test_random_operations_keep_the_books(ops):
    pop = Population(capacity=2)
    ledger = Ledger(pop)
    next_id, dead_ids, log = 1, set(), []
    for kind, *args in ops:
        live = np.flatnonzero(pop.traders)
        if kind == "birth":
            n, fund = args
            rows = pop.allocate(n)
            assert not pop.alive[rows].any()
            pop.ids[rows] = np.arange(next_id, next_id + n)
            next_id += n
            pop.alive[rows] = True
            ledger.transfer(np.full(n, HOUSE_ROW), rows, fund, Reason.FUND, 0, -1)
        elif kind == "pay" and live.size:
            src, dst, amount = live[args[0] % live.size], live[args[1] % live.size], args[2]
            ledger.transfer([src], [dst], amount, Reason.BID, 0, 0)
        elif kind == "rent" and live.size:
            ledger.transfer(live, HOUSE_ROW, args[0], Reason.RENT, 0, -1)
        elif kind == "death" and live.size:
            row = live[args[0] % live.size]
            if pop.wealth[row] < 0:
                ledger.transfer([HOUSE_ROW], [row], -pop.wealth[row], Reason.WRITE_OFF, 0, -1)
            elif pop.wealth[row] > 0:
                ledger.transfer([row], [HOUSE_ROW], pop.wealth[row], Reason.RENT, 0, -1)
            dead_ids.add(int(pop.ids[row]))
            pop.release(np.array([row]))
        elif kind == "bad_negative" and live.size:
            with pytest.raises(LedgerError):
                ledger.transfer([live[0]], [HOUSE_ROW], -args[0], Reason.BID, 0, 0)
        elif kind == "bad_dead":
            dead_rows = np.flatnonzero(~pop.alive)
            if dead_rows.size:
                with pytest.raises(LedgerError):
                    ledger.transfer([HOUSE_ROW], [dead_rows[args[0] % dead_rows.size]], 1, Reason.FUND, 0, -1)
        log.append(ledger.flush())

        assert int(pop.wealth.sum()) == 0
        full = np.concatenate(log)
        assert (full["amount"] > 0).all()
        balances = replay(full) if full.size else {}
        alive = np.flatnonzero(pop.alive)
        expected = dict(zip(pop.ids[alive].tolist(), pop.wealth[alive].tolist()))
        assert {a: b for a, b in balances.items() if b} == {a: b for a, b in expected.items() if b}
        assert all(balances.get(i, 0) == 0 for i in dead_ids)
    assert len(set(pop.ids[pop.alive].tolist()) & dead_ids) == 0


def test_one_call_of_several_reasons_logs_what_separate_calls_do():
    """The market moves a step's bids and rewards in one call: the log and balances are those of one call per kind."""
    (pop_a, a, rows), (pop_b, b, _) = fresh(), fresh()
    a.transfer([rows[0], HOUSE_ROW, HOUSE_ROW], [rows[1], rows[2], rows[0]], [5, 0, 7],
               [Reason.BID, Reason.REWARD, Reason.REWARD], [3, 4, 5], 2)
    b.transfer([rows[0]], [rows[1]], [5], Reason.BID, [3], 2)
    b.transfer(HOUSE_ROW, [rows[2], rows[0]], [0, 7], Reason.REWARD, [4, 5], 2)
    log_a, log_b = a.flush(), b.flush()
    assert log_a.tobytes() == log_b.tobytes() and a.hash == b.hash and a.count == b.count == 5
    assert (pop_a.wealth == pop_b.wealth).all()
    assert log_a["reason"][-2:].tolist() == [Reason.BID, Reason.REWARD] and log_a["step"][-2:].tolist() == [2, 2]


def test_scalar_transfer_and_empty_transfer():
    pop, ledger, rows = fresh()
    ledger.flush()
    ledger.transfer(int(rows[0]), int(rows[1]), 3, Reason.BID, 1, 0)  # every argument a scalar: one row
    ledger.transfer(HOUSE_ROW, rows[:0], 5, Reason.WRITE_OFF, 1, -1)  # nobody: nothing
    log = ledger.flush()
    assert log.size == 1 and (log["src"][0], log["dst"][0], log["amount"][0]) == (1, 2, 3)


def test_large_flushes_hashed_on_the_worker_thread_give_the_hash_of_the_log_in_order(monkeypatch):
    """Flushes past Digest.BACKGROUND_BYTES go to the hashing thread, copied into buffers of two big flushes
    each here (a third waits for the next), or as they are past Digest.COPY_BYTES; small ones after them wait
    behind them. The thread is held up for its first half second, so the ledger fills both buffers and must
    wait before it refills one. Whatever the mix, the hash is sha256 over every flushed row in order, and
    flushed rows are read-only."""
    import hashlib
    import threading
    from market.ledger import Digest, _hashing_queue

    monkeypatch.setattr(Digest, "HANDOFF_BYTES", 2 * Digest.BACKGROUND_BYTES + 2 * TRANSFER_DTYPE.itemsize)
    monkeypatch.setattr(Digest, "COPY_BYTES", Digest.HANDOFF_BYTES)
    held = threading.Event()

    class Stall:  # a job that keeps the hashing thread busy until ``held`` is set
        @staticmethod
        def _fold(_):
            held.wait()

    _hashing_queue().put((Stall, None))
    threading.Timer(0.5, held.set).start()

    pop = Population(capacity=2001)
    ledger = Ledger(pop)
    rows = pop.allocate(2000)
    pop.ids[rows], pop.alive[rows] = rows, True
    ledger.transfer(HOUSE_ROW, rows, 10, Reason.FUND, 0, -1)
    logs = [ledger.flush()]
    big = Digest.BACKGROUND_BYTES // TRANSFER_DTYPE.itemsize + 1  # rows: the smallest flush hashed on the thread
    for episode, size in enumerate([1, big, 3, big, big, 2, big, 3 * big, 1, big], start=1):
        ledger.transfer(rows[:size], rows[::-1][:size], 1, Reason.GIFT, episode, 0)
        logs.append(ledger.flush())
    assert hashlib.sha256(np.concatenate(logs).tobytes()).hexdigest() == ledger.hash
    assert not logs[2].flags.writeable
    with pytest.raises(ValueError):
        logs[2]["amount"] = 0


def test_an_error_on_the_hashing_thread_surfaces_in_hexdigest_and_the_thread_goes_on(monkeypatch):
    """A chunk hashlib refuses (not contiguous) is refused on the worker thread: the digest raises it when read,
    instead of waiting forever on a thread that died, and the next digest is still hashed. (Read on a thread
    of the test's own, so that a regression fails here in seconds rather than hanging the suite.)"""
    import hashlib
    import threading
    from market.ledger import Digest

    monkeypatch.setattr(Digest, "COPY_BYTES", Digest.BACKGROUND_BYTES // 2)  # both chunks go to the thread as they are
    rows = np.zeros(2 * Digest.BACKGROUND_BYTES, dtype=np.uint8)
    broken, fine, read = Digest(), Digest(), {}
    broken.update(rows[::2])  # large enough for the thread; a strided view has no contiguous buffer
    fine.update(rows)

    def read_both():
        try:
            broken.hexdigest()
        except ValueError as error:
            read["error"] = str(error)
        read["fine"] = fine.hexdigest()

    reader = threading.Thread(target=read_both, daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert "contiguous" in read.get("error", "no error raised"), read
    assert read.get("fine") == hashlib.sha256(rows.tobytes()).hexdigest()


# ------------------------------------------------------------------ property: the compiled path is the numpy path
call = st.tuples(
    st.lists(st.integers(0, 5), min_size=1, max_size=12),  # src rows: live
    st.lists(st.integers(0, 5), min_size=1, max_size=12),  # dst rows: live
    st.one_of(st.none(), st.sampled_from([-1, 6, 7, 8])),  # a bad row put last in src or dst: no such row (-1),
    st.booleans(),                                         # dead (6, 7), past the population (8)
    st.one_of(st.integers(-3, 10**6), st.lists(st.integers(-3, 10**6), min_size=12, max_size=12),
              st.just(2**61)),  # one amount or one per row; 2**61: near int64, the numpy path's exact check
    st.one_of(st.sampled_from(list(Reason)), st.lists(st.sampled_from(list(Reason)), min_size=12, max_size=12)),
    st.one_of(st.integers(0, 9), st.lists(st.integers(0, 9), min_size=12, max_size=12)),
    st.integers(-1, 5),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(call, min_size=1, max_size=6))
def test_the_compiled_path_moves_logs_and_refuses_what_the_numpy_path_does(calls):
    """Every transfer through market/ledger_kernel.py (compiled_rows = 1) against every one through numpy
    (None): the same balances, log rows, hash and errors, call after call (a refused call falls back to numpy
    to raise)."""
    books = []
    for compiled_rows in (1, None):
        pop = Population(capacity=8)
        ledger = Ledger(pop)
        ledger.compiled_rows = compiled_rows
        if compiled_rows is None:  # numba is loaded in this process: None must still keep to numpy
            ledger._move_compiled = lambda *args: pytest.fail("compiled_rows = None took the compiled path")
        rows = pop.allocate(7)
        pop.ids[rows], pop.alive[rows] = rows * 10, True
        pop.release(rows[-2:])  # rows 6 and 7 dead (7 was never born)
        outcomes = []
        for src, dst, bad, in_src, amount, reason, episode, step in calls:
            n = min(len(src), len(dst))
            cut = (lambda x: np.array(x[:n]) if isinstance(x, list) else x)
            if bad is not None:
                (src if in_src else dst)[n - 1] = bad
            try:
                ledger.transfer(cut(src), cut(dst), cut(amount), cut(reason), cut(episode), step)
                outcomes.append(("ok", pop.wealth.tolist(), ledger.pending().tobytes()))
            except (LedgerError, IndexError) as err:
                outcomes.append((type(err).__name__, str(err), pop.wealth.tolist()))
        outcomes.append(ledger.flush().tobytes())
        books.append((outcomes, ledger.hash, ledger.count))
    assert books[0] == books[1]
