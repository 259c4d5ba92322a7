"""The boltzmann scenario: Mesa's grid, Mesa's random-order schedule replayed step by step, the ledger's books,
the Mesa face."""

import json
import random

import numpy as np
import pytest
from mesa.discrete_space import OrthogonalMooreGrid

from market.checkpoint import encode
from market.ledger import Reason
from market.store import RunStore
from scenarios import boltzmann
from market import gini
from scenarios.boltzmann import BoltzmannModel, Config, gini_of_units, moore_kinds, moore_table
from scenarios.cli.main import main
from scenarios.run.config import load
from scenarios.run.runner import build_model, resume_experiment, run_experiment
from tests.helpers import Books


@pytest.mark.parametrize("torus", [False, True])
def test_moore_table_is_mesas_neighbourhood(torus):
    width, height = 5, 4
    table, count = moore_table(width, height, torus)
    grid = OrthogonalMooreGrid((width, height), torus=torus, random=random.Random(0))
    for cell in grid.all_cells:
        x, y = cell.coordinate
        ours = set(table[x * height + y, : count[x * height + y]].tolist())
        assert ours == {i * height + j for i, j in (c.coordinate for c in cell.neighborhood)}
    assert count.min() == (8 if torus else 3)


@pytest.mark.parametrize("width, height, torus", [(5, 4, False), (5, 4, True), (2, 1, False), (2, 2, True),
                                                  (1, 3, True), (12, 9, False)])
def test_moore_kinds_are_the_table_as_offsets(width, height, torus):
    table, count = moore_table(width, height, torus)
    kind, offsets, degree = moore_kinds(table, count)
    cells = np.arange(count.size)
    assert (degree[kind] == count).all()
    for m in range(8):
        has = count > m
        assert (cells[has] + offsets[kind[has], m] == table[has, m]).all()


def splitmix_uniforms(key: int):
    """splitmix64's stream of uniforms from ``key`` in Python ints: the reference for play's generator."""
    mask, state = (1 << 64) - 1, key
    while True:
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        yield ((z ^ (z >> 31)) >> 11) / 2.0**53


