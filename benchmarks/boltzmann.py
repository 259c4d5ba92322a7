"""Mesa's own Boltzmann wealth model against the same model on Catallax's engine.

Usage::

    python benchmarks/boltzmann.py            # Gini check (40 seeds) + timings at N = 100, 1k, 10k (~15 s)
    python benchmarks/boltzmann.py --json     # ... and one final JSON line (gini_check, speedup_10k, share_of_limit, ...)
    python benchmarks/boltzmann.py --quick    # smoke run: 12 seeds, one short repeat per size (a few seconds)

The peer is ``mesa.examples.basic.boltzmann_wealth_model.BoltzmannWealth``, exactly as Mesa
ships it: one ``MoneyAgent`` per agent on an ``OrthogonalMooreGrid`` (not a torus), each step
``agents.shuffle_do("step")`` (move to a random neighbouring cell, then give one unit to a
random cellmate if wealth > 0) and ``datacollector.collect`` (Gini + every agent's wealth).
Ours is ``scenarios.boltzmann.BoltzmannModel``: the same rules and random-order schedule in one
compiled call a step (numba: its draws from one key, shuffle, moves, turns and the Gini),
every gift a transfer on the integer ledger (sha256-hashed log), and its DataCollector recording
the Gini each step. The *limit* (:class:`Lean`) is the same model as the leanest kernel we can
write: one compiled function per step on plain arrays, drawing from the same inline generator as ours
(splitmix64), no ledger, no Mesa, no Python per step beyond the call.

Same distribution (the Gini check). Both models run N = 100 agents on Mesa's default
10 x 10 grid for T steps from S independent seeds each. At steps 1, 2, 5, 10, 20, 50, 100
and for the mean over the second half of the run, the difference of the two mean Gini
values is divided by its standard error (Welch): the check passes when every |z| < 4.
As a *control* the same check runs on a tempting shortcut, a synchronous update (everyone
moves, then everyone with a unit at the start of the step gives): it is a different
model, and the check must reject it (it does, by dozens of standard errors), which shows
the check can tell models apart. The limit kernel is checked the same way (it must pass: it
times the same model).

Speed. For N = 100, 1k, 10k (grid side round(sqrt(N)): one agent per cell, as Mesa's
default 100 on 10 x 10), both models are built with the same seed, stepped once to warm
up, then timed over the same number of steps in interleaved repeats (Mesa chunk, Mesa-core
chunk, ours, limit, Mesa, ...). The chunks are the same length for every model (10 steps at N = 10k),
because the first step after another model's chunk runs on cold caches: when the limit ran 10 steps a
chunk and ours 3, that first step alone moved ``share_of_limit`` from 0.94 to 0.76 (12-05).
*Mesa-core* is a second copy of Mesa's model stepped without its DataCollector (``agents.shuffle_do("step")`` only): the cost of the agents alone, against
which our full step (Gini and ledger included) is a conservative ratio. Printed values are
medians over repeats; the ratio is the median of per-repeat ratios, each pair adjacent in
time, so the drift of a shared machine cancels. ``share_of_limit`` is the median of per-repeat
limit / ours: 1 would be the kernel's speed, with ledger, Mesa and Python costing nothing.
Construction time is not timed.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numba  # noqa: E402
import numpy as np  # noqa: E402
from mesa.examples.basic.boltzmann_wealth_model.model import BoltzmannWealth  # noqa: E402

from benchmarks._units import label  # noqa: E402
from market.ledger import Reason  # noqa: E402
from scenarios.boltzmann import BoltzmannModel, Config, moore_kinds, moore_table, splitmix  # noqa: E402

Z_MAX = 4.0
CHECKPOINTS = (1, 2, 5, 10, 20, 50, 100)


class SynchronousShortcut(BoltzmannModel):
    """The control: everyone moves first, then everyone holding a unit at the start of the step gives."""

    def step(self) -> None:
        n, rng = self.rows.size, self.rng
        new = self.neighbours[self.cell, (rng.random(n) * self.degree[self.cell]).astype(np.int64)]
        by_cell = np.argsort(new, kind="stable")
        where = np.empty(n, dtype=np.int64)
        where[by_cell] = np.arange(n)
        first = np.searchsorted(new[by_cell], new)  # where each agent's cell starts in by_cell
        others = np.bincount(new, minlength=self.degree.size)[new] - 1
        givers = np.flatnonzero((others > 0) & (self.wealth >= self.gift))
        pick = first[givers] + (rng.random(n)[givers] * others[givers]).astype(np.int64)
        mates = by_cell[pick + (pick >= where[givers])]  # a uniform other agent of the cell (skips the giver)
        self.ledger.transfer(self.rows[givers], self.rows[mates], self.gift, Reason.GIFT, self.episodes_done, 0)
        self.cell, self.episodes_done = new, self.episodes_done + 1
        self.ledger.flush()
        self.last_gini = self.gini()  # what the reporter reads (ours has play compute it)
        self.datacollector.collect(self)


@numba.njit(cache=True)
def _lean_step(cell, units, kind, offsets, degree, state, order, new, stay_from, arrive_from, stayers, arrivals,
               gone, arrived):
    """One step of the model, draws included, on plain arrays (cells and units in place; the neighbourhood as
    play reads it, a byte per cell and an offset table; the arrays after ``state`` are int32 scratch,
    allocated once, as play's workspace) -> (Gini, state)."""
    n, cells = cell.size, kind.size
    for i in range(n):
        order[i] = i
    for i in range(n - 1, 0, -1):  # Fisher-Yates: a uniform activation order
        x, state = splitmix(state)
        k = int(x * (i + 1))
        order[i], order[k] = order[k], order[i]
    stay_from[:] = 0
    arrive_from[:] = 0
    for j in range(n):
        x, state = splitmix(state)
        c = cell[j]
        new[j] = c + offsets[kind[c], int(x * degree[kind[c]])]
    for j in range(n):  # counted apart, as play does: inside the moves loop these increments stall it
        stay_from[cell[j] + 1] += 1
        arrive_from[new[j] + 1] += 1
    for c in range(cells):
        stay_from[c + 1] += stay_from[c]
        arrive_from[c + 1] += arrive_from[c]
    gone[:] = stay_from[:-1]
    arrived[:] = arrive_from[:-1]
    for j in order:
        stayers[gone[cell[j]]] = j
        gone[cell[j]] += 1
    gone[:] = stay_from[:-1]
    for j in order:  # the turns, as scenarios.boltzmann.play, giving in place
        gone[cell[j]] += 1
        c = new[j]
        earlier = arrived[c] - arrive_from[c]
        mates = earlier + stay_from[c + 1] - gone[c]
        if mates > 0 and units[j] > 0:
            x, state = splitmix(state)
            pick = int(x * mates)
            mate = arrivals[arrive_from[c] + pick] if pick < earlier else stayers[gone[c] + pick - earlier]
            units[j] -= 1
            units[mate] += 1
        arrivals[arrived[c]] = j
        arrived[c] += 1
    cell[:] = new
    count = np.bincount(units)
    numerator, below = 0, 0
    for value in range(count.size):  # Gini by counting, as scenarios.boltzmann.gini_of_units
        numerator += value * count[value] * (2 * below + count[value] - n)
        below += count[value]
    return numerator / (n * units.sum()), state


class Lean:
    """The limit row: the same model as one compiled function per step on plain arrays (no ledger, no Mesa,
    no Python per step beyond the call), with play's memory layout (int32 indices, a byte per cell)."""

    def __init__(self, n: int, side: int, seed: int):
        self.kinds = moore_kinds(*moore_table(side, side, False))
        self.cell = np.random.default_rng(seed).integers(side * side, size=n, dtype=np.int32)
        self.units = np.ones(n, dtype=np.int64)
        self.state = np.uint64(seed)
        self.gini = [0.0]
        cells = side * side
        self.scratch = tuple(np.empty(size, np.int32) for size in (n, n, cells + 1, cells + 1, n, n, cells, cells))

    def step(self) -> None:
        gini, state = _lean_step(self.cell, self.units, *self.kinds, self.state, *self.scratch)
        self.state = np.uint64(state)  # numba hands a uint64 back as a Python int
        self.gini.append(gini)


# ------------------------------------------------------------------------ same distribution
def gini_runs(make, seeds, steps: int) -> np.ndarray:
    """[seeds, steps + 1] Gini trajectories (the model's DataCollector, step 0 included)."""
    runs = []
    for seed in seeds:
        model = make(seed)
        for _ in range(steps):
            model.step()
        runs.append(model.gini if isinstance(model, Lean) else model.datacollector.model_vars["Gini"])
    return np.array(runs, dtype=np.float64)


def z_scores(a: np.ndarray, b: np.ndarray, steps: int) -> dict[str, float]:
    """Welch z of the mean Gini difference at each checkpoint and over the second half of the run."""
    half = steps // 2 + 1
    columns = {f"t={t}": (a[:, t], b[:, t]) for t in CHECKPOINTS if t <= steps}
    columns["tail"] = (a[:, half:].mean(axis=1), b[:, half:].mean(axis=1))
    return {name: float((x.mean() - y.mean()) / math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size))
            for name, (x, y) in columns.items()}


