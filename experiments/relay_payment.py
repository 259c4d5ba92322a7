"""relay under the bucket brigade and under final_only: does credit flow back to the early stages?

Runs ``catallax run relay`` (its scenario file's defaults: 1000 episodes, K = 5 stages) per payment rule and
seed, and prints one row per run: the success rate over the last 20% of episodes and, per stage, whether a
live specialist of that stage has positive wealth::

    python -m experiments.relay_payment --seeds 0 1 2 3 4 --rows benchmarks/results/relay_payment.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from experiments import rows as results

PAYMENTS = ("bucket_brigade", "final_only")


def run_one(payment: str, seed: int, overrides: list[str]) -> dict:
    from scenarios.run.config import load
    from scenarios.run.runner import run_experiment

    summary = run_experiment(load("relay", [f"market.payment={payment}", *overrides], seed=seed), "sqlite://",
                             progress=False)
    return {"payment": payment, "seed": seed, "success_rate": summary["success_rate"],
            "stage_solvent": " ".join("T" if ok else "F" for ok in summary["stage_solvent"]),
            "ledger_hash": summary["ledger_hash"][:12]}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="applied to every run, e.g. --set run.episodes=200")
    parser.add_argument("--rows", type=Path, help="write the rows here (JSON Lines, for the docs' results pages)")
    args = parser.parse_args(argv)
    out = [run_one(payment, seed, args.overrides) for payment in PAYMENTS for seed in args.seeds]
    for row in out:
        print(json.dumps(row))
    if args.rows:
        results.write(args.rows, out, "experiments.relay_payment", argv)
    return out


if __name__ == "__main__":
    main()
