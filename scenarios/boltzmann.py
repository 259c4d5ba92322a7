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

Here the same rules run as array operations over all N agents, with the
random-order schedule reproduced exactly (same distribution, other random
numbers). At its turn, agent j's cellmates are the agents *earlier* in the
order that moved into j's new cell and the agents *later* in the order that
have not moved yet and still sit there (:func:`cellmates`). Whether j can give
depends on whether it had a unit at its turn: a unit it started the step with,
or one received from an agent earlier in the order; that is a fixed point
found in a few passes (:meth:`BoltzmannModel.step`). Every unit moves through
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
import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from market import HOUSE_ROW, Ledger, MarketConfig, Population, PopulationConfig, Reason, gini, to_micro
from market.agent import Trader
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


def cellmates(old: np.ndarray, new: np.ndarray, order: np.ndarray, u: np.ndarray, cells: int) -> np.ndarray:
    """For each agent j, a uniformly random cellmate at its turn (index into the agents; -1: alone).

    ``order`` lists the agents in activation order. At j's turn, cell new[j]
    holds the agents earlier in the order that moved there and the later ones
    that have not moved yet and still sit there. One stable sort of every
    agent's departure (old cell) and arrival (new cell) events, taken in
    activation order, groups them by cell with the order kept inside each
    cell: before j's arrival lie its earlier cellmates' arrivals, after it the
    departures of its later ones. ``u`` (uniform [0, 1)) picks one of them.
    """
    n = order.size
    events = np.empty(2 * n, dtype=np.uint16 if cells <= 1 << 16 else np.int64)  # uint16: numpy's radix sort
    events[0::2], events[1::2] = old[order], new[order]
    by_cell = np.argsort(events, kind="stable")
    split = np.argsort((by_cell & 1).astype(np.uint8), kind="stable")  # departures first, arrivals last
    agent = order[by_cell >> 1]
    stayers, arrivals = agent[split[:n]], agent[split[n:]]  # per cell, by turn: its first occupants; its arrivals
    arrivals_from = np.zeros(cells + 1, dtype=np.int64)  # where each cell's run starts in ``arrivals``
    np.cumsum(np.bincount(new, minlength=cells), out=arrivals_from[1:])
    stayers_from = np.zeros(cells + 1, dtype=np.int64)  # ... and in ``stayers``
    np.cumsum(np.bincount(old, minlength=cells), out=stayers_from[1:])

    cell = new[arrivals]  # from here on, agents in the order of ``arrivals``
    earlier = np.arange(n) - arrivals_from[cell]  # moved into the cell before this agent's turn
    later_from = split[n:] - np.arange(n)  # departures sorted before this arrival: the first later occupant
    later = stayers_from[cell + 1] - later_from
    pick = (u[arrivals] * (earlier + later)).astype(np.int64)
    pool = np.concatenate([arrivals, stayers, [-1]])  # the pick indexes arrivals, then stayers; 2n: alone
    at = np.where(pick < earlier, arrivals_from[cell] + pick, n + later_from + pick - earlier)
    mate = np.empty(n, dtype=np.int64)
    mate[arrivals] = pool[np.where(earlier + later == 0, 2 * n, at)]
    return mate


class BoltzmannModel(mesa.Model, Economy):
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
        self.traders = {row: Trader(self, row, row) for row in self.rows.tolist()}  # the Mesa face: model.agents
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
        return gini(self.wealth)

    def step(self) -> None:
        """One step of every agent, in a random order: move, then maybe give one unit to a cellmate."""
        n, rng = self.rows.size, self.rng
        order = rng.permutation(n)  # activation order, as AgentSet.shuffle_do
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        old = self.cell
        new = self.neighbours[old, (rng.random(n) * self.degree[old]).astype(np.int64)]
        mate = cellmates(old, new, order, rng.random(n), self.neighbours.shape[0])

        # j gives iff it has a cellmate and a unit at its turn: its own, or one from an earlier giver.
        # Start from the agents with a unit of their own; each pass adds the broke agents that the
        # previous pass's new givers fund at an earlier turn (chains are short: a few passes).
        has_mate = mate >= 0
        gives = has_mate & (self.wealth >= self.gift)
        added = np.flatnonzero(gives)
        while added.size:
            to = mate[added]
            to = to[(rank[added] < rank[to]) & has_mate[to] & ~gives[to]]  # funded before its turn
            gives[to] = True
            added = np.unique(to)
        givers = order[gives[order]]  # the log lists gifts in activation order
        self.ledger.transfer(self.rows[givers], self.rows[mate[givers]], self.gift, Reason.GIFT, self.episodes_done, 0)
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
