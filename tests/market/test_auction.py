"""The auction's four clearing rules, checked on many independent worlds per call."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from market import CLEARING_RULES, auction, clear


def chi2(counts, probs):
    expected = counts.sum() * np.asarray(probs)
    return float(((counts - expected) ** 2 / expected).sum())


def tile(row, worlds):
    return np.tile(np.asarray(row), (worlds, 1))


def test_first_price_picks_the_max_eligible_bid():
    bids = np.array([[0, 9, 5, 7, 3]])
    eligible = np.array([[False, False, True, True, True]])  # the 9 is not eligible
    winner, price = clear(bids, eligible, "first_price", np.random.default_rng(0))
    assert winner.tolist() == [3] and price.tolist() == [7]


def test_first_price_ties_break_at_random():
    worlds = 4000
    bids = np.array([[0, 5, 3, 5, 1]])
    eligible = tile([False, True, True, True, True], worlds)
    winner, price = clear(bids, eligible, "first_price", np.random.default_rng(1))
    assert set(winner.tolist()) == {1, 3} and (price == 5).all()
    share = (winner == 1).mean()
    assert 0.45 < share < 0.55


def test_second_price_pays_the_second_highest_eligible_bid():
    rng = np.random.default_rng(0)
    bids = np.array([[0, 9, 5, 7, 3]])
    winner, price = clear(bids, np.array([[False, False, True, True, True]]), "second_price", rng)
    assert winner.tolist() == [3] and price.tolist() == [5]
    winner, price = clear(bids, np.array([[False, True, True, False, False]]), "second_price", rng)
    assert winner.tolist() == [1] and price.tolist() == [5]
    winner, price = clear(bids, np.array([[False, False, False, True, False]]), "second_price", rng)
    assert winner.tolist() == [3] and price.tolist() == [0]  # alone: pays nothing
    winner, price = clear(np.array([[0, 4, 4]]), np.array([[False, True, True]]), "second_price", rng)
    assert winner[0] in (1, 2) and price.tolist() == [4]  # a tie: the price is the tied bid


def test_random_ignores_bids():
    worlds = 6000
    eligible = tile([False, True, True, True], worlds)
    flat = clear(np.array([[0, 1, 1, 1]]), eligible, "random", np.random.default_rng(3))
    skewed = clear(np.array([[0, 10**9, 0, 5]]), eligible, "random", np.random.default_rng(3))
    assert (flat[0] == skewed[0]).all()  # same RNG state: same winners whatever the bids
    counts = np.bincount(skewed[0], minlength=4)[1:]
    assert chi2(counts, [1 / 3] * 3) < 13.8  # df=2, p=0.001
    assert (skewed[1] == np.array([0, 10**9, 0, 5])[skewed[0]]).all()  # pays its own bid


def test_softmax_frequencies_match_softmax_of_bids():
    worlds, temperature = 20000, 2.0
    bids = np.array([[0, 0, 1, 2, 4, 99]])
    eligible = tile([False, True, True, True, True, False], worlds)  # row 0 and the 99 sit out
    winner, price = clear(bids, eligible, "softmax", np.random.default_rng(4), temperature)
    assert set(winner.tolist()) <= {1, 2, 3, 4}
    logits = bids[0, 1:5] / temperature
    probs = np.exp(logits) / np.exp(logits).sum()
    counts = np.bincount(winner, minlength=6)[1:5]
    assert chi2(counts, probs) < 16.3  # df=3, p=0.001
    assert (price == bids[0][winner]).all()


@pytest.mark.parametrize("rule", CLEARING_RULES)
def test_no_eligible_bidder(rule):
    eligible = np.zeros((3, 5), dtype=bool)
    eligible[1, 2] = True
    winner, price = clear(tile([1, 2, 3, 4, 5], 3), eligible, rule, np.random.default_rng(0))
    assert winner.tolist() == [-1, 2, -1]
    assert price[[0, 2]].tolist() == [0, 0]


@pytest.mark.parametrize("rule", CLEARING_RULES)
def test_broadcast_bids_clear_each_world(rule):
    """The model passes one bid row for all B worlds; each world must clear as if alone."""
    bids = np.array([[0, 3, 5, 7, 1]])
    eligible = np.array([[False, True, False, False, False],
                         [False, False, True, True, False],
                         [False, False, False, False, False],
                         [False, True, True, False, True]])
    winner, price = clear(bids, eligible, rule, np.random.default_rng(0), 1.0)
    for w in range(eligible.shape[0]):
        alone = clear(bids, eligible[w:w + 1], rule, np.random.default_rng(0), 1.0)
        if eligible[w].any():
            assert eligible[w, winner[w]]
        else:
            assert winner[w] == -1
        if rule in ("first_price", "second_price"):  # deterministic here (no ties): same as clearing alone
            assert (winner[w], price[w]) == (alone[0][0], alone[1][0])


def test_unknown_rule():
    with pytest.raises(ValueError, match="unknown clearing rule"):
        clear(np.zeros((1, 2)), np.ones((1, 2), bool), "dutch", np.random.default_rng(0))


def test_same_rng_state_same_outcome():
    bids = np.random.default_rng(9).integers(0, 5, size=(1, 30))
    eligible = np.random.default_rng(10).random((50, 30)) < 0.3
    for rule in CLEARING_RULES:
        a = clear(bids, eligible, rule, np.random.default_rng(5), 1.5)
        b = clear(bids, eligible, rule, np.random.default_rng(5), 1.5)
        assert (a[0] == b[0]).all() and (a[1] == b[1]).all()


@settings(max_examples=50, deadline=None)
@given(
    st.tuples(st.integers(1, 5), st.integers(1, 6)).flatmap(lambda shape: st.tuples(
        arrays(np.int64, shape, elements=st.integers(0, 20)),
        arrays(bool, shape),
    )),
    st.sampled_from(CLEARING_RULES),
    st.integers(0, 2**32 - 1),
)
def test_clear_properties(bids_eligible, rule, seed):
    bids, eligible = bids_eligible
    winner, price = clear(bids, eligible, rule, np.random.default_rng(seed), 3.0)
    b = bids
    for w in range(eligible.shape[0]):
        if not eligible[w].any():
            assert winner[w] == -1 and price[w] == 0
            continue
        assert winner[w] >= 0 and eligible[w, winner[w]]  # the winner is always eligible
        assert 0 <= price[w] <= b[w, winner[w]]  # never pays more than it bid
        top = b[w][eligible[w]].max()
        if rule == "first_price":
            assert b[w, winner[w]] == top and price[w] == top
        elif rule == "second_price":
            ranked = np.sort(b[w][eligible[w]])
            assert b[w, winner[w]] == top
            assert price[w] == (ranked[-2] if ranked.size > 1 else 0)
        else:
            assert price[w] == b[w, winner[w]]


def reference_clear(bids, eligible, rule, rng, temperature):
    """The module docstring's rule, world by world: one uniform draw per candidate in (world, row) order;
    the candidate with the largest key wins (the first one on a tie)."""
    bids = np.broadcast_to(bids, eligible.shape)
    masked = np.where(eligible, bids, -1)
    if rule in ("first_price", "second_price"):
        candidates = [np.flatnonzero((m == m.max()) & (m >= 0)) for m in masked]
    else:
        candidates = [np.flatnonzero(e) for e in eligible]
    draws = rng.random(sum(len(c) for c in candidates))
    winner, price, i = np.full(len(eligible), -1), np.zeros(len(eligible), dtype=np.int64), 0
    for w, rows in enumerate(candidates):
        if not len(rows):
            continue
        draw, i = draws[i:i + len(rows)], i + len(rows)
        key = draw
        if rule == "softmax":
            key = bids[w, rows] / temperature - np.log(-np.log(np.clip(draw, 1e-300, 1.0 - 1e-16)))
        winner[w] = rows[int(np.argmax(key))]
        price[w] = bids[w, winner[w]]
        if rule == "second_price":
            price[w] = max(np.delete(masked[w], winner[w]).max(initial=0), 0)
    return winner, price


@settings(max_examples=150, deadline=None)
@given(
    # rows up to 140 wide cross the compiled pick's chunks of 64 (market/auction_kernel.CHUNK)
    st.tuples(st.integers(1, 5), st.one_of(st.integers(1, 6), st.integers(60, 140))).flatmap(lambda shape: st.tuples(
        arrays(np.int64, shape, elements=st.integers(0, 3)),  # few values: ties are common
        arrays(bool, shape),
    )),
    st.sampled_from(CLEARING_RULES),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_clear_follows_the_documented_draws(bids_eligible, rule, shared_bids, compiled, seed):
    """Winners, prices and the rng's state after a clear are exactly the reference's (runs replay bit for bit),
    on numpy and on the compiled path of large markets (market/auction_kernel.py)."""
    bids, eligible = bids_eligible
    if shared_bids:  # the market's [N] bids, broadcast over the worlds
        bids = bids[0]
    rng_a, rng_b = np.random.default_rng(seed), np.random.default_rng(seed)
    cells, auction.COMPILED_CELLS = auction.COMPILED_CELLS, 0 if compiled else auction.COMPILED_CELLS
    try:
        got = clear(bids, eligible, rule, rng_a, 2.0)
    finally:
        auction.COMPILED_CELLS = cells
    expected = reference_clear(bids, eligible, rule, rng_b, 2.0)
    assert got[0].tolist() == expected[0].tolist() and got[1].tolist() == expected[1].tolist()
    assert rng_a.random() == rng_b.random()


@settings(max_examples=200, deadline=None)
@given(
    arrays(np.int64, st.integers(1, 8), elements=st.integers(-2**63 + 1, 2**63 - 1) | st.integers(-10**7, 10**7)),
    st.floats(0, 1), st.integers(0, 10**6), st.floats(0.001, 1) | st.just(1.0), st.booleans(),
)
def test_holland_bids_are_exact_on_both_paths(wealth, c, base, bid_cap, compiled):
    """max(base, c x wealth) capped at bid_cap x max(wealth, 0), each product floored in exact integers (Python
    ints here), on numpy and on the compiled path; the extremes of int64 take the split at the credit."""
    cells, auction.COMPILED_CELLS = auction.COMPILED_CELLS, 0 if compiled else auction.COMPILED_CELLS
    try:
        got = auction.holland_bids(wealth, c, base, bid_cap)
    finally:
        auction.COMPILED_CELLS = cells
    c_ppm, cap_ppm = round(c * 10**6), round(bid_cap * 10**6)
    expected = [min(max(base, w * c_ppm // 10**6), max(w, 0) * cap_ppm // 10**6) for w in wealth.tolist()]
    assert got.dtype == np.int64 and got.tolist() == expected


@settings(max_examples=100, deadline=None)
@given(arrays(np.int64, st.integers(1, 8), elements=st.integers(-10**9, 10**9)), st.data(), st.booleans())
def test_holland_bids_of_rows_rewrite_those_rows_only(wealth, data, compiled):
    """A round's bids after a payment (MarketModel.rebid): the rows given are bid again from their balances,
    on numpy and on the compiled path, and every other row keeps the bid it had."""
    rows = np.array(data.draw(st.lists(st.integers(0, wealth.size - 1), max_size=6)), dtype=np.int64)
    before = np.arange(wealth.size, dtype=np.int64) - 7  # bids no balance gives
    cells, auction.COMPILED_CELLS = auction.COMPILED_CELLS, 0 if compiled else auction.COMPILED_CELLS
    try:
        fresh = auction.holland_bids(wealth, 0.1, 5, 0.5)
        got = auction.holland_bids(wealth, 0.1, 5, 0.5, rows=rows, out=before.copy())
    finally:
        auction.COMPILED_CELLS = cells
    moved = np.isin(np.arange(wealth.size), rows)
    assert got[moved].tolist() == fresh[moved].tolist() and got[~moved].tolist() == before[~moved].tolist()


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 4), arrays(np.int64, st.integers(1, 6), elements=st.integers(-2**62, 2**62) | st.integers(-10**7, 10**7)),
    st.data(), st.floats(0.001, 1) | st.just(1.0), st.booleans(),
)
def test_a_policy_s_credit_bids_cap_the_same_on_both_paths(worlds, wealth, data, bid_cap, one_row):
    """capped_credits: a policy's float bids -> capped micro-credits, rounded half to even, on the compiled path
    the integers of capped(to_micro_array(...)) on numpy; a bid that is not finite or past int64 raises the
    numpy path's ValueError on both."""
    shape = (wealth.size,) if one_row else (worlds, wealth.size)
    credits = data.draw(arrays(np.float64, shape, elements=st.floats(-1e6, 1e6) | st.sampled_from(
        [0.0, -0.0, 0.5e-6, 1.5e-6, 2.5e-6, 1e13, 9.3e12])))
    if data.draw(st.booleans()):
        credits.flat[data.draw(st.integers(0, credits.size - 1))] = data.draw(st.sampled_from([np.nan, np.inf, 1e14]))
    results = []
    for cells in (auction.COMPILED_CELLS, 0):  # numpy, then compiled
        saved, auction.COMPILED_CELLS = auction.COMPILED_CELLS, cells
        try:
            got = auction.capped_credits(credits, wealth, bid_cap)
            results.append((got.shape, got.dtype, got.tolist()))
        except ValueError as err:
            results.append(str(err))
        finally:
            auction.COMPILED_CELLS = saved
    assert results[0] == results[1]
