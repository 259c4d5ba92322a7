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
random numbers): each step draws one key from the model's generator, then :func:`play`
draws the step's uniforms from it as it goes (splitmix64, a few cycles each),
shuffles the turns and runs them one by one, since a turn depends
on the ones before it (an agent can give only if it had a unit at its turn: one
it started with, or one an earlier agent gave it). That is one compiled (numba)
call per step, a few passes over flat arrays with no per-agent objects, sized to
stay in cache (int32 indices; a byte per cell for the neighbourhood). It only
decides the gifts, on scratch balances, and returns the Gini they leave, which
the DataCollector's reporter reads; every unit moves through
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
from market.model import RoundLog
from market.money import MAX_CREDITS
from market.protocols import Economy
from market.strict import STRICT


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


def moore_kinds(table: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`moore_table` as offsets -> (each cell's kind [cells], each kind's offsets [kinds, 8], count [kinds]).

    Cells whose neighbours lie at the same offsets share a kind (the interior, each edge, each corner: at
    most 9), so ``c + offsets[kind[c], m]`` is ``table[c, m]``: the step's random lookups read one byte per
    cell instead of a 64-byte table row, which would mostly be cache misses once other work has run.
    """
    offsets = np.where(table >= 0, table - np.arange(count.size)[:, None], 0)
    rows, kind = np.unique(np.column_stack([offsets, count]), axis=0, return_inverse=True)
    return kind.astype(np.uint8), rows[:, :8].astype(np.int32), rows[:, 8].astype(np.int32)


@numba.njit(cache=True)
def gini_of_units(units):
    """:func:`market.gini` of whole-unit balances by counting instead of sorting (O(N + max units)).

    The sorted balances are runs of equal values, so the numerator sum((2i - n - 1) v_i) is exact in
    integers; both it and the denominator are exact in float64 below 2^53, so the quotient is the same
    float as market.gini's wherever that one's sums are exact too (scaling by the unit cancels).
    """
    n, count = units.size, np.bincount(units)
    numerator, below, total = 0, 0, 0
    for value in range(count.size):
        numerator += value * count[value] * (2 * below + count[value] - n)
        below += count[value]
        total += value * count[value]
    return numerator / (n * total) if total else 0.0


def workspace(n: int, cells: int) -> tuple[np.ndarray, ...]:
    """The arrays :func:`play` overwrites every step, made once per model: allocated inside each call they would
    be fresh pages every step, which a large economy pays for with cold caches."""
    order, old, new = (np.empty(n, np.int32) for _ in range(3))
    units, givers, receivers = (np.empty(n, np.int64) for _ in range(3))
    start, end, slots = np.empty(cells + 1, np.int32), np.empty(cells, np.int32), np.empty(2 * n, np.int32)
    return order, old, new, units, start, end, slots, givers, receivers


@numba.njit(inline="always")
def splitmix(state):
    """One draw of splitmix64 (Steele, Lea & Flood 2014) -> (a uniform double in [0, 1), the next state).

    A step's uniforms are this stream from a key the model's numpy Generator draws once a step, so the
    run stays determined by its seed and checkpointed by the Generator's state, while the draws cost a few
    cycles each inside the kernel instead of a 2N-double array filled and read back.
    """
    state += np.uint64(0x9E3779B97F4A7C15)
    z = (state ^ (state >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return ((z ^ (z >> np.uint64(31))) >> np.uint64(11)) * (1.0 / 9007199254740992.0), state


@numba.njit(cache=True, nogil=True)  # the ledger's hashing thread runs beside it
def play(key, cell, wealth, gift, kind, offsets, degree, order, old, new, units, start, end, slots, givers,
         receivers):
    """One step of Mesa's schedule from the uniforms of stream ``key`` (:func:`splitmix`) -> (givers,
    receivers: rows, in activation order; the Gini of the balances after the gifts). ``cell`` is moved in
    place; ``wealth`` (each agent's micro-credits, ``gift`` a unit) is only read; the arrays after ``degree``
    are :func:`workspace`'s scratch, and the givers and receivers returned are views of its last two.

    The stream's first N - 1 uniforms shuffle the agents (Fisher-Yates, as ``shuffle_do``: agent ``order[p]``
    acts p-th), the next N move them in turn order (to neighbour ``floor(u * degree)`` of the agent's cell),
    and then, in turn order, each agent that gives draws one more to pick the cellmate it gives a unit to: an
    agent gives if it holds a unit at its turn (``units``: its whole units by turn, a scratch copy) and has a
    cellmate. The cellmates are the agents in its new cell at that moment: those that were there at the
    start of the step and have not moved yet, then those that moved in, each in turn order. Each cell keeps
    them as one window of ``slots`` (turn indices, a segment per cell sized for its stayers and its arrivals):
    leaving advances the window's start, arriving appends at its end. Every loop after the shuffle runs in
    turn order and writes by turn; the moves loop reads each agent's cell and wealth at random, and counts
    the cells' stayers and arrivals in a loop of its own.
    """
    n, cells, state = cell.size, kind.size, np.uint64(key)
    for i in range(n):
        order[i] = i
    for i in range(n - 1, 0, -1):
        x, state = splitmix(state)
        k = int(x * (i + 1))
        order[i], order[k] = order[k], order[i]
    start[:] = 0  # cell c's segment size (at c + 1), then where it starts
    for p in range(n):  # every move, in turn order: only the agent's own cell and wealth are read at random
        a = order[p]
        c = cell[a]
        x, state = splitmix(state)
        to = c + offsets[kind[c], int(x * degree[kind[c]])]
        cell[a], old[p], new[p], units[p] = to, c, to, wealth[a] // gift
    for p in range(n):  # counted apart: inside the moves loop these increments more than doubled its time
        start[old[p] + 1] += 1
        start[new[p] + 1] += 1
    for c in range(cells):
        start[c + 1] += start[c]
    end[:] = start[:-1]  # per cell: its window is slots[start[c]:end[c]]
    for p in range(n):  # the stayers, in turn order
        slots[end[old[p]]] = p
        end[old[p]] += 1
    k = 0
    for p in range(n):  # the turns
        start[old[p]] += 1  # leaves its cell (it is the first stayer left there)
        c = new[p]
        mates = end[c] - start[c]
        if mates > 0 and units[p] > 0:
            x, state = splitmix(state)
            q = slots[start[c] + int(x * mates)]
            units[p] -= 1
            units[q] += 1
            givers[k], receivers[k] = order[p] + 1, order[q] + 1  # agent i is row i + 1
            k += 1
        slots[end[c]] = p  # arrives
        end[c] += 1
    return givers[:k], receivers[:k], gini_of_units(units)


class BoltzmannModel(LazyTraders, mesa.Model, Economy):
    """N agents as rows 1..N of a Population (row 0: the house); cells, wealth and gifts as arrays."""

    def __init__(self, cfg: Config, seed: int | None = None):
        super().__init__(rng=seed)
        self.cfg = cfg
        self.width, self.height = grid_shape(cfg)
        self.neighbours, self.degree = moore_table(self.width, self.height, cfg.torus)
        self.kinds = moore_kinds(self.neighbours, self.degree)  # the same neighbourhood, as play reads it
        self.gift = to_micro(cfg.unit)
        n = cfg.agents
        self.population = pop = Population(capacity=n + 1)
        self.ledger = Ledger(pop)
        self.rows = pop.allocate(n)  # rows 1..N; nobody is born or dies later
        pop.ids[self.rows] = self.rows
        pop.alive[self.rows] = True
        self.cell = self.rng.integers(self.width * self.height, size=n, dtype=np.int32)  # uniform, as Mesa's
        self._workspace = workspace(n, self.width * self.height)
        self.ledger.transfer(HOUSE_ROW, self.rows, cfg.initial_units * self.gift, Reason.FUND, 0, -1)
        self.episodes_done = 0  # steps taken (the runner's unit of progress)
        self.last_round: RoundLog | None = None
        self._births = [{"agent_id": int(r), "parent_id": -1, "born_episode": 0, "skill": None} for r in self.rows]
        self.last_gini = self.gini()  # the Gini after the last step (play returns it)
        self.datacollector = mesa.DataCollector(model_reporters={"Gini": lambda m: m.last_gini})
        self.datacollector.collect(self)

    @property
    def wealth(self) -> np.ndarray:
        """[N] balances in micro-credits (a view of the population's wealth column)."""
        return self.population.wealth[1 : self.rows.size + 1]

    def units(self) -> np.ndarray:
        """[N] balances in whole units (each is a whole number of them: funding and gifts move whole units)."""
        return self.wealth // self.gift

    def gini(self) -> float:
        return gini_of_units(self.units())

    def step(self) -> None:
        """One step of every agent, in a random order: move, then maybe give one unit to a cellmate."""
        key = np.uint64(self.rng.bit_generator.random_raw())  # the step's stream of uniforms (play's splitmix)
        givers, receivers, self.last_gini = play(key, self.cell, self.wealth, self.gift, *self.kinds,
                                                 *self._workspace)
        self.ledger.transfer(givers, receivers, self.gift, Reason.GIFT, self.episodes_done, 0)
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
        self.cell = state["cell"].astype(np.int32)
        self.rng.bit_generator.state = state["rng"]
        self.random.setstate(state["random"])
        self.episodes_done, self.steps = state["episodes_done"], state["steps"]
        self.datacollector.model_vars["Gini"] = list(state["gini"])
        self.last_gini = self.gini()
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
    units = model.units()
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
