"""Struct-of-arrays population: row recycling, growth, ids; the Mesa facade over it; births."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.helpers import relay_model

from market import HOUSE_ROW, MarketConfig, Population, PopulationConfig
from market.births import RANDOM_NEWCOMER, first_sorted, plan_births
from market.agent import Trader


def test_house_row():
    pop = Population(capacity=4)
    assert pop.ids[HOUSE_ROW] == 0 and pop.alive[HOUSE_ROW]
    assert pop.size == 0 and not pop.traders.any()


def test_rows_are_recycled_lowest_first_and_capacity_doubles_only_when_needed():
    pop = Population(capacity=4)
    rows = pop.allocate(3)
    assert rows.tolist() == [1, 2, 3] and pop.capacity == 4
    pop.alive[rows] = True
    pop.release(np.array([2, 1]))
    assert not pop.alive[[1, 2]].any() and pop.alive[3]
    assert pop.allocate(2).tolist() == [1, 2] and pop.capacity == 4  # reused, no growth
    grown = pop.allocate(1)
    assert pop.capacity == 8 and grown.tolist() == [4]  # grew only now, by doubling
    assert pop.allocate(3).tolist() == [5, 6, 7] and pop.capacity == 8
    pop.allocate(1)
    assert pop.capacity == 16


def test_growth_keeps_columns():
    pop = Population(capacity=2)
    row = pop.allocate(1)
    pop.ids[row], pop.alive[row], pop.wealth[row], pop.bid[row] = 7, True, 42, 3
    pop.allocate(5)
    assert pop.capacity == 8
    assert (pop.ids[row], pop.alive[row], pop.wealth[row], pop.bid[row]) == (7, True, 42, 3)
    assert (pop.ids[2:] == -1).all() and not pop.alive[2:].any()


def test_state_dict_round_trip():
    pop = Population(capacity=4)
    rows = pop.allocate(2)
    pop.alive[rows] = True
    pop.wealth[rows] = [5, -5]
    other = Population()
    other.load_state_dict(pop.state_dict())
    assert other.allocate(2).tolist() == pop.allocate(2).tolist()
    assert (other.wealth == pop.wealth).all() and (other.alive == pop.alive).all()


def test_model_recycles_rows_but_never_ids():
    model = relay_model(MarketConfig(rent=0.2, bid_scheme="holland"),
                        PopulationConfig(initial_agents=6, initial_wealth=0.3, birth_interval=1, min_agents=4, max_agents=8))
    ids, rows, deaths = set(), set(), 0
    for _ in range(40):
        model.step()
        deaths += len(model.last_round.deaths)
        for b in model.last_round.births:
            assert b["agent_id"] not in ids
            ids.add(b["agent_id"])
        rows |= set(np.flatnonzero(model.population.traders).tolist())
    assert deaths > 10  # the economy churned...
    assert len(ids) > model.population.capacity  # ...through more agents than rows
    assert max(rows) < model.population.capacity
    # rows were reused instead of growing per birth: at most the house, max_agents live agents and this
    # round's bankrupt (whose rows are recycled only after the births have read their rules) are in use
    assert model.population.capacity <= 2 * (8 + 1)


def test_mesa_facade_matches_the_arrays():
    model = relay_model(MarketConfig(rent=0.1), PopulationConfig(initial_agents=8, initial_wealth=0.2, birth_interval=2))
    for _ in range(25):
        model.step()
        pop = model.population
        live = np.flatnonzero(pop.traders)
        assert len(model.agents) == pop.size == live.size
        assert all(isinstance(a, Trader) for a in model.agents)
        assert sorted(a.row for a in model.agents) == live.tolist()
        assert sorted(a.unique_id for a in model.agents) == sorted(pop.ids[live].tolist())
        for a in model.agents:
            assert a.wealth == pop.wealth[a.row] and a.bid == pop.bid[a.row]
            assert a.credits == a.wealth / 1_000_000
        assert model.agents.agg("wealth", sum) + pop.wealth[HOUSE_ROW] == 0
    df = model.datacollector.get_model_vars_dataframe()
    assert len(df) == 25 and df["population"].iloc[-1] == model.population.size


def test_plan_births_bounds():
    rng = np.random.default_rng(0)
    wealth = np.array([0, 5, 1, 9, 3])
    traders = np.array([False, True, True, True, True])
    none = np.empty(0, dtype=np.int64)
    cfg = PopulationConfig(p_exploit=1.0, p_explore=0.0, birth_interval=0, min_agents=0, max_agents=100)
    assert plan_births(wealth, traders, none, (0, 2), cfg, rng).tolist() == [3, 1]  # richest first
    cfg = PopulationConfig(p_exploit=0.0, p_explore=1.0, birth_interval=0, min_agents=0, max_agents=100)
    assert plan_births(wealth, traders, np.array([6]), (0, 2), cfg, rng).tolist() == [6, 2]  # bankrupt, then poorest
    cfg = PopulationConfig(p_exploit=1.0, p_explore=1.0, birth_interval=1, min_agents=0, max_agents=5)
    assert plan_births(wealth, traders, none, (0, 3), cfg, rng).size == 1  # room for one below max_agents
    cfg = PopulationConfig(p_exploit=0.0, p_explore=0.0, birth_interval=0, min_agents=7, max_agents=10)
    assert plan_births(wealth, traders, none, (0, 1), cfg, rng).tolist() == [RANDOM_NEWCOMER] * 3
    cfg = PopulationConfig(p_exploit=0.0, p_explore=0.0, birth_interval=3, min_agents=0, max_agents=10)
    assert plan_births(wealth, traders, none, (2, 7), cfg, rng).tolist() == [RANDOM_NEWCOMER] * 2  # 3 and 6


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-3, 3), max_size=40), st.integers(-2, 45))
def test_first_sorted_is_the_stable_sorts_prefix(keys, k):
    """The parents' order (richest or poorest first, ties by row) is the stable sort's, without sorting all."""
    keys = np.array(keys, dtype=np.int64)
    assert first_sorted(keys, k).tolist() == np.argsort(keys, kind="stable")[: max(k, 0)].tolist()
