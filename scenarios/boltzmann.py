"""Scenario ``boltzmann``: Mesa's Boltzmann wealth model on Catallax's arrays and integer ledger.

The model (Dragulescu & Yakovenko 2000; Mesa's ``BoltzmannWealth``, shipped
in ``mesa.examples.basic.boltzmann_wealth_model``). N agents on a
width x height grid of cells (Moore neighbourhood; not a torus, as in Mesa's
example, unless ``torus = true``), each starting with one unit. Every step the
agents act one at a time in a fresh random order (``shuffle_do``); at its turn
an agent moves to a random neighbouring cell and then, if its wealth is
positive, gives one unit to a random *cellmate*: any other agent whose
current cell is its new cell. Money is only moved, so the mean stays one
unit while the distribution spreads out: a few agents get rich, about half
hold nothing (Gini about 0.65 at N = 100 on 10 x 10).

Here the random-order schedule is replayed exactly (same distribution, other
random numbers): the step draws the order and every agent's two uniforms as
arrays, then :func:`play` runs the turns one by one, since a turn depends on
the ones before it (an agent can give only if it had a unit at its turn: one it
started with, or one an earlier agent gave it). That loop is compiled with
numba, one pass over the agents with no per-agent objects. It only decides the
gifts, on a scratch copy of the balances; every unit moves through
:class:`market.ledger.Ledger`: the house funds each agent's first unit, and
each step's gifts are one vectorized transfer, in activation order.

``BoltzmannModel`` is a ``mesa.Model`` of its own (there is no auction, so
:class:`market.MarketModel` does not fit); the runner builds it through this
module's :func:`make_model`. ``run.episodes`` counts steps; ``[market]`` and
``[population]`` do not apply (:func:`validate` rejects them).
"""

from __future__ import annotations

import dataclasses
import math

import mesa
import numba
import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from market import HOUSE_ROW, Ledger, MarketConfig, Population, PopulationConfig, Reason, to_micro
from market.agent import LazyTraders
from market.config import STRICT
from market.money import MAX_CREDITS
from market.model import RoundLog
from market.protocols import Economy


@dataclass(config=STRICT)
class Config:
    agents: int = Field(100, ge=1)
    """N: agents on the grid."""
    width: int = Field(0, ge=0)
    """Grid width in cells (0: round(sqrt(N)), one agent per cell as in Mesa's 100 agents on 10 x 10)."""
    height: int = Field(0, ge=0)
    """Grid height in cells (0: the same as the width)."""
    torus: bool = False
    """Whether the grid wraps around (Mesa's example: no)."""
    initial_units: int = Field(1, ge=0)
    """Units each agent starts with (funded by the house)."""
    unit: float = Field(1.0, gt=0, le=MAX_CREDITS)
    """Credits per unit: what one gift moves (at most 1e9, market/money.py)."""

    def __post_init__(self):
        if grid_shape(self) == (1, 1):
            raise ValueError("a 1 x 1 grid has no neighbouring cell to move to")


def grid_shape(cfg: Config) -> tuple[int, int]:
    width = cfg.width or max(2, round(math.sqrt(cfg.agents)))
    return width, cfg.height or width


def moore_table(width: int, height: int, torus: bool) -> tuple[np.ndarray, np.ndarray]:
    """Cell c = x * height + y -> (its up to 8 Moore neighbours [cells, 8] padded with -1, their count [cells])."""
    x, y = np.divmod(np.arange(width * height), height)
    table = np.full((width * height, 8), -1, dtype=np.int64)
    count = np.zeros(width * height, dtype=np.int64)
    for dx in (-1, 0, 1):  # Mesa's offset order; an edge cell keeps only the neighbours inside the grid
        for dy in (-1, 0, 1):
            if dx == dy == 0:
                continue
            nx, ny = x + dx, y + dy
            if torus:
                nx, ny = nx % width, ny % height
            inside = (nx >= 0) & (nx < width) & (ny >= 0) & (ny < height)
            cells = np.flatnonzero(inside)
            table[cells, count[cells]] = nx[cells] * height + ny[cells]
            count[cells] += 1
    return table, count