def sequential_step(model: BoltzmannModel, rng: np.random.Generator) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Mesa's MoneyAgent.step, one agent at a time in shuffled order, on Mesa's cell lists, drawing what the
    model draws: a key from its generator, then from that key's splitmix stream N - 1 uniforms for the turns
    (Fisher-Yates), one per turn for the move, then one per gift, in turn order, for the cellmate."""
    n = model.rows.size
    stream = splitmix_uniforms(int(rng.bit_generator.random_raw()))
    order = list(range(n))  # shuffle_do: the agents shuffled (Fisher-Yates), then each steps in that order
    for i in range(n - 1, 0, -1):
        k = int(next(stream) * (i + 1))
        order[i], order[k] = order[k], order[i]
    where = model.cell.tolist()
    agents = {c: [] for c in range(model.degree.size)}  # cell.agents: who was there (by turn), then arrivals
    for j in order:
        agents[where[j]].append(j)
    wealth = (model.wealth // model.gift).tolist()
    moves, gifts = [next(stream) for _ in range(n)], []
    for p, j in enumerate(order):
        x = moves[p] * model.degree[where[j]]
        agents[where[j]].remove(j)  # move
        where[j] = int(model.neighbours[where[j], int(x)])
        mates = list(agents[where[j]])
        agents[where[j]].append(j)
        if wealth[j] > 0 and mates:  # give one unit to a random cellmate
            other = mates[int(next(stream) * len(mates))]
            wealth[j], wealth[other] = wealth[j] - 1, wealth[other] + 1
            gifts.append((j, other))
    return np.array(wealth), gifts


@pytest.mark.parametrize("agents, width, height, units, torus, seed, steps", [
    (60, 5, 4, 2, False, 3, 15),  # Mesa's own kind of grid
    (40, 2, 2, 1, False, 7, 12),  # crowded: long chains of gifts within a step
    (30, 6, 5, 3, True, 7, 12),
    (25, 12, 9, 1, False, 7, 12),  # sparse: most agents alone
    (1, 2, 1, 1, False, 7, 12),
])
def test_compiled_turns_replay_mesas_schedule_on_any_grid(agents, width, height, units, torus, seed, steps):
    """The compiled step gives Mesa's sequential step's wealth and gifts, in order, from the same draws."""
    model = BoltzmannModel(Config(agents=agents, width=width, height=height, initial_units=units, torus=torus), seed=seed)
    for _ in range(steps):
        rng = np.random.default_rng()
        rng.bit_generator.state = model.rng.bit_generator.state
        wealth, gifts = sequential_step(model, rng)
        model.step()
        assert (model.wealth // model.gift).tolist() == wealth.tolist()
        log = model.last_round.transfers
        log = log[log["reason"] == Reason.GIFT]  # the first round also carries the house's funding
        assert list(zip((log["src"] - 1).tolist(), (log["dst"] - 1).tolist())) == gifts  # ids are rows 1..N
        assert model.datacollector.model_vars["Gini"][-1] == model.gini()  # play's Gini is the ledger's balances'


def test_gini_by_counting_is_market_gini():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 100, 5000):
        units = rng.geometric(0.4, size=n) - 1
        assert gini_of_units(units) == gini(units * 1_000_000)
    assert gini_of_units(np.zeros(5, dtype=np.int64)) == gini(np.zeros(5)) == 0.0


def test_mesa_face_agents_select_agg():
    model = BoltzmannModel(Config(agents=50, width=5, height=5, initial_units=2), seed=2)
    for _ in range(5):
        model.step()
    assert len(model.agents) == 50 and sorted(a.unique_id for a in model.agents) == list(range(1, 51))
    assert model.agents.agg("wealth", sum) == int(model.wealth.sum())
    rich = model.agents.select(lambda a: a.wealth >= 3 * model.gift)
    assert len(rich) == int((model.wealth >= 3 * model.gift).sum())


def test_books_balance_and_every_move_is_to_a_neighbour(books: Books):
    model = BoltzmannModel(Config(agents=300, width=12, height=9), seed=1)
    books.add(model.ledger.flush(), [])  # the house's funding of every first unit
    for _ in range(30):
        before = model.cell.copy()
        model.step()
        books.add(model.last_round.transfers, [])
        books.check(model.population)
        assert (model.wealth >= 0).all() and int(model.wealth.sum()) == 300 * model.gift
        givers = model.last_round.transfers["src"]
        assert np.unique(givers).size == givers.size  # one gift per agent per step at most
        for old, new in zip(before.tolist(), model.cell.tolist()):
            assert new in model.neighbours[old, : model.degree[old]]


def test_run_boltzmann_json(tmp_path, capsys):
    assert main(["run", "boltzmann", "--json", "--set", "run.episodes=30", "--set", "boltzmann.agents=200",
                 "--out", str(tmp_path / "out")]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["scenario"] == "boltzmann" and summary["episodes"] == 30 and summary["conservation_ok"] is True
    assert summary["agents"] == 200 and summary["grid"] == [14, 14] and summary["mean_units"] == 1.0
    assert 0.3 < summary["gini"] < 0.9 and summary["house"] == -200 * 1_000_000


def test_auction_sections_are_rejected_before_anything_is_written(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "boltzmann", "--set", "market.batch=4", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "market.batch" in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_killed_run_resumes_to_the_same_ledger_hash(tmp_path):
    exp = load("boltzmann", ["run.episodes=20", "run.checkpoint_every=5", "boltzmann.agents=150"], seed=4)
    whole = run_experiment(exp, f"sqlite:///{tmp_path / 'a.db'}", progress=False)

    url = f"sqlite:///{tmp_path / 'b.db'}"
    store = RunStore.create(url, "boltzmann", 4, exp.to_dict())
    model = build_model(exp)
    assert isinstance(model, boltzmann.BoltzmannModel)
    for r in range(13):  # killed after round 13; its last checkpoint is round 10
        model.step()
        state = encode(model.state_dict()) if (r + 1) % 5 == 0 else None
        store.write_rounds([model.last_round], state, model.episodes_done)
    resumed = resume_experiment(store.run_id, url, progress=False, take_over=True)  # its writer above "died"
    for key in ("ledger_hash", "conservation_ok", "gini", "gini_tail_mean", "transfers", "max_units"):
        assert resumed[key] == whole[key], key
