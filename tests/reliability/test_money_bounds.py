"""Money at the edge of int64: the config bounds every money key (exit 2 naming it), and the ledger refuses
any transfer whose amount or resulting balance int64 cannot hold, changing nothing, so ``conservation_ok`` is
never computed over a wrapped sum. Operations inside the bounds succeed and replay exactly."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from market import HOUSE_ROW, Ledger, LedgerError, Population, Reason, replay, to_micro
from market.money import MAX_CREDITS, MAX_MICRO, rint_micro, share
from scenarios.cli.main import main

MAX = MAX_MICRO  # 2^63 - 1
EDGES = [0, 1, 2**62 - 1, 2**62, MAX // 2, MAX // 2 + 1, MAX - 1, MAX]
PAST = [MAX + 1, 2**64 - 1, 2**64, 2**70, -1, -MAX]


def population(n=3):
    pop = Population(capacity=n + 1)
    rows = pop.allocate(n)
    pop.ids[rows] = np.arange(1, n + 1)
    pop.alive[rows] = True
    return pop, Ledger(pop)


amounts = st.one_of(st.sampled_from(EDGES), st.sampled_from(PAST), st.integers(0, MAX), st.integers(-2**65, 2**65))
transfers = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), amounts), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(transfers, min_size=1, max_size=12))
def test_transfers_at_and_past_the_bounds(ops):
    """Each op (1-4 transfers in one call, rows may repeat) against exact Python-int balances: inside the
    bounds it moves exactly that; past them it raises LedgerError and moves nothing, logs nothing."""
    pop, ledger = population()
    exact = [0, 0, 0, 0]
    for op in ops:
        src, dst, amount = (list(c) for c in zip(*op))
        after = list(exact)
        for s, d, a in op:
            after[s] -= a
            after[d] += a
        ok = all(0 <= a <= MAX for a in amount) and all(abs(b) <= MAX for b in after)
        count, pending = ledger.count, ledger.pending().size
        if ok:
            ledger.transfer(src, dst, amount, Reason.BID, 0, 0)
            exact = after
        else:
            with pytest.raises(LedgerError):
                ledger.transfer(src, dst, amount, Reason.BID, 0, 0)  # Python ints: some past int64
            assert ledger.count == count and ledger.pending().size == pending
        assert pop.wealth.tolist() == exact
    log = ledger.flush()
    if log.size:
        assert replay(log) == {i: b for i, b in enumerate(exact) if i in set(log["src"]) | set(log["dst"])}


def test_the_overflow_of_the_issue_is_refused():
    """The house funding 21 agents with 9e12 credits each wrapped to +1.8e18 and 'conserved'."""
    pop, ledger = population()
    ledger.transfer(HOUSE_ROW, [1], to_micro(9e12), Reason.FUND, 0, -1)
    with pytest.raises(LedgerError, match="past int64"):
        ledger.transfer(HOUSE_ROW, [2, 3], to_micro(9e12), Reason.FUND, 0, -1)
    assert pop.wealth.tolist() == [-9 * 10**18, 9 * 10**18, 0, 0]


def test_float_amounts_are_refused():
    pop, ledger = population()
    with pytest.raises(LedgerError, match="dtype float64"):
        ledger.transfer(HOUSE_ROW, [1], 1e19, Reason.FUND, 0, -1)


@pytest.mark.parametrize("credits", [math.inf, -math.inf, math.nan, 9.3e12, -9.3e12, 2.0**63 / 1e6, 1e300])
def test_to_micro_refuses_what_int64_cannot_hold(credits):
    with pytest.raises(ValueError, match="int64"):
        to_micro(credits)


def test_to_micro_at_the_bound():
    assert to_micro(MAX_CREDITS) == 10**15 and to_micro(9.2e12) == 9_200_000_000_000_000_000


@pytest.mark.parametrize("micro", [math.inf, math.nan, 2.0**63, -2.0**63, 1e19])
def test_reward_conversion_refuses_instead_of_int64_min(micro):
    """numpy's cast gave INT64_MIN, a negative reward that was silently never paid."""
    with pytest.raises(ValueError, match="int64"):
        rint_micro(np.array([1.0, micro]))


@given(st.integers(-MAX, MAX), st.floats(0, 1))
def test_share_is_exact_across_int64(micro, fraction):
    """share() split at the credit: micro x ppm would leave int64 from 9.2e7 credits on (holland bids)."""
    ppm = round(fraction * 1_000_000)
    assert int(share(np.array([micro]), fraction)[0]) == micro * ppm // 1_000_000 == share(micro, fraction)
    small = [-7_654_321, 0, 3, 999_999, 1_000_001]  # an array's products either all fit int64, or it is split
    for values in ([micro, *small], small):
        assert share(np.array(values), fraction).tolist() == [v * ppm // 1_000_000 for v in values]


def run_cli(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert exit_.value.code == 2 and len(lines) == 1 and captured.out == "", captured
    return lines[0]


@pytest.mark.parametrize("key, value", [
    ("population.initial_wealth", "9e12"), ("market.reward_scale", "1e13"), ("market.base_bid", "2e9"),
    ("market.bid_eps", "1e10"), ("market.rent", "1e300"), ("market.action_fee", "1e12"), ("market.temperature", "1e10"),
    ("agents.reinforce.scale", "1e10"), ("agents.value.newcomer", "1e10"),
    ("population.initial_wealth", "1e8"),  # the last: the run's funding (below)
])
def test_money_keys_are_bounded(tmp_path, capsys, key, value):
    out = tmp_path / "out"
    line = run_cli(["run", "relay", "--set", f"{key}={value}", "--set", "run.episodes=5", "--out", str(out)], capsys)
    assert line.startswith(f"catallax: error: --set {key}={value}: {key} = "), line
    assert not out.exists()


def test_boltzmann_gift_is_bounded(tmp_path, capsys):
    line = run_cli(["run", "boltzmann", "--set", "boltzmann.unit=1e13", "--out", str(tmp_path / "out")], capsys)
    assert "boltzmann.unit = 1" in line


def test_the_largest_reward_pays_and_conserves(tmp_path, capsys):
    """reward_scale at its bound (1e9 credits = 1e15 micro per success): paid, replayed, conserved."""
    assert main(["run", "relay", "--set", f"market.reward_scale={MAX_CREDITS}", "--set", "run.episodes=5",
                 "--json", "--out", str(tmp_path)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["conservation_ok"] and summary["success_rate"] == 1.0
    assert summary["house"] <= -5 * 10**15
