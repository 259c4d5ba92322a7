"""The errands world (scenarios/errands.py) and the diamond_sd objective's state graph on it (agents/objectives/
diamond_sd.py): order-free fetches meet in one canonical state, a good off the list is the breakpoint, and only the
failure's steps from there on are taught, each the reply an own success wrote at the same state."""

import numpy as np
import pytest

from agents.objectives.diamond_sd import Memory, Step, breakpoint_of, plan
from scenarios import errands as E
from scenarios.run.config import ConfigError, load


def test_the_basket_is_the_canonical_state_and_a_good_off_the_list_loses_the_errand():
    world = E.Errands()
    p = world.problem(np.random.default_rng(3))
    assert world.problem(np.random.default_rng(3)) == p and len(set(p)) == 3 and set(p) <= set(E.GOODS)
    one, two = world.start(p), world.start(p)
    for good in p:  # two orders, one canonical state
        assert world.act(one, "shopper", f"buy {good}") is None
    for good in reversed(p):
        assert world.act(two, "shopper", f"Buy {good}.") is None
    assert world.subgoals(one) == world.subgoals(two) == frozenset(p) and world.done(one) and world.reward(one) == 1
    state = world.start(p)
    assert world.act(state, "shopper", "eggs please").startswith("expected")
    assert world.act(state, "shopper", f"buy {p[0]}") is None
    assert world.act(state, "shopper", f"buy {p[0]}").startswith("illegal")  # refused: a forfeit, no coin spent
    wrong = next(g for g in E.GOODS if g not in p)
    assert world.act(state, "shopper", f"buy {wrong}") is None and state["coins"] == 1
    assert world.act(state, "shopper", f"buy {p[1]}") is None
    assert world.done(state) and world.reward(state) == 0 and world.subgoals(state) == {p[0], wrong, p[1]}
    assert world.read(world.start(p), "shopper").endswith(f"List: {', '.join(p)}. Basket: (empty). Coins: 3.")


def episode(e, solved, moves, problem="0:1"):
    """Steps of one episode from (reply, what it fetched or None: refused), the basket growing from empty."""
    steps, basket = [], frozenset()
    for reply, good in moves:
        after = basket | {good} if good else basket
        steps.append(Step(e, solved, problem, "shopper", basket, after, reply))
        basket = after
    return steps


SUCCESS = episode(0, True, [("buy eggs", "eggs"), ("buy ink", "ink"), ("buy tea", "tea")])
WRONG = episode(1, False, [("buy eggs", "eggs"), ("buy rope", "rope"), ("buy ink", "ink")])  # the 2nd step goes off


def test_the_breakpoint_of_a_planted_failure_is_its_wrong_buy_and_only_from_there_it_is_taught():
    """Episode 1 buys eggs (as the success did), then rope (off the list: {eggs, rope} no success visited), then ink.
    The breakpoint is step 1; it is taught the success's reply at {eggs}, "buy ink"; step 0, before it, is not
    (though the success wrote a reply at {} too), nor step 2, whose state no success visited."""
    retrieved, breaks, ids = plan(SUCCESS + WRONG, Memory(64))
    assert breaks.tolist() == [False, False, False, False, True, False]
    assert retrieved == [None, None, None, None, "buy ink", None]
    assert ids.tolist() == [0, 1, 2, 0, 1, 3]  # canonical states: {}, {eggs}, {eggs, ink}; {eggs, rope} new


def test_order_free_successes_share_states_a_stalled_failure_breaks_where_it_first_stood_still():
    other = episode(2, True, [("buy tea", "tea"), ("buy eggs", "eggs"), ("buy ink", "ink")])
    detour = episode(3, False, [("buy tea", "tea"), ("buy ink", "ink"), ("buy soap", "soap")])
    stalled = episode(4, False, [("buy eggs", "eggs"), ("I will shop", None), ("ok", None)])
    retrieved, breaks, _ = plan(SUCCESS + other + detour + stalled, Memory(64))
    # the detour breaks at {ink, tea}, a node no success visited (the region is what the successes showed); the
    # stalled failure never left the region and breaks at its first refusal, taught there and at the next
    assert np.flatnonzero(breaks).tolist() == [7, 10]
    assert retrieved[6:] == [None, "buy eggs", None, None, "buy ink", "buy ink"]
    assert breakpoint_of(episode(5, False, [("buy eggs", "eggs")], problem="0:2"), Memory(4)) is None  # no success known


def test_the_memory_carries_successes_to_later_rounds_is_bounded_and_checkpointed():
    memory = Memory(64)
    plan(SUCCESS, memory)
    retrieved, breaks, _ = plan(WRONG, memory)  # a later round: its only success is remembered
    assert breaks.tolist() == [False, True, False] and retrieved == [None, "buy ink", None]
    copy = Memory(64)
    copy.load_state_dict(memory.state_dict())
    assert copy.nodes == memory.nodes and len(memory.nodes) == 4  # {}, {eggs}, {eggs, ink}, the goal
    small = Memory(2)
    plan(SUCCESS, small)
    assert list(small.nodes) == [("0:1", ("eggs", "ink")), ("0:1", ("eggs", "ink", "tea"))]  # the latest two
    assert plan(WRONG, small)[1].tolist() == [False, False, False]  # {} forgotten: no region known from there


def test_a_world_without_subgoals_refuses_diamond_sd_naming_the_signal():
    with pytest.raises(ConfigError, match=r"agents.objective = 'diamond_sd'.*does not provide: .*subgoals"):
        load("wordmath", ["agents.actions=grpo", "agents.objective=diamond_sd"])
    assert load("errands", ["agents.actions=grpo", "agents.objective=diamond_sd"]).agents.objective == "diamond_sd"
