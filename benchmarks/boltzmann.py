"""Mesa's own Boltzmann wealth model against the same model on Catallax's engine.

Usage::

    python benchmarks/boltzmann.py            # Gini check (40 seeds) + timings at N = 100, 1k, 10k (~15 s)
    python benchmarks/boltzmann.py --json     # ... and one final JSON line (gini_check, speedup_10k, ...)
    python benchmarks/boltzmann.py --quick    # smoke run: 12 seeds, one short repeat per size (a few seconds)

The peer is ``mesa.examples.basic.boltzmann_wealth_model.BoltzmannWealth``, exactly as Mesa
ships it: one ``MoneyAgent`` per agent on an ``OrthogonalMooreGrid`` (not a torus), each step
``agents.shuffle_do("step")`` (move to a random neighbouring cell, then give one unit to a
random cellmate if wealth > 0) and ``datacollector.collect`` (Gini + every agent's wealth).
Ours is ``scenarios.boltzmann.BoltzmannModel``: the same rules and random-order schedule as
array operations, every gift a transfer on the integer ledger (sha256-hashed log), and its
DataCollector recording the Gini each step.

Same distribution (the Gini check). Both models run N = 100 agents on Mesa's default
10 x 10 grid for T steps from S independent seeds each. At steps 1, 2, 5, 10, 20, 50, 100
and for the mean over the second half of the run, the difference of the two mean Gini
values is divided by its standard error (Welch): the check passes when every |z| < 4.
As a *control* the same check runs on a tempting shortcut, a synchronous update (everyone
moves, then everyone with a unit at the start of the step gives): it is a different
model, and the check must reject it (it does, by dozens of standard errors), which shows
the check can tell models apart.

Speed. For N = 100, 1k, 10k (grid side round(sqrt(N)): one agent per cell, as Mesa's
default 100 on 10 x 10), both models are built with the same seed, stepped once to warm
up, then timed over the same number of steps in interleaved repeats (Mesa chunk, Mesa-core
chunk, ours, Mesa, ...). *Mesa-core* is a second copy of Mesa's model stepped without its
DataCollector (``agents.shuffle_do("step")`` only): the cost of the agents alone, against
which our full step (Gini and ledger included) is a conservative ratio. Printed values are
medians over repeats; the ratio is the median of per-repeat ratios, each pair adjacent in
time, so the drift of a shared machine cancels. Construction time is not timed.
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

import numpy as np  # noqa: E402
from mesa.examples.basic.boltzmann_wealth_model.model import BoltzmannWealth  # noqa: E402

from benchmarks._units import label  # noqa: E402
from market.ledger import Reason  # noqa: E402
from scenarios.boltzmann import BoltzmannModel, Config, cellmates  # noqa: E402

Z_MAX = 4.0
CHECKPOINTS = (1, 2, 5, 10, 20, 50, 100)


class SynchronousShortcut(BoltzmannModel):
    """The control: everyone moves first, then everyone holding a unit at the start of the step gives."""

    def step(self) -> None:
        n, rng = self.rows.size, self.rng
        new = self.neighbours[self.cell, (rng.random(n) * self.degree[self.cell]).astype(np.int64)]
        mate = cellmates(new, new, rng.permutation(n), rng.random(n), self.degree.size)  # old = new: all moved
        givers = np.flatnonzero((mate >= 0) & (self.wealth >= self.gift))
        self.ledger.transfer(self.rows[givers], self.rows[mate[givers]], self.gift, Reason.GIFT, self.episodes_done, 0)
        self.cell, self.episodes_done = new, self.episodes_done + 1
        self.ledger.flush()
        self.datacollector.collect(self)


# ------------------------------------------------------------------------ same distribution
def gini_runs(make, seeds, steps: int) -> np.ndarray:
    """[seeds, steps + 1] Gini trajectories (the model's DataCollector, step 0 included)."""
    runs = []
    for seed in seeds:
        model = make(seed)
        for _ in range(steps):
            model.step()
        runs.append(model.datacollector.model_vars["Gini"])
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
    z, zc = z_scores(ours, mesa_runs, steps), z_scores(control, mesa_runs, steps)
    half = steps // 2 + 1
    print(f"Gini check: N=100 on 10x10, {steps} steps, {seeds} seeds per model; Welch z of the mean difference "
          f"(pass: every |z| < {Z_MAX:g})")
    print(f"  {'':8} {'Mesa':>7} {'ours':>7} {'z':>6}   {'sync shortcut':>13} {'z':>7}")
    for name in z:
        col = (lambda r: r[:, half:].mean(axis=1)) if name == "tail" else (lambda r, t=int(name[2:]): r[:, t])
        print(f"  {name:8} {col(mesa_runs).mean():7.4f} {col(ours).mean():7.4f} {z[name]:6.2f}   "
              f"{col(control).mean():13.4f} {zc[name]:7.1f}")
    ok, caught = max(map(abs, z.values())) < Z_MAX, max(map(abs, zc.values())) >= Z_MAX
    print(f"  same distribution: {ok}   (control rejected: {caught})")
    return {"gini_check": ok, "gini_max_z": round(max(map(abs, z.values())), 2), "gini_seeds": seeds,
            "gini_steps": steps, "gini_mesa_tail": round(float(mesa_runs[:, half:].mean()), 4),
            "gini_ours_tail": round(float(ours[:, half:].mean()), 4), "control_max_z": round(max(map(abs, zc.values())), 1),
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
    core_step = lambda: mesa_core.agents.shuffle_do("step")  # noqa: E731
    for step in (mesa_full.step, core_step, ours.step):  # warm-up
        step()
    full, core, mine = [], [], []
    for _ in range(repeats):  # interleaved
        full.append(timed(mesa_full.step, steps))
        core.append(timed(core_step, steps))
        mine.append(timed(ours.step, steps))
    return {"N": n, "side": side, "steps": steps * repeats,
            "mesa_ms": 1e3 * statistics.median(full), "core_ms": 1e3 * statistics.median(core),
            "ours_ms": 1e3 * statistics.median(mine),
            "speedup": statistics.median(f / m for f, m in zip(full, mine)),
            "speedup_core": statistics.median(c / m for c, m in zip(core, mine))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 12 seeds, one short repeat per size")
    ap.add_argument("--json", action="store_true", help="print one final JSON line with the check and the ratios")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    check = gini_check(seeds=12, steps=30) if args.quick else gini_check(seeds=40, steps=100)

    # N -> (steps per repeat, repeats)
    plan = {100: (5, 1), 1000: (3, 1), 10000: (1, 1)} if args.quick else {100: (50, 9), 1000: (20, 9), 10000: (3, 9)}
    print("\nms per step (medians of interleaved repeats; same steps for every model):")
    print(f"  {'N':>6} {'grid':>8} {'steps':>5} {'Mesa':>9} {'Mesa-core':>10} {'ours':>8} {'speedup':>8} {'vs core':>8}")
    rows = []
    for n, (steps, repeats) in plan.items():
        r = bench(n, steps, repeats)
        rows.append(r)
        print(f"  {n:>6} {r['side']:>3}x{r['side']:<4} {r['steps']:>5} {r['mesa_ms']:>9.2f} {r['core_ms']:>10.2f} "
              f"{r['ours_ms']:>8.3f} {r['speedup']:>7.1f}x {r['speedup_core']:>7.1f}x", flush=True)
    print(f"\nwall time: {time.perf_counter() - t0:.1f} s")
    if args.json:
        out = dict(check)
        for r in rows:
            out |= {f"speedup_{label(r['N'])}": round(r["speedup"], 2),
                    f"speedup_core_{label(r['N'])}": round(r["speedup_core"], 2),
                    f"mesa_ms_{label(r['N'])}": round(r["mesa_ms"], 3), f"ours_ms_{label(r['N'])}": round(r["ours_ms"], 4)}
        print(json.dumps(out))
    return 0 if check["gini_check"] else 1


if __name__ == "__main__":
    sys.exit(main())
