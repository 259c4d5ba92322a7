"""How large the gate's validation set must be: the planted harmful skills' effect, and the size at which a prune
that costly is refused by the one-standard-error rule with probability 0.9.

    python -m experiments.skill_gate_power [--seeds 5] [--worlds default,sparse] [--harm business] [--out FILE]

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
per world go to ``--out`` (default benchmarks/results/skill_gate_power.jsonl), the per-world summaries beside
it (``*_summary.jsonl``).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

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


def measure(world_name: str, seed: int, harm: str, prune_se: float, draws: int = 2000) -> list[dict]:
    sets = [f"recsys.harm={harm}", "recsys.plant_harmful=3",
            *(f"recsys.world.{k}={str(v).lower()}" for k, v in SHAPES[world_name].items())]
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
    p.add_argument("--worlds", default="default")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--harm", default="business", help="business, any_data or both, comma-separated")
    p.add_argument("--prune-se", type=float, default=1.0)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    meta = {"command": " ".join(["python -m experiments.skill_gate_power", *(sys.argv[1:] if argv is None else argv)]),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "commit": commit,
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, shared 2 cores"}
    rows, start = [], time.perf_counter()
    for world, harm in ((w, h) for w in args.worlds.split(",") for h in args.harm.split(",")):
        per = [r for seed in range(args.seeds) for r in measure(world, seed, harm, args.prune_se)]
        rows += per
        worst = max(per, key=lambda r: r["required_users"] or 0)
        costs = sorted(r["harm_ndcg"] for r in per)
        rows.append({"world": world, "harm": harm, "summary": True, "median_harm_ndcg": costs[len(costs) // 2],
                     "required_users_at_median": required_size(float(np.median([r["sd"] for r in per])),
                                                               max(costs[len(costs) // 2], 1e-6), args.prune_se),
                     "min_harm_ndcg": round(min(r["harm_ndcg"] for r in per), 6),
                     "required_users_max": worst["required_users"], "validation_users": worst["validation_users"],
                     "refused_simulated_min": min(r["refused_simulated"] for r in per), "power": POWER})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = args.out.with_name(args.out.stem + "_summary.jsonl")  # one row per (world, harm): the docs' table
    for path, kept in ((args.out, [r for r in rows if not r.get("summary")]), (summary, [r for r in rows if r.get("summary")])):
        with open(path, "w") as f:
            for r in kept:
                f.write(json.dumps({**r, **meta}) + "\n")
    for r in rows:
        print(json.dumps(r))
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
