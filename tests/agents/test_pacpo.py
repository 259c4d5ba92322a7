"""``pacpo`` (agents/credit/pacpo.py) on hand-worked procurement rollouts: the concession that pays against the seller's
real floor but not against the paired one gets the credit, an overpayment that pays more in the pair loses, a turn
that changes nothing gets none; procurement's ``pair`` / ``check`` hooks, the ``paired`` signal as the framework
hands it over (scenarios/text/adapter.py, no model), and a world without the hooks refused at load."""

import numpy as np
import pytest

from agents import credit as C
from agents.credit.base import Trajectory
from scenarios.text.adapter import TextBatch, TextBoard
from scenarios.procurement import Procurement

WORLD = Procurement()
PROBLEM = {"item": "4 monitors", "budget": 100, "floor": 60}
PAIR = {**PROBLEM, "floor": 75}  # the seller's floor moved up


def rollout(outcome, moves, pair=PAIR):
    """The states a list of offers (None: a forfeit, the state unchanged) walks through, checked in both worlds."""
    state = WORLD.start(PROBLEM)
    paired = [(WORLD.check(state, PROBLEM), WORLD.check(state, pair))]
    for offer in moves:
        if offer is not None:
            assert WORLD.act(state, "negotiator", f"I offer ${offer}.") is None
        paired.append((WORLD.check(state, PROBLEM), WORLD.check(state, pair)))
    T = len(moves)
    return Trajectory(outcome=outcome, agent=np.arange(T), action=np.zeros(T, dtype=int), paired=np.array(paired))


def test_the_concession_that_pays_only_in_this_world_gets_the_credit():
    S = rollout(1, [40, None, 65])  # countered at $80, a forfeit, then a deal at $65: 35/40 here, nothing in the pair
    O = rollout(1, [40, 80])  # a deal at $80: 20/40 here, 20/25 in the pair
    N = rollout(0, [40, 50])  # no deal: both floors missed
    np.testing.assert_allclose(S.paired[-1], [0.875, 0.0])
    np.testing.assert_allclose(O.paired[-1], [0.5, 0.8])
    sd = np.sqrt(2) / 3  # outcomes [1, 1, 0]
    a, b = (1 / 3) / (sd + 1e-6), (-2 / 3) / (sd + 1e-6)
    got = C.make("pacpo")([S, O, N]).steps
    np.testing.assert_allclose(got[0], [a, a, a + 0.875])
    np.testing.assert_allclose(got[1], [a, a - 0.3])
    np.testing.assert_allclose(got[2], [b, b])
    grpo = C.make("grpo")([S, O, N]).steps
    assert (got[0][:2] == grpo[0][:2]).all()  # the offer that moved neither verdict and the forfeit: no shaping
    assert grpo[0][2] == grpo[1][1] and got[0][2] > got[1][1]  # grpo ties the tight deal and the overpayment
    down = rollout(1, [40, None, 65], pair={**PROBLEM, "floor": 50})  # the pair's floor below: $65 pays there too
    assert C.make("pacpo")([down, O, N]).steps[0][2] == pytest.approx(a + 0.875 - 0.7)
    half = C.make("pacpo", beta=0.5, gamma=0.5)([S, O, N]).steps[0]  # F = 0.5 Phi' - Phi
    np.testing.assert_allclose(half, [a, a, a + 0.5 * 0.5 * 0.875])


def test_procurement_pairs_a_problem_by_moving_only_the_floor_and_checks_the_standing_offer():
    for pid in range(100):
        p = WORLD.problem(np.random.default_rng([3, pid]))
        q = WORLD.pair(p, np.random.default_rng([3, pid, 1]))
        assert {k: v for k, v in q.items() if k != "floor"} == {k: v for k, v in p.items() if k != "floor"}
        assert abs(q["floor"] - p["floor"]) >= p["budget"] // 20 and p["budget"] // 2 <= q["floor"] < p["budget"]
    s = WORLD.start(PROBLEM)
    assert WORLD.check(s, PROBLEM) == 0.0  # nothing on the table
    WORLD.act(s, "negotiator", "I offer $50.")
    assert WORLD.check(s, PROBLEM) == 0.0 and WORLD.check(s, {**PROBLEM, "floor": 50}) == 1.0
    WORLD.act(s, "closer", "I accept $84.")  # the seller's counter: 100 - 50 // 3
    assert WORLD.done(s) and WORLD.check(s, PROBLEM) == WORLD.reward(s) == pytest.approx(16 / 40)
    assert WORLD.check(s, PAIR) == pytest.approx(16 / 25)


def test_the_framework_hands_over_each_state_checked_against_the_problem_and_its_pair():
    board = TextBoard(WORLD)
    batch = TextBatch(board, seed=7, horizon=6)
    batch.reset(1, np.random.default_rng(0))
    problem = batch.states[0]["problem"]
    pair = board.paired(7, int(batch.pid[0]))
    assert pair == board.paired(7, int(batch.pid[0])) and pair["floor"] != problem["floor"]
    seen = [batch.observe()[0]]
    for offer in (problem["budget"] // 3, problem["budget"] - 1):
        obs = batch.observe()
        payload, why = board.parse("negotiator", f"I offer ${offer}.", obs[0])
        assert payload is not None, why
        board.deliver([payload])
        batch.step(np.array([0]), np.array([True]))
        seen.append(batch.observe()[0])
    signals = batch.credit_signals(np.stack(seen), np.zeros(2, int), 0, np.arange(2))
    assert set(signals) == {"paired"} and signals["paired"].shape == (3, 2)
    price = batch.states[0]["price"]  # the seller's counter: the last offer passed it
    assert price == batch.states[0]["ask"] < problem["budget"] - 1
    in_pair = (problem["budget"] - price) / (problem["budget"] - pair["floor"])
    np.testing.assert_allclose(signals["paired"][-1], [WORLD.reward(batch.states[0]), in_pair])
    np.testing.assert_allclose(signals["paired"][:2], 0.0)


def test_it_needs_the_paired_signal_and_a_world_without_the_hooks_is_refused():
    from scenarios.run.config import ConfigError, load

    assert C.needs("pacpo") == frozenset({"outcome", "paired"})
    assert Procurement.has_pair() and Procurement.signals() == ("paired",)
    with pytest.raises(ConfigError, match=r"'pacpo' needs signals scenario 'wordmath' does not provide: paired \("):
        load("wordmath", ['agents.actions="grpo"', "agents.credit=pacpo"])
    assert load("procurement", ['agents.actions="grpo"', "agents.credit=pacpo"]).agents.credit == "pacpo"
