"""desk's planted lines where GRSE meets them: each one's harm in the frozen market at the edit passes' times.

    python -m experiments.desk_market_harm --workers 2 [--rows benchmarks/results/desk_market_harm.jsonl]
    python -m experiments.desk_market_harm --set desk.harmful=1 --set desk.misleading=0 --rows ...
    python -m experiments.desk_market_harm --report [--rows ...]   # run nothing: the per-line table of the rows

``text_gate_power`` measures a planted line's harm in the complete agent, and ``desk_context_harm`` in each set of
examples an adder may hold. The skill gate sees neither: it plays the *frozen market* on desk's validation problems,
whose auctions route each question to the agents that bid most for it. Where the market has already routed around
the agents holding a line, pruning it changes nothing the gate can see, however harmful the line is where it is read.

So this script runs desk at the comparison's settings (experiments/desk_comparison.toml: Holland's bids, no learner,
no edits: the training run GRSE's passes look at) for each seed, and at every ``skills.every`` rounds, when a GRSE
pass would run, plays the frozen market's validation problems with every row's skills as they are and with each
planted line taken from every row that holds it, paired by problem. A line's **market harm** is the mean paired
difference (without - with), with its standard error; ``won``/``lost`` count the problems its removal turns
right/wrong, ``holders`` the live agents holding it. The gate (``skills.confidence`` 0.9, a one-sided sign-flip
test) accepts a prune about when won and lost differ by more than about 1.3 of their square root. Nothing of the
training run changes (agents/heldout.py): its ledger is the run's without the measurement.

The rows (``--rows``) are one per seed, pass and planted line held; a second file beside them (``_lines``) sums them
up per line: the passes it was held at, its mean, smallest and largest market harm, the passes where it cost at least
0.1, and the passes where the gate would accept its prune (the sign test of ``won`` against ``lost`` at the gate's
confidence: for 0/1 scores the gate's paired sign-flip test is that test).

With ``--set desk.harmful=1 --set desk.misleading=0`` every agent holds its role's format-breaking example and
none the wrong-number one that hides much of its harm: the market cannot route around it, and only skill
evolution can take it out (the condition docs/results/desk.md measures GRSE in).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy import stats

from experiments import harness, rows as results
from experiments.desk_compare import COMPARISON

OUT = Path("benchmarks/results/desk_market_harm.jsonl")
QUICK = ["run.episodes=8", "market.batch=4", "desk.heldout=4", "desk.validation=8", "skills.every=1"]


def measure(seed: int, overrides: list[str]) -> list[dict]:
    """One desk run of ``seed``: at each pass time, each planted line's market harm (the module's docstring)."""
    from agents.heldout import FrozenMarket
    from scenarios.desk import WRONG
    from scenarios.run.config import load
    from scenarios.run.runner import build_model

    exp = load(COMPARISON, [*overrides, "desk.llm.threads=1"], seed=seed)
    model = build_model(exp)
    policy = model.policy.unwrapped
    rounds = exp.run.episodes // exp.market.batch
    out = []
    for r in range(1, rounds + 1):
        model.step()
        if r % exp.skills.every:
            continue
        held = [tuple(s) for s in policy.skills]
        live = [row for row in np.flatnonzero(model.population.traders) if policy.role[row] >= 0]
        base = FrozenMarket.success(model, model.world.validation, (held, {}))
        for name, body in sorted(policy.catalogue.lines.items()):
            holders = sum(name in held[row] for row in live)
            if body not in WRONG or not holders:
                continue
            pruned = [tuple(n for n in s if n != name) for s in held]
            d = FrozenMarket.success(model, model.world.validation, (pruned, {})) - base
            out.append({"seed": seed, "round": r, "episodes": r * exp.market.batch, "line": body,
                        "holders": holders, "with": round(float(base.mean()), 4),
                        "harm": round(float(d.mean()), 4), "se": round(float(d.std(ddof=1) / np.sqrt(d.size)), 4),
                        "won": int((d > 0).sum()), "lost": int((d < 0).sum()), "validation": int(d.size)})
    return out


def per_line(rows: list[dict], confidence: float = 0.9) -> list[dict]:
    """The rows summed up per planted line (the module's docstring), in desk's order of the lines."""
    from scenarios.desk import WRONG

    out = []
    for line in WRONG:
        mine = [r for r in rows if r["line"] == line]
        if not mine:
            continue
        harm = np.array([r["harm"] for r in mine])
        accepted = sum(r["won"] > 0 and stats.binomtest(r["won"], r["won"] + r["lost"], alternative="greater").pvalue
                       <= 1 - confidence for r in mine)
        out.append({"line": line, "seeds held": len({r["seed"] for r in mine}), "passes held": len(mine),
                    "mean market harm": round(float(harm.mean()), 4), "smallest": round(float(harm.min()), 4),
                    "largest": round(float(harm.max()), 4), "passes with harm >= 0.1": int((harm >= 0.1).sum()),
                    "passes where the gate accepts its prune": int(accepted)})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_flags(p, seeds=5, workers=2, quick="8 episodes, 8 validation problems, a pass every round",
                      rows=OUT, rows_help=f"the rows (default {OUT})")
    p.add_argument("--report", action="store_true", help="run nothing: write the per-line table of the rows in --rows")
    args = harness.parse(p, argv)
    if args.report:
        measured = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
    else:
        extra = [*(QUICK if args.quick else []), *args.overrides]
        measured = [row for rows in harness.run(measure, [(s, extra) for s in harness.seeds(args)], args)
                    for row in rows]
        for r in measured:
            print(f"seed {r['seed']} round {r['round']:2d}: {r['harm']:+.3f} ± {r['se']:.3f} (+{r['won']} "
                  f"-{r['lost']}, {r['holders']} holders)  {r['line']}")
        results.write(args.rows, measured, "experiments.desk_market_harm", argv)
    lines = per_line(measured)
    print(harness.markdown(list(lines[0]), [list(r.values()) for r in lines]) if lines else "no planted line was held")
    own = {"commit": measured[0]["commit"]} if args.report and measured else {}  # the runs' commit, not this one's
    results.write(args.rows.with_name(f"{args.rows.stem}_lines.jsonl"), lines, "experiments.desk_market_harm", argv,
                  **own)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