@numba.njit(cache=True)
def play(order, old, r, u, neighbours, degree, wealth, gift):
    """One step of Mesa's schedule, agent by agent -> (new cells [N], givers, receivers: in activation order).

    Agent j (``order`` lists them by turn) moves to neighbour ``r[j] * degree`` of its cell, then, if it
    holds a unit (``wealth``: a scratch copy, micro-credits), gives one to cellmate ``u[j] * count``. Its
    cellmates, in turn order, are the agents earlier in the order that moved into its new cell (each
    cell's *arrivals*, appended as they come) and the later ones that have not moved yet and still sit
    there (each cell's first occupants in turn order, the *stayers*, of which those gone are a prefix):
    one pass over the agents, no search.
    """
    n, cells = order.size, degree.size
    new = np.empty(n, np.int64)
    stay_from, arrive_from = np.zeros(cells + 1, np.int64), np.zeros(cells + 1, np.int64)
    for j in range(n):
        new[j] = neighbours[old[j], int(r[j] * degree[old[j]])]
        stay_from[old[j] + 1] += 1
        arrive_from[new[j] + 1] += 1
    stayed, came = 0, 0
    for c in range(1, cells + 1):  # counts -> where each cell's run starts (running sums kept in registers)
        stayed, came = stayed + stay_from[c], came + arrive_from[c]
        stay_from[c], arrive_from[c] = stayed, came
    stayers, arrivals = np.empty(n, np.int64), np.empty(n, np.int64)
    gone, arrived = stay_from[:-1].copy(), arrive_from[:-1].copy()  # per cell: next stayer to leave, next arrival
    for j in order:
        stayers[gone[old[j]]] = j
        gone[old[j]] += 1
    gone[:] = stay_from[:-1]
    givers, receivers, k = np.empty(n, np.int64), np.empty(n, np.int64), 0
    for j in order:
        gone[old[j]] += 1  # j leaves its cell
        c = new[j]
        earlier = arrived[c] - arrive_from[c]
        mates = earlier + stay_from[c + 1] - gone[c]
        if mates > 0 and wealth[j] >= gift:
            pick = int(u[j] * mates)
            mate = arrivals[arrive_from[c] + pick] if pick < earlier else stayers[gone[c] + pick - earlier]
            wealth[j] -= gift
            wealth[mate] += gift
            givers[k], receivers[k] = j, mate
            k += 1
        arrivals[arrived[c]] = j  # j arrives
        arrived[c] += 1
    return new, givers[:k], receivers[:k]


def gini_of_units(units: np.ndarray) -> float:
    """:func:`market.gini` of whole-unit balances by counting instead of sorting (O(N + max units)).

    The sorted balances are runs of equal values, so the numerator sum((2i - n - 1) v_i) is exact in
    integers; both it and the denominator are exact in float64 below 2^53, so the quotient is the same
    float as market.gini's wherever that one's sums are exact too (scaling by the unit cancels).
    """
    n, total = units.size, int(units.sum())
    if total == 0:
        return 0.0
    count = np.bincount(units)
    before = np.cumsum(count) - count  # balances ranked below each value
    return float(int((np.arange(count.size) * count * (2 * before + count - n)).sum()) / (n * total))