def gini_check(seeds: int, steps: int) -> dict:
    mesa_runs = gini_runs(lambda s: BoltzmannWealth(n=100, width=10, height=10, seed=s), range(seeds), steps)
    ours = gini_runs(lambda s: BoltzmannModel(Config(agents=100, width=10, height=10), seed=s),
                     range(10_000, 10_000 + seeds), steps)
    control = gini_runs(lambda s: SynchronousShortcut(Config(agents=100, width=10, height=10), seed=s),
                        range(20_000, 20_000 + seeds), steps)
    lean = gini_runs(lambda s: Lean(100, 10, seed=s), range(30_000, 30_000 + seeds), steps)
    z, zc, zl = z_scores(ours, mesa_runs, steps), z_scores(control, mesa_runs, steps), z_scores(lean, mesa_runs, steps)
    half = steps // 2 + 1
    print(f"Gini check: N=100 on 10x10, {steps} steps, {seeds} seeds per model; Welch z of the mean difference "
          f"(pass: every |z| < {Z_MAX:g})")
    print(f"  {'':8} {'Mesa':>7} {'ours':>7} {'z':>6}   {'limit':>7} {'z':>6}   {'sync shortcut':>13} {'z':>7}")
    for name in z:
        col = (lambda r: r[:, half:].mean(axis=1)) if name == "tail" else (lambda r, t=int(name[2:]): r[:, t])
        print(f"  {name:8} {col(mesa_runs).mean():7.4f} {col(ours).mean():7.4f} {z[name]:6.2f}   "
              f"{col(lean).mean():7.4f} {zl[name]:6.2f}   {col(control).mean():13.4f} {zc[name]:7.1f}")
    worst = {name: max(map(abs, v.values())) for name, v in (("ours", z), ("limit", zl), ("control", zc))}
    ok, lean_ok, caught = worst["ours"] < Z_MAX, worst["limit"] < Z_MAX, worst["control"] >= Z_MAX
    print(f"  same distribution: {ok}   (limit kernel: {lean_ok}; control rejected: {caught})")
    return {"gini_check": ok, "gini_max_z": round(worst["ours"], 2), "gini_seeds": seeds,
            "gini_steps": steps, "gini_mesa_tail": round(float(mesa_runs[:, half:].mean()), 4),
            "gini_ours_tail": round(float(ours[:, half:].mean()), 4), "limit_gini_check": lean_ok,
            "limit_max_z": round(worst["limit"], 2), "control_max_z": round(worst["control"], 1),
            "control_rejected": caught}


