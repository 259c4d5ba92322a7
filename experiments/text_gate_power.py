"""The skill gate's power on an LLM world: each skill line's measured harm, and the validation size that sees it.

    python -m experiments.text_gate_power WORLD [--n 64] [--set KEY=VALUE ...] [--rows FILE]

For every LLM role of WORLD, ``catallax probe`` (scenarios/cli/probe.py) plays the complete agent on the first N
held-out problems, greedy, with all of the role's lines and without each in turn. A line's harm h is the mean
paired difference (success without it minus with it) and sd the spread of those differences. An edit that prunes
the line raises validation success by h, and the gate (skills/gate.py) accepts it when a one-sided paired test
gives p <= 1 - ``skills.confidence``. In the normal approximation, that happens with probability

    power(n) = Phi(h sqrt(n) / sd - z_conf)    and reaches 0.9 from    n = ((z_conf + z_0.9) sd / h)^2

validation problems (``skills.gate.required_size`` and ``refusal_power`` with ``prune_se`` = z_conf: the same normal
approximation as the recsys gate's one-standard-error rule). A line whose removal changes
no problem (sd = 0) cannot be seen at any size. One row per line: its role, harm with its 95% interval, sd, the size
it needs and the power at the world's own ``validation`` size (a text world's config); then the world's row: its
most harmful line, and how many lines are harmful beyond their interval.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from scipy import stats

from experiments import harness, rows
from scenarios.cli.probe import probe
from scenarios.run.config import load
from skills.gate import refusal_power, required_size

OUT = Path("benchmarks/results/text_gate_power.jsonl")


def measure(world: str, n: int, overrides: list[str]) -> list[dict]:
    """One row per non-wake line of every LLM role of ``world`` (see the module)."""
    exp = load(world, overrides)
    z_conf = float(stats.norm.ppf(exp.skills.confidence))
    validation = exp.scenario.validation
    out = []
    for role in _llm_roles(exp):
        measured = probe(exp, role, n)
        for line in measured["lines"]:
            h, low, high, sd = line["harm"], line["low"], line["high"], line["sd"]
            seen = h > 0 and sd > 0
            out.append({"world": world, "role": role, "line": line["line"], "harm": round(h, 4),
                        "low": round(low, 4), "high": round(high, 4), "sd": round(sd, 4),
                        "required_validation": required_size(sd, h, z_conf) if seen else None,
                        "power_at_validation": round(refusal_power(sd / math.sqrt(validation), h, z_conf), 3)
                        if seen else 0.0, "validation": validation, "problems": n})
    return out


def _llm_roles(exp) -> list[str]:
    """The world's LLM roles its complete agent plays (those ``catallax probe`` can measure)."""
    from scenarios.run.runner import build_model

    world = build_model(exp).world.board.world
    return [r.name for r in world.roles if not r.tool and (not world.complete or r.name in world.complete)]


def summary(lines: list[dict]) -> dict:
    """The world's row: its most harmful line, and how many lines are harmful beyond their 95% interval."""
    worst = max(lines, key=lambda r: r["harm"])
    return {**worst, "role": "(all)", "line": f"largest harm: {worst['role']}: {worst['line']}",
            "lines": len(lines), "harmful_95": sum(r["low"] > 0 for r in lines)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("world", help="an LLM world: a scenario name (e.g. wordmath) or a .toml file")
    p.add_argument("--n", type=int, default=64, help="held-out problems each line is measured on (default 64)")
    harness.add_flags(p, grid=False, rows=OUT, rows_help=f"the rows (default {OUT})")
    args = harness.parse(p, argv)
    if args.n < 2:
        p.error(f"--n {args.n}: at least 2 problems (an interval needs two)")
    lines = measure(args.world, args.n, args.overrides)
    for r in [*lines, summary(lines)]:
        need = r["required_validation"] or "never"
        print(f"{r['role']:>11} {r['harm']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}] sd {r['sd']:.3f} needs {need} "
              f"(power {r['power_at_validation']:.2f} at {r['validation']})  {r['line'][:60]}")
    rows.write(args.rows, [*lines, summary(lines)], "experiments.text_gate_power", argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
