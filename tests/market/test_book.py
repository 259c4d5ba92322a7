"""A step's bookkeeping (market/book.py): the compiled sale is brigade.sale, world by world, and the two books
pay, record and stop alike on hand-made steps (whole markets both ways: tests/market/test_model.py)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from market.book import CompiledBook, NumpyBook, Round
from market.brigade import sale
from market.kernels import kernel
from market.population import HOUSE_ROW

rows = st.integers(-1, 5)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(rows, rows, st.booleans()), min_size=1, max_size=12), st.booleans(), st.booleans())
def test_the_compiled_sale_is_brigade_sale(worlds, bucket_brigade, conserve):
    owner, winner, won = (np.array(c) for c in zip(*worlds))
    winner = np.where(won, winner, -1)
    payer, payee, pays = np.empty(winner.size, np.int64), np.empty(winner.size, np.int64), np.empty(winner.size, bool)
    kernel("market.brigade_kernel").sale(owner.astype(np.int64), winner.astype(np.int64), won.astype(bool),
                                         bucket_brigade, conserve, HOUSE_ROW, payer, payee, pays)
    expected = sale(owner, winner, won.astype(bool), "bucket_brigade" if bucket_brigade else "final_only", conserve)
    for got, want in zip((payer, payee, pays), expected):
        np.testing.assert_array_equal(got, want)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**31), st.sampled_from(["bucket_brigade", "final_only"]), st.booleans())
def test_both_books_record_and_pay_the_same_steps(B, seed, payment, conserve):
    rng = np.random.default_rng(seed)
    books = [cls(B, payment, conserve, 1_000_000, 2_000, 3) for cls in (NumpyBook, CompiledBook)]
    rounds = [Round(B, 4, B) for _ in books]
    for t in range(4):
        winner, actions = rng.integers(-1, 4, B), rng.integers(-1, 3, B)
        price, reward, done = rng.integers(0, 10**5, B), rng.random(B).round(3), rng.random(B) < 0.3
        out = []
        for book, rnd in zip(books, rounds):
            won, acted, payer, payee, pays = book.buy(rnd, winner, actions)
            step_done = done.copy()
            src, dst, amount, micro, ended, playing = book.book(rnd, t, reward, step_done, won, acted, price, payer,
                                                                payee, pays)
            finished = np.flatnonzero(step_done & (micro > 0) & (rnd.owner >= 0)) if ended else []  # as Settlement reads it
            out.append([np.array(x).copy() for x in (won, acted, src, dst, amount, micro, finished, playing, step_done)])
        for got, want in zip(*out):
            np.testing.assert_array_equal(got, want)
        for name in ("owner", "path", "active", "steps", "earned"):
            np.testing.assert_array_equal(getattr(rounds[0], name), getattr(rounds[1], name))
        for name in rounds[0].grid:
            np.testing.assert_array_equal(rounds[0].grid[name], rounds[1].grid[name])
