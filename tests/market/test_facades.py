"""Lazy Mesa facades: no Trader exists until someone asks, and then Mesa's API works over the live rows
through births, deaths, row recycling and a restored checkpoint."""

import mesa
import numpy as np
from tests.helpers import relay_model

from market import MarketConfig, PopulationConfig
from market.agent import Trader


def churning_model(seed=0):
    """Rent and births every other episode: agents die, rows are recycled, newborns take them."""
    return relay_model(MarketConfig(rent=0.1), PopulationConfig(initial_agents=8, initial_wealth=0.2, birth_interval=2,
                                                                max_agents=12), seed=seed)


def live(model):
    rows = np.flatnonzero(model.population.traders)
    return rows, model.population.ids[rows]


def test_no_facade_exists_until_agents_is_read():
    model = churning_model()
    for _ in range(5):
        model.step()
    assert len(model._agents) == 0  # Mesa's own registry: nothing built while nobody looked
    assert len(model.agents) == model.population.size > 0
    assert len(model._agents) == model.population.size


def test_facades_follow_births_deaths_and_recycled_rows_in_birth_order():
    model = churning_model()
    seen = {}
    for step in range(30):
        model.step()
        if step % 3:  # read only now and then: the sync catches up over several rounds
            continue
        rows, ids = live(model)
        agents = list(model.agents)
        assert [a.unique_id for a in agents] == sorted(ids.tolist())  # birth order, as facades made at birth
        assert {a.unique_id: a.row for a in agents} == dict(zip(ids.tolist(), rows.tolist()))
        for a in agents:  # a live agent keeps the same facade object
            assert seen.setdefault(a.unique_id, a) is a
        assert len(model._agents) == len(agents)  # the dead were removed from Mesa's registry
    holders = {}
    for a in seen.values():
        holders.setdefault(a.row, set()).add(a.unique_id)
    assert max(map(len, holders.values())) > 1  # rows were recycled under the facades


def test_mesa_api_over_lazy_facades():
    model = churning_model(seed=3)
    for _ in range(6):
        model.step()
    pop, (rows, ids) = model.population, live(model)
    agents = model.agents
    assert agents.agg("wealth", sum) == int(pop.wealth[rows].sum())
    assert agents.agg("wealth", max) == int(pop.wealth[rows].max())
    rich = agents.select(lambda a: a.wealth > 0)
    assert sorted(a.row for a in rich) == rows[pop.wealth[rows] > 0].tolist()
    assert len(agents.select(at_most=2)) == 2
    assert agents.get("unique_id") == [a.unique_id for a in agents]
    assert sorted(agents.map("__getattribute__", "row")) == rows.tolist()
    assert set(agents.groupby(lambda a: a.bid > 0).count()) <= {True, False}
    assert [a.unique_id for a in agents.sort("wealth", ascending=False)][:1] == [int(ids[pop.wealth[rows].argmax()])]
    agents.shuffle_do("step")  # Mesa's no-op Agent.step, in a random order
    assert list(model.agents_by_type) == [Trader] and len(model.agents_by_type[Trader]) == rows.size
    assert all(isinstance(a, Trader) and a.model is model for a in agents)


def test_datacollector_agent_reporters_see_every_live_agent_each_round():
    model = churning_model(seed=1)
    collector = mesa.DataCollector(agent_reporters={"wealth": "wealth", "born": "born_episode"})
    for _ in range(8):
        model.step()
        collector.collect(model)
    df = collector.get_agent_vars_dataframe()
    rows, ids = live(model)
    last = df.xs(df.index.get_level_values(0).max(), level=0)
    assert sorted(last.index.tolist()) == sorted(ids.tolist())
    assert last.loc[ids.tolist(), "wealth"].tolist() == model.population.wealth[rows].tolist()


def test_restored_checkpoint_rebuilds_the_facades():
    model = churning_model(seed=2)
    for _ in range(4):
        model.step()
    state = model.state_dict()
    before = {a.unique_id: a.row for a in model.agents}
    for _ in range(4):
        model.step()
    len(model.agents)  # facades of the later population
    model.load_state_dict(state)
    assert {a.unique_id: a.row for a in model.agents} == before
    assert len(model._agents) == len(before)