# ------------------------------------------------------------------------------------ speed
def timed(step, k: int) -> float:
    start = time.perf_counter()
    for _ in range(k):
        step()
    return (time.perf_counter() - start) / k


def bench(n: int, steps: int, repeats: int, seed: int = 1) -> dict:
    side = round(math.sqrt(n))
    mesa_full = BoltzmannWealth(n=n, width=side, height=side, seed=seed)
    mesa_core = BoltzmannWealth(n=n, width=side, height=side, seed=seed)
    ours = BoltzmannModel(Config(agents=n, width=side, height=side), seed=seed)
    lean = Lean(n, side, seed)
    core_step = lambda: mesa_core.agents.shuffle_do("step")  # noqa: E731
    for step in (mesa_full.step, core_step, ours.step, lean.step):  # warm-up (and the kernels' first call)
        step()
    full, core, mine, limit = [], [], [], []
    for _ in range(repeats):  # interleaved
        full.append(timed(mesa_full.step, steps))
        core.append(timed(core_step, steps))
        mine.append(timed(ours.step, steps))
        limit.append(timed(lean.step, steps))
    return {"N": n, "side": side, "steps": steps * repeats,
            "mesa_ms": 1e3 * statistics.median(full), "core_ms": 1e3 * statistics.median(core),
            "ours_ms": 1e3 * statistics.median(mine), "limit_ms": 1e3 * statistics.median(limit),
            "speedup": statistics.median(f / m for f, m in zip(full, mine)),
            "speedup_core": statistics.median(c / m for c, m in zip(core, mine)),
            "share_of_limit": statistics.median(lim / m for lim, m in zip(limit, mine))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 12 seeds, one short repeat per size")
    ap.add_argument("--json", action="store_true", help="print one final JSON line with the check and the ratios")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    check = gini_check(seeds=12, steps=30) if args.quick else gini_check(seeds=40, steps=100)

    # N -> (steps per repeat, repeats)
    plan = {100: (5, 1), 1000: (3, 1), 10000: (1, 1)} if args.quick else {100: (50, 9), 1000: (20, 9), 10000: (10, 9)}
    print("\nms per step (medians of interleaved repeats; same steps for every model):")
    print(f"  {'N':>6} {'grid':>8} {'steps':>5} {'Mesa':>9} {'Mesa-core':>10} {'ours':>8} {'limit':>8} {'speedup':>8} "
          f"{'vs core':>8} {'of limit':>8}")
    rows = []
    for n, (steps, repeats) in plan.items():
        r = bench(n, steps, repeats)
        rows.append(r)
        print(f"  {n:>6} {r['side']:>3}x{r['side']:<4} {r['steps']:>5} {r['mesa_ms']:>9.2f} {r['core_ms']:>10.2f} "
              f"{r['ours_ms']:>8.3f} {r['limit_ms']:>8.3f} {r['speedup']:>7.1f}x {r['speedup_core']:>7.1f}x "
              f"{r['share_of_limit']:>8.2f}", flush=True)
    print(f"\nwall time: {time.perf_counter() - t0:.1f} s")
    if args.json:
        out = dict(check)
        for r in rows:
            out |= {f"speedup_{label(r['N'])}": round(r["speedup"], 2),
                    f"speedup_core_{label(r['N'])}": round(r["speedup_core"], 2),
                    f"mesa_ms_{label(r['N'])}": round(r["mesa_ms"], 3),
                    f"ours_ms_{label(r['N'])}": round(r["ours_ms"], 4),
                    f"limit_ms_{label(r['N'])}": round(r["limit_ms"], 4),
                    f"share_of_limit_{label(r['N'])}": round(r["share_of_limit"], 3)}
        out["share_of_limit"] = out["share_of_limit_10k"]
        print(json.dumps(out))
    return 0 if check["gini_check"] and check["limit_gini_check"] else 1


if __name__ == "__main__":
    sys.exit(main())
