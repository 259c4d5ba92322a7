"""relay under the bucket brigade and under final_only: does credit flow back to the early stages?

Runs ``catallax run relay`` (its scenario file's defaults: 1000 episodes, K = 5 stages) per payment rule and
seed, and prints one row per run: the success rate over the last 20% of episodes and, per stage, whether a
live specialist of that stage has positive wealth::

    python -m experiments.relay_payment --seeds 5 --rows benchmarks/results/relay_payment.jsonl
    python -m experiments.relay_payment --quick           # 100 episodes, one seed: a smoke run

The shared flags (``--seeds``, ``--workers``, ``--ray``, ``--set``...) are experiments/harness.py's.
"""

from __future__ import annotations

import argparse
import json

from experiments import harness, rows as results

PAYMENTS = ("bucket_brigade", "final_only")
QUICK = ["run.episodes=100"]


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
    harness.add_flags(parser, seeds=5, quick="100 episodes")
    args = harness.parse(parser, argv)
    sets = [*(QUICK if args.quick else []), *args.overrides]
    out = harness.run(run_one, [(payment, seed, sets) for payment in PAYMENTS for seed in harness.seeds(args)], args)
    for row in out:
        print(json.dumps(row))
    if args.rows:
        results.write(args.rows, out, "experiments.relay_payment", argv)
    return out


if __name__ == "__main__":
    main()
