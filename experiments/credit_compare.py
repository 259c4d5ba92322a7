"""Compare the credit estimators (agents/credit) by training the same relay population with each.

    python -m experiments.credit_compare [--seeds 5] [--rounds 60] [--credit grpo,draco,...] [--workers 2] [--out FILE]
    python -m experiments.credit_compare --quick          # 4 rounds of 8 episodes, one seed: a smoke run

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

import numpy as np

from agents import credit as C
from agents.credit.step_advantages import provides
from experiments import harness, rows as results
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


def run(name: str, seed: int, rounds: int, group: int, batch: int, lr: float, overrides: list[str]) -> np.ndarray:
    """[rounds] success rates of relay trained with estimator ``name``."""
    model = build_model(load("relay", [*settings(name, group, batch, lr), *overrides], seed=seed))
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
    harness.add_flags(ap, seeds=5, quick="4 rounds of 8 episodes", out_help="also write the table to this file")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per run (default 60; --quick: 4)")
    ap.add_argument("--group", type=int, default=4, help="G: rollouts of the same task per group")
    ap.add_argument("--batch", type=int, default=None,
                    help="episodes per round, a multiple of --group (default 16; --quick: 8)")
    ap.add_argument("--lr", type=float, default=1.0, help="agents.lr: Adam's step size on the action logits")
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--credit", default="all", help="comma-separated estimator names, or all (those relay supports)")
    args = harness.parse(ap, argv)
    rounds = args.rounds or (4 if args.quick else 60)
    batch = args.batch or (8 if args.quick else 16)
    signals = provides(relay.SPEC.credit_signals)
    names = ["none", *C.supported(signals)] if args.credit == "all" else args.credit.split(",")
    for n in names:
        if n != "none":
            C.require(n, signals, "relay")
    seeds = harness.seeds(args)
    jobs = [(name, seed, rounds, args.group, batch, args.lr, args.overrides) for name in names for seed in seeds]
    curves = harness.run(run, jobs, args)
    summaries = [summarise(np.stack(curves[i * len(seeds):(i + 1) * len(seeds)]), batch, args.threshold)
                 for i in range(len(names))]
    body = []
    for name, s in zip(names, summaries):
        reach = "-" if np.isnan(s["reach"]) else f"{s['reach']:.0f}"
        body.append([name, harness.pm(s["final"], s["std"], 3, sep=" +- "), f"{reach} ({s['reached']}/{args.seeds})",
                     f"{s['var']:.4f}"])
    table = "\n".join([(f"relay (K=5, p_specialist=0.2), {args.seeds} seeds x {rounds * batch} episodes, G={args.group}, "
                        f"lr={args.lr}; threshold {args.threshold}"), "",
                       harness.markdown(["credit", "final success (mean +- std)",
                                         "episodes to threshold (seeds reaching)", "variance across seeds"], body)])
    print(table)
    if args.out:
        args.out.write_text(table + "\n")
    if args.rows:
        results.write(args.rows, results.from_markdown(table), "experiments.credit_compare", argv)
    return table


if __name__ == "__main__":
    main()
