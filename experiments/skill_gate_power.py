"""How large the gate's validation set must be: the planted harmful skills' effect, and the size at which a prune
that costly is refused by the one-standard-error rule with probability 0.9.

    python -m experiments.skill_gate_power [--seeds 5] [--worlds default,sparse] [--harm business] [--rows FILE]
    python -m experiments.skill_gate_power --quick --rows /tmp/power.jsonl   # a test-sized world, one seed

Per recsys world and seed: the start library with the three planted harmful skills; for each planted skill,
the paired per-user differences d = NDCG@k(library) - NDCG@k(library without it) on the validation users.
Pruning a skill that helps this much is "an edit as harmful as the planted ones": its cost is h = -mean(d)
and the spread of its differences sd(d). Two ways to the size n at which the gate refuses such a prune with
probability >= 0.9 (skills/gate.py):

* power calculation (normal approximation): n >= ((prune_se + z_0.9) sd / h)^2 (``skills.gate.required_size``);
* simulation: draw n users with replacement from the measured differences 2,000 times, negate them (the
  prune of a helpful skill) and count how often the one-standard-error rule refuses.

``min_harm`` for ``scenarios/recsys.toml`` is the smallest planted cost over seeds and skills (rounded down),
so every planted skill's prune is at least that costly. One JSON row per (world, seed, skill) and a summary row
per world go to ``--rows`` (default benchmarks/results/skill_gate_power.jsonl), the per-world summaries beside
it (``*_summary.jsonl``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from experiments import harness, rows as results
from experiments.recsys_compare import QUICK as RECSYS_QUICK
from market.store import make_engine
from scenarios.recsys import seeds
from scenarios.recsys.data import VALIDATION
from scenarios.recsys.pipeline import Compiled
from scenarios.recsys.synthetic import SHAPES
from scenarios.recsys.world import load as load_world
from scenarios.run.config import load
from skills import SkillLibrary
from skills.gate import POWER, required_size

OUT = Path("benchmarks/results/skill_gate_power.jsonl")
QUICK = [o for o in RECSYS_QUICK if o.startswith("recsys.")]
"""``--quick``: the recsys comparison's test-sized world."""


def measure(world_name: str, seed: int, harm: str, prune_se: float, overrides: list[str] = (),
            draws: int = 2000) -> list[dict]:
    sets = [f"recsys.harm={harm}", "recsys.plant_harmful=3",
            *(f"recsys.world.{k}={str(v).lower()}" for k, v in SHAPES[world_name].items()), *overrides]
    exp = load("recsys", sets, seed=seed)
    world = load_world(exp.scenario, seed)
    library = SkillLibrary(make_engine("sqlite://"), "power")
    seeds.write_start(library, exp.scenario, world)
    skills, users = library.current(), world.data.users(VALIDATION)
    full = world.pipeline.evaluate(Compiled.of(skills), users)
    rng = np.random.default_rng([seed, 7])
    rows = []
    for name in seeds.planted(3, harm):
        without = world.pipeline.evaluate(Compiled.of([s for s in skills if s.name != name]), users)
        d = without - full  # a prune of the planted skill: a gain; the prune of a skill this useful costs -d
        h, sd = float(d.mean()), float(d.std(ddof=1))
        n_req = required_size(sd, h, prune_se) if h > 0 else None
        sample = -d[rng.integers(0, d.size, (draws, d.size))]  # at the validation size the run uses
        refused = float(np.mean(sample.mean(1) < -prune_se * sample.std(1, ddof=1) / np.sqrt(d.size)))
        rows.append({"world": world_name, "seed": seed, "harm": harm, "skill": name, "harm_ndcg": round(h, 6),
                     "sd": round(sd, 6), "validation_users": int(d.size), "required_users": n_req,
                     "refused_simulated": round(refused, 4)})
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_flags(p, seeds=5, quick="the recsys comparison's test-sized world", rows=OUT,
                      rows_help=f"the rows (default {OUT}), the per-world summaries beside it (*_summary.jsonl)")
    p.add_argument("--worlds", default="default")
    p.add_argument("--harm", default="business", help="business, any_data or both, comma-separated")
    p.add_argument("--prune-se", type=float, default=1.0)
    args = harness.parse(p, argv)
    sets = [*(QUICK if args.quick else []), *args.overrides]
    cells = [(w, h) for w in args.worlds.split(",") for h in args.harm.split(",")]
    start = time.perf_counter()
    measured = harness.run(measure, [(world, seed, harm, args.prune_se, sets) for world, harm in cells
                                     for seed in harness.seeds(args)], args)
    rows = []
    for i, (world, harm) in enumerate(cells):
        per = [r for m in measured[i * args.seeds:(i + 1) * args.seeds] for r in m]
        rows += per
        worst = max(per, key=lambda r: r["required_users"] or 0)
        costs = sorted(r["harm_ndcg"] for r in per)
        rows.append({"world": world, "harm": harm, "summary": True, "median_harm_ndcg": costs[len(costs) // 2],
                     "required_users_at_median": required_size(float(np.median([r["sd"] for r in per])),
                                                               max(costs[len(costs) // 2], 1e-6), args.prune_se),
                     "min_harm_ndcg": round(min(r["harm_ndcg"] for r in per), 6),
                     "required_users_max": worst["required_users"], "validation_users": worst["validation_users"],
                     "refused_simulated_min": min(r["refused_simulated"] for r in per), "power": POWER})
    summary = args.rows.with_name(args.rows.stem + "_summary.jsonl")  # one row per (world, harm): the docs' table
    for path, kept in ((args.rows, [r for r in rows if not r.get("summary")]),
                       (summary, [r for r in rows if r.get("summary")])):
        results.write(path, kept, "experiments.skill_gate_power", argv)
    for r in rows:
        print(json.dumps(r))
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
