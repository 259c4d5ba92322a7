"""procurement's market arms against its complete agent, paired by seed: the text-world issue's table.

    python -m experiments.procurement_compare                     # 3 arms x seeds 0-4 at the sizes below
    python -m experiments.procurement_compare --arms holland --seeds 2 --workers 1
    python -m experiments.procurement_compare --quick --rows /tmp/procurement.jsonl   # toy size: a smoke run
    python -m experiments.procurement_compare --report            # the table of the runs already logged

Each run is ``catallax run procurement --seed S`` with the arm's keys and ``SIZE`` (a small size: 2
shared CPU cores run SmolLM2-135M at a few dozen tokens a second), through the runner into a temporary
SQLite file. Every run also measures, on the same held-out problems (the ``heldout_seed`` stream, so the
same in every run), the **complete agent** (one negotiator holding the whole pool, wrong worked examples
included, every tool, the summed token budget; scenarios/text/scenario.py) and the **curated** one
(without the planted wrong lines); both are greedy, so they score the same in every run. A row adds the
splitter tool alone (no model), computed here: what a market that routes every turn to it scores.

The arms: the market under ``fixed`` bids (every awake agent bids the same: routing by chance),
``holland`` bids (wealth routes) and ``learned`` value bids (first-price clearing, as wordmath's table).
Each finished run lands in ``--log`` (one JSON object a run); the table's rows go to ``--rows``, by default
benchmarks/results/procurement_compare.jsonl (one object per row, with the command, date, the runs' commit, the
machine and the size), which docs/tutorials/llm_world.md shows between table markers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from experiments import harness, rows as results

ARMS = {
    "fixed": ["market.bid_scheme=fixed"],
    "holland": ["market.bid_scheme=holland"],
    "learned": ["market.bid_scheme=learned", "market.clearing=first_price"],
}
SIZE = ["run.episodes=24", "procurement.heldout=8", "procurement.llm.threads=1"]
QUICK = ["run.episodes=8", "procurement.heldout=2", "procurement.llm.threads=1"]
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "procurement_compare.jsonl"
KEEP = ("heldout_reward", "heldout_success", "complete_agent_reward", "curated_agent_reward", "train_success_rate",
        "ledger_hash", "invalid_actions", "actions", "roles", "llm_tokens", "conservation_ok")


def run_arm(arm: str, seed: int, size: list[str], commit: str) -> dict:
    """One procurement run of one arm and seed -> its summary's comparable numbers (and the commit it ran at)."""
    from scenarios.run.config import load
    from scenarios.run.runner import run_experiment

    exp = load("procurement", [*ARMS[arm], *size], seed=seed)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        m = run_experiment(exp, f"sqlite:///{Path(folder) / 'run.db'}", progress=False)
    return {"arm": arm, "seed": seed, "seconds": round(time.perf_counter() - start, 1), "commit": commit,
            **{k: m[k] for k in KEEP}}


def rows_of(runs: list[dict]) -> list[dict]:
    """The table: the two complete agents, then one row per arm with its per-seed rewards and each seed's
    difference from the complete agent of the same run (paired by seed)."""
    seeds = sorted({r["seed"] for r in runs})
    by = {(r["arm"], r["seed"]): r for r in runs}
    first = {s: next(r for r in runs if r["seed"] == s) for s in seeds}
    out = []
    for name, key in (("complete agent (whole pool, every tool, summed budget)", "complete_agent_reward"),
                      ("curated complete agent (no planted wrong lines)", "curated_agent_reward")):
        values = [first[s][key] for s in seeds]
        out.append({"agent": name, "reward": harness.mean_sd(values, 3), "per_seed": _joined(values), "minus_complete": "",
                    "success": "", "seeds": len(seeds)})
    alone = splitter_alone()
    out.append({"agent": "splitter tool alone (no LLM)", "reward": f"{alone:.3f}", "per_seed": "", "minus_complete": "",
                "success": "", "seeds": 0})
    for arm in [a for a in ARMS if any(r["arm"] == a for r in runs)]:
        mine = [by[arm, s] for s in seeds if (arm, s) in by]
        values = [r["heldout_reward"] for r in mine]
        gaps = [r["heldout_reward"] - r["complete_agent_reward"] for r in mine]
        out.append({"agent": f"market, {arm} bids", "reward": harness.mean_sd(values, 3), "per_seed": _joined(values),
                    "minus_complete": " ".join(f"{g:+.3f}" for g in gaps),
                    "success": f"{np.mean([r['heldout_success'] for r in mine]):.2f}", "seeds": len(mine)})
    return out


def splitter_alone(heldout: int = 8, seed: int = 10_000) -> float:
    """The splitter tool playing every turn of the held-out problems alone (no model: exact, the same in every
    run): what a market that routes every turn to it scores."""
    from scenarios.procurement import Procurement, split

    world, rewards = Procurement(), []
    for pid in range(heldout):
        state = world.start(world.problem(np.random.default_rng([seed, pid])))
        for _ in range(world.horizon):
            if world.done(state) or world.act(state, "splitter", split(state)):
                break
        rewards.append(world.reward(state) if world.done(state) else 0.0)
    return float(np.mean(rewards))


def markdown(rows: list[dict]) -> str:
    cols = ("agent", "reward", "per_seed", "minus_complete", "success")
    return harness.markdown(list(cols), [[r[c] for c in cols] for r in rows])


def _joined(values: list[float]) -> str:
    return " ".join(f"{v:.3f}" for v in values)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_flags(parser, seeds=5, workers=2, quick="8 episodes, 2 held-out problems", rows=RESULTS,
                      rows_help=f"the table's rows with their provenance (default {RESULTS.relative_to(ROOT)})")
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--log", type=Path, default=Path("runs/procurement_compare.runs.jsonl"))
    parser.add_argument("--report", action="store_true", help="run nothing: the table of the runs in --log")
    args = harness.parse(parser, argv)
    head = results.commit()
    size = [*(QUICK if args.quick else SIZE), *args.overrides]
    if not args.report:
        jobs = [(arm, seed, size, head) for seed in harness.seeds(args) for arm in args.arms]
        harness.run(run_arm, jobs, args, on_result=harness.logged(
            args.log, lambda r: f"{r['arm']} seed {r['seed']}: reward {r['heldout_reward']:.3f} ({r['seconds']:.0f} s)"))
    runs = harness.read_log(args.log)
    rows = rows_of(runs)
    commit = " ".join(sorted({r.get("commit", head) for r in runs}))  # the runs' (the table's code is the same)
    given = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--report"]  # the runs' command
    if args.rows:
        results.write(args.rows, rows, "experiments.procurement_compare", given, commit=commit, size=" ".join(size))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