class BoltzmannModel(LazyTraders, mesa.Model, Economy):
    """N agents as rows 1..N of a Population (row 0: the house); cells, wealth and gifts as arrays."""

    def __init__(self, cfg: Config, seed: int | None = None):
        super().__init__(rng=seed)
        self.cfg = cfg
        self.width, self.height = grid_shape(cfg)
        self.neighbours, self.degree = moore_table(self.width, self.height, cfg.torus)
        self.gift = to_micro(cfg.unit)
        n = cfg.agents
        self.population = pop = Population(capacity=n + 1)
        self.ledger = Ledger(pop)
        self.rows = pop.allocate(n)  # rows 1..N; nobody is born or dies later
        pop.ids[self.rows] = self.rows
        pop.alive[self.rows] = True
        self.cell = self.rng.integers(self.width * self.height, size=n)  # uniform, as random.choices over cells
        self.ledger.transfer(HOUSE_ROW, self.rows, cfg.initial_units * self.gift, Reason.FUND, 0, -1)
        self.episodes_done = 0  # steps taken (the runner's unit of progress)
        self.last_round: RoundLog | None = None
        self._births = [{"agent_id": int(r), "parent_id": -1, "born_episode": 0, "skill": None} for r in self.rows]
        self.datacollector = mesa.DataCollector(model_reporters={"Gini": lambda m: m.gini()})
        self.datacollector.collect(self)

    @property
    def wealth(self) -> np.ndarray:
        """[N] balances in micro-credits (a view of the population's wealth column)."""
        return self.population.wealth[1 : self.rows.size + 1]

    def gini(self) -> float:
        return gini_of_units(self.wealth // self.gift)

    def step(self) -> None:
        """One step of every agent, in a random order: move, then maybe give one unit to a cellmate."""
        n, rng = self.rows.size, self.rng
        order = rng.permutation(n)  # activation order, as AgentSet.shuffle_do
        new, givers, receivers = play(order, self.cell, rng.random(n), rng.random(n), self.neighbours, self.degree,
                                      self.wealth.copy(), self.gift)
        self.ledger.transfer(self.rows[givers], self.rows[receivers], self.gift, Reason.GIFT, self.episodes_done, 0)
        self.cell = new
        self.episodes_done += 1
        self.last_round = RoundLog(self.ledger.flush(), [], self._births, [])
        self._births = []
        self.datacollector.collect(self)

    def state_dict(self) -> dict:
        return {"population": self.population.state_dict(), "cell": self.cell.copy(),
                "rng": self.rng.bit_generator.state, "random": self.random.getstate(),
                "episodes_done": self.episodes_done, "steps": self.steps,
                "gini": list(self.datacollector.model_vars["Gini"])}

    def load_state_dict(self, state: dict) -> None:
        self.population.load_state_dict(state["population"])
        self.cell = state["cell"].copy()
        self.rng.bit_generator.state = state["rng"]
        self.random.setstate(state["random"])
        self.episodes_done, self.steps = state["episodes_done"], state["steps"]
        self.datacollector.model_vars["Gini"] = list(state["gini"])
        self._births = []


# ------------------------------------------------------------------ the scenario's hooks
def validate(exp) -> None:
    """[market] and [population] configure the auction economy: here they must stay at their defaults."""
    for name, section, default in (("market", exp.market, MarketConfig()),
                                   ("population", exp.population, PopulationConfig())):
        for f in dataclasses.fields(default):
            if getattr(section, f.name) != getattr(default, f.name):
                raise ValueError(f"{name}.{f.name}: does not apply to scenario boltzmann (no auction); "
                                 f"set [boltzmann] keys instead (agents, width, height, torus, initial_units, unit)")


def make_model(exp) -> BoltzmannModel:
    """The runner's hook for a scenario with its own model (see scenarios.registry.Scenario.make_model)."""
    return BoltzmannModel(exp.scenario, seed=exp.run.seed)


def metrics(model: BoltzmannModel, episodes: list[dict], cfg: Config) -> dict:
    """Gini now and its mean over the last 20% of steps; the share of agents with nothing; the richest's units."""
    units = model.wealth // model.gift
    trajectory = np.asarray(model.datacollector.model_vars["Gini"])
    tail = trajectory[len(trajectory) - max(1, (len(trajectory) - 1) // 5):]
    return {
        "agents": int(units.size),
        "grid": [model.width, model.height],
        "gini": round(model.gini(), 6),
        "gini_tail_mean": round(float(tail.mean()), 6),
        "zero_wealth_share": round(float((units == 0).mean()), 6),
        "max_units": int(units.max()),
        "mean_units": float(units.mean()),
    }
