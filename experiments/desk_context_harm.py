"""The adder's planted line on desk: its harm in each context an agent can hold it in, and the gate size that sees it.

    python -m experiments.desk_context_harm [--rows benchmarks/results/desk_context_harm.jsonl]

``text_gate_power`` measures a line's harm in the complete agent, which holds its role's whole pool. A market's
agents hold parts of it, and the skill gate plays the frozen market, so what the gate must see is the line's harm in
the contexts its holders have, diluted by the share of validation problems their role answers.

For every set of the adder's other worked examples (two correct, one with a wrong number) that an agent may hold
beside the planted ``example: What is 2 + 6? => 8``, the adder answers every addition question with one-digit
numbers (81, greedy, the prompt an acting agent is sent) with the line and without it. The line's harm is the mean
of the paired differences (without - with); ``won``/``lost`` count the questions its removal turns right/wrong.

The gate's size: a third of desk's validation problems are additions (s = 1/3), and a problem of another kind does
not change, so per validation problem the prune raises success by h = s x harm with spread
sd = sqrt(s (won + lost) / 81 - h^2). The gate accepts it with probability 0.9 from
n = ((z_conf + z_0.9) sd / h)^2 problems (skills/gate.py ``required_size`` with ``prune_se`` = z_conf, as
text_gate_power), and ``power_at_validation`` is that probability at desk's own ``validation``.
"""

from __future__ import annotations

import argparse
import itertools
import math
from pathlib import Path

import numpy as np
from scipy import stats

from experiments import harness, rows
from experiments.desk_compare import COMPARISON
from scenarios import desk
from scenarios.run.config import load
from skills.gate import refusal_power, required_size

OUT = Path("benchmarks/results/desk_context_harm.jsonl")
PLANTED = desk.HARMFUL[0]
ORDER = [line for _, group in desk.planted_pool()["adder"][:3] for line in group]
"""The adder's worked examples in the pool's order: its two correct ones, the planted line, the wrong-number one."""
OTHERS = [line for line in ORDER if line != PLANTED]
SHARE = 1 / 3
"""The share of desk's problems that are additions (desk.Desk.problem draws the three kinds equally often)."""


def measure(overrides: list[str]) -> list[dict]:
    """One row per context: the planted line beside each subset of ``OTHERS``, in the pool's order."""
    from agents.backends.base import Prompt
    from scenarios.run.runner import build_model

    exp = load(COMPARISON, overrides)  # the shipped bfloat16 model, as the comparison's arms without GRPO hold it
    policy = build_model(exp).policy.unwrapped
    role = next(r for r in policy.roles if r.name == "adder")
    world = desk.Desk()  # the question's text and its correct reply, as desk writes them
    states = [world.start({"kind": "adder", "a": a, "b": b}) for a in range(1, 10) for b in range(1, 10)]

    def solved(lines: list[str]) -> np.ndarray:
        prompts = [Prompt(role.frozen, "\n".join(lines), world.read(state, "adder"), max_tokens=role.max_tokens,
                          stop=role.stop) for state in states]
        with policy.evaluating():
            done = policy.backend.generate(prompts)
        return np.array([d.text.strip() == world.correct(state, "adder") for d, state in zip(done, states)],
                        dtype=float)

    z_conf = float(stats.norm.ppf(exp.skills.confidence))
    validation = exp.scenario.validation
    out = []
    for k in range(len(OTHERS) + 1):
        for kept in itertools.combinations(OTHERS, k):
            context = [line for line in ORDER if line in kept or line == PLANTED]
            with_line, without = solved(context), solved([line for line in context if line != PLANTED])
            d = without - with_line
            won, lost = int((d > 0).sum()), int((d < 0).sum())
            h = SHARE * float(d.mean())
            sd = math.sqrt(max(SHARE * (won + lost) / len(d) - h * h, 0.0))
            seen = h > 0 and sd > 0
            out.append({"context": " | ".join(context), "questions": len(d), "with": round(float(with_line.mean()), 3),
                        "without": round(float(without.mean()), 3), "harm": round(float(d.mean()), 3),
                        "won": won, "lost": lost, "validation harm": round(h, 4), "validation sd": round(sd, 4),
                        "required_validation": required_size(sd, h, z_conf) if seen else None,
                        "power_at_validation": round(refusal_power(sd / math.sqrt(validation), h, z_conf), 3)
                        if seen else 0.0, "validation": validation})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_flags(p, grid=False, rows=OUT, rows_help=f"the rows (default {OUT})")
    args = harness.parse(p, argv)
    measured = measure(args.overrides)
    for r in measured:
        print(f"harm {r['harm']:+.3f} (+{r['won']} -{r['lost']} of {r['questions']}) needs "
              f"{r['required_validation'] or 'never'} (power {r['power_at_validation']:.2f} at {r['validation']})  "
              f"{r['context']}")
    rows.write(args.rows, measured, "experiments.desk_context_harm", argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
