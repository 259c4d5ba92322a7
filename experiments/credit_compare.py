"""Compare the credit estimators (agents/credit) by training the same relay population with each.

    python -m experiments.credit_compare [--seeds 5] [--rounds 60] [--credit grpo,draco,...] [--out FILE]

The economy is relay's (scenarios/relay.toml: holland bids, bucket brigade, rent, births and
bankruptcy). On top of its rule (which decides when it wakes and what it bids), every agent has the
library's learned action logits (``agents.actions = "grpo"``, agents/learners/action_logits.py) with a residual per
agent and stage (``agents.logits.per_state``: a rule that wakes at several stages learns an action for each),
sampled when it wins; a newcomer's rule action starts ``agents.logits.rule_logit = 1`` above the others, and a child
copies its parent's logits. After each round the round's trajectories (agents/credit/market.py, with relay's
signals) go through the estimator (``agents.credit``) and grpo's surrogate moves the logits by each step's
advantage, Adam at ``--lr``. Each run is built from its config as ``catallax run relay --set ...`` builds it
(:func:`settings` lists the overrides), for ``--rounds`` rounds.

``none`` learns no actions (the economy alone, its rules acting). Same seeds, same budget, same initial
population for every estimator. The table: final success (last 20% of episodes, mean +- std over seeds),
episodes until the round-success moving average (5 rounds) first reaches ``--threshold``,
and the variance of the final success over seeds.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from agents import credit as C
from agents.credit.step_advantages import provides
from experiments import rows as results
from scenarios import relay
from scenarios.run.config import load
from scenarios.run.runner import build_model


def settings(name: str, group: int, batch: int, lr: float) -> list[str]:
    """The ``--set`` overrides of relay for estimator ``name`` (``none``: no learned actions)."""
    sets = [f"market.batch={batch}", "relay.p_specialist=0.2"]
    if name != "none":
        sets += ['agents.actions="grpo"', "agents.logits.per_state=true", "agents.logits.rule_logit=1.0",
                 f"agents.group={group}", f"agents.credit={name}", f"agents.lr={lr}"]
    return sets


def run(name: str, seed: int, rounds: int, group: int, batch: int, lr: float) -> np.ndarray:
    """[rounds] success rates of relay trained with estimator ``name``."""
    model = build_model(load("relay", settings(name, group, batch, lr), seed=seed))
    success = np.zeros(rounds)
    for r in range(rounds):
        model.step()
        success[r] = model.last_success_rate
    return success


def summarise(curves: np.ndarray, batch: int, threshold: float) -> dict:
    """curves [seeds, rounds] -> final success (last 20%), its std, rounds-to-threshold in episodes."""
    tail = max(1, curves.shape[1] // 5)
    final = curves[:, -tail:].mean(1)
    kernel = np.ones(5) / 5
    reach = []
    for c in curves:
        smooth = np.convolve(c, kernel, mode="valid")
        hit = np.flatnonzero(smooth >= threshold)
        reach.append((hit[0] + 5) * batch if hit.size else np.nan)
    reach = np.array(reach, dtype=np.float64)
    return {"final": final.mean(), "std": final.std(), "var": final.var(), "reach": np.nanmean(reach) if np.isfinite(reach).any() else np.nan,
            "reached": int(np.isfinite(reach).sum())}


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--group", type=int, default=4, help="G: rollouts of the same task per group")
    ap.add_argument("--batch", type=int, default=16, help="episodes per round (a multiple of --group)")
    ap.add_argument("--lr", type=float, default=1.0, help="agents.lr: Adam's step size on the action logits")
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--credit", default="all", help="comma-separated estimator names, or all (those relay supports)")
    ap.add_argument("--out", default=None, help="also write the table to this file")
    ap.add_argument("--rows", type=Path, help="write the table as JSON Lines rows with their provenance (docs/results pages)")
    args = ap.parse_args(argv)
    signals = provides(relay.SPEC.credit_signals)
    names = ["none", *C.supported(signals)] if args.credit == "all" else args.credit.split(",")
    for n in names:
        if n != "none":
            C.require(n, signals, "relay")
    rows = []
    for name in names:
        t0 = time.time()
        curves = np.stack([run(name, s, args.rounds, args.group, args.batch, args.lr) for s in range(args.seeds)])
        rows.append((name, summarise(curves, args.batch, args.threshold), time.time() - t0))
    episodes = args.rounds * args.batch
    lines = [(f"relay (K=5, p_specialist=0.2), {args.seeds} seeds x {episodes} episodes, G={args.group}, lr={args.lr}; "
             f"threshold {args.threshold}"),
             "", "| credit | final success (mean +- std) | episodes to threshold (seeds reaching) | variance across seeds |",
             "|---|---|---|---|"]
    for name, s, _ in rows:
        reach = "-" if np.isnan(s["reach"]) else f"{s['reach']:.0f}"
        lines.append(f"| {name} | {s['final']:.3f} +- {s['std']:.3f} | {reach} ({s['reached']}/{args.seeds}) | {s['var']:.4f} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")
    if args.rows:
        results.write(args.rows, results.from_markdown(table), "experiments.credit_compare", argv)
    return table


if __name__ == "__main__":
    main()
