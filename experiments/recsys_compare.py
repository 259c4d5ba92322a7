"""The comparison tables over seeds: initial library, GRSE, presence-based credit, random edits, baselines.

    python -m experiments.recsys_compare --seeds 5 [--set recsys.world.users=3000 ...] [--out table.md] [--db URL]

Each seed is one ``catallax run recsys`` with ``plant_harmful = 3`` and ``compare = true``
(a new synthetic world and new rollouts per seed); all arms of a seed share the world, the
questions, the rollout seeds, the validation gate and the per-iteration edit cap. NDCG@k is on the
test users, which no arm ever saw; the tuned baselines chose their hyper-parameters on the validation users.
Prints three Markdown tables (NDCG@k, edit budgets, Recall@50; and writes them to ``--out``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scenarios.run.config import load
from scenarios.run.runner import run_experiment

ARMS = (("grse", "GRSE"), ("presence", "presence"), ("random", "random (matched)"),
        ("random-capped", "random (capped)"))
BASELINES = (("popularity", "popularity"), ("itemknn", "item-kNN"), ("mf", "MF (PureSVD)"), ("ease", "EASE^R"),
             ("itemknn_tuned", "item-kNN (tuned)"), ("puresvd_tuned", "PureSVD (tuned)"), ("trending", "trending"),
             ("next", "next-item"))


def run(seed: int, overrides: list[str], db: str) -> dict:
    exp = load("recsys", [*overrides, "recsys.plant_harmful=3", "recsys.compare=true"], seed=seed)
    return run_experiment(exp, db, progress=False)


def table(results: dict[int, dict], k: int = 10) -> str:
    """NDCG@k per seed and arm (test users), harmful skills pruned, and each arm's edit budget."""
    key = f"ndcg{k}_final"
    head = ["seed", "initial", *(n for _, n in ARMS), *(n for _, n in BASELINES), "harmful pruned (GRSE / presence)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows = []
    for seed, s in sorted(results.items()):
        row = [s[f"ndcg{k}_initial"], *(s["arms"][a][key] for a, _ in ARMS), *(s["baselines"][b] for b, _ in BASELINES)]
        rows.append(row)
        pruned = f"{s['harmful_pruned_grse']} / {s['harmful_pruned_presence']} of {s['harmful_planted']}"
        lines.append("| " + " | ".join([str(seed), *(f"{v:.4f}" for v in row), pruned]) + " |")
    every = {a: sum(s[f"harmful_pruned_{a}"] == s["harmful_planted"] for s in results.values())
             for a in ("grse", "presence")}
    lines.append("| mean | " + " | ".join(f"{v:.4f}" for v in np.mean(rows, axis=0))
                 + f" | all {results[min(results)]['harmful_planted']} in {every['grse']} / {every['presence']} "
                   f"of {len(results)} seeds |")
    lines += ["", "| arm | edits accepted | edits gated | harmful pruned |", "|---|---|---|---|"]
    for a, name in ARMS:
        acc = sum(s["arms"][a]["edits_accepted"] for s in results.values())
        rej = sum(s["arms"][a]["edits_rejected"] for s in results.values())
        pruned = sum(s.get(f"harmful_pruned_{a.replace('-', '_')}", 0) for s in results.values())
        planted = sum(s["harmful_planted"] for s in results.values())
        lines.append(f"| {name} | {acc} | {acc + rej} | {pruned} of {planted} |")
    head = ["seed", "GRSE", *(n for _, n in BASELINES), "best on validation"]
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for seed, s in sorted(results.items()):  # Recall@50: the candidates of the pipeline, the top 50 of a baseline
        row = [s["recall50_final"], *(s["baselines_recall50"][b] for b, _ in BASELINES)]
        lines.append("| " + " | ".join([str(seed), *(f"{v:.4f}" for v in row), s["baseline_best"]]) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--db", help="results database (default: a temporary SQLite file)")
    p.add_argument("--out", type=Path, help="also write the table here")
    args = p.parse_args(argv)
    db = args.db or f"sqlite:///{Path(tempfile.mkdtemp()) / 'compare.db'}"
    results = {}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        start = time.time()
        results[seed] = run(seed, args.overrides, db)
        print(f"seed {seed}: {time.time() - start:.0f} s, run {results[seed]['run_id']}", file=sys.stderr)
    text = table(results)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
