"""``catallax probe WORLD --role R --n N``: what each of a role's skill lines does, measured on N problems.

    catallax probe WORLD.toml --role R [--n N] [--set key=value ...] [--seed S] [--show-prompt] [--json]

An LLM world's complete agent (one agent per role it combines, each holding its role's whole initial pool, no
auction: scenarios/text/scenario.py ``complete_agent``) plays the first N problems of the world's held-out stream,
greedy, once with every line of role R and once without each of R's lines in turn. A line's effect is the paired
difference per problem (success without the line minus success with it): positive, the line harms; negative, it
helps. Each is printed with its 95% interval (normal, over the N paired problems), so a line's measured harm is
one command. ``--show-prompt`` prints the exact prompt R's agent was sent on the first problem it acted on (the
chat messages, and the text the engine tokenizes where it renders one). Nothing is written.
"""

from __future__ import annotations

import json
import math

import numpy as np

from scenarios.run.config import ConfigError, load

Z95 = 1.959964


def add_parser(subparsers):
    p = subparsers.add_parser("probe", help="measure each skill line of one role of an LLM world (paired, 95%% interval)")
    p.add_argument("scenario", help="an LLM world: a scenario name (e.g. wordmath) or a .toml file")
    p.add_argument("--role", required=True, help="the role whose skill lines are measured")
    p.add_argument("--n", type=int, default=32, help="held-out problems played (default: 32)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, as catallax run does (repeatable)")
    p.add_argument("--seed", type=int, help="the run's seed (overrides run.seed)")
    p.add_argument("--show-prompt", action="store_true", help="print the exact prompt the role's agent was sent")
    p.add_argument("--json", action="store_true", help="print the measurements as one JSON line last")
    return p


class Recording:
    """The engine, forwarding every call, keeping the prompts it generated for (what --show-prompt prints)."""

    def __init__(self, engine):
        self.engine, self.sent = engine, []

    def generate(self, prompts):
        self.sent += prompts
        return self.engine.generate(prompts)

    def __getattr__(self, name):
        return getattr(self.engine, name)


def paired(with_line: np.ndarray, without: np.ndarray) -> dict:
    """The mean paired difference (without - with), its 95% interval over the problems and its spread."""
    diff = np.asarray(without, dtype=float) - np.asarray(with_line, dtype=float)
    mean, sd = float(diff.mean()), float(diff.std(ddof=1)) if diff.size > 1 else float("nan")
    half = Z95 * sd / math.sqrt(diff.size)
    return {"harm": mean, "low": mean - half, "high": mean + half, "sd": sd}


def probe(exp, role: str, n: int) -> dict:
    """The role's lines, the success with all of them, and each line's paired effect of removal (see the module)."""
    from scenarios.text.adapter import TextBatch
    from scenarios.text.scenario import complete_agent, pool_lines
    from scenarios.run.runner import build_model

    model = build_model(exp)
    policy = model.policy.unwrapped
    board = model.world.board
    world = board.world
    names = [r.name for r in world.roles if not r.tool]
    if role not in names:
        raise ConfigError(f"--role {role}: not an LLM role of {type(world).__name__} ({', '.join(names)})")
    if world.complete and role not in world.complete:
        raise ConfigError(f"--role {role}: {type(world).__name__}.complete leaves it out, so its complete agent "
                          f"never plays it (its roles: {', '.join(world.complete)})")
    lines = pool_lines(board.world.skill_pool(), role)
    batch = TextBatch(board, exp.scenario.heldout_seed, model.world.horizon, fixed=np.arange(n))
    recording = policy.backend = Recording(policy.backend)

    def solved(drop: tuple[str, ...] = ()) -> np.ndarray:
        complete_agent(model, batch, drop=drop)
        return np.asarray(batch.solved, dtype=float).copy()

    with policy.evaluating():
        base = solved()
        frozen = next((r.frozen for r in world.roles if r.name == role), "")
        shown = next((p for p in recording.sent if p.system == frozen), None)
        effects = [{"line": line, **paired(base, solved((line,)))} for line in lines]
    policy.backend = recording.engine
    template = getattr(recording.engine, "_template", None)
    rendered = template(shown.messages(), generation=True) if shown is not None and callable(template) else None
    return {"role": role, "problems": n, "heldout_seed": exp.scenario.heldout_seed, "success": float(base.mean()),
            "lines": effects, "prompt": None if shown is None else {"messages": shown.messages(), "text": rendered,
                                                                     "max_tokens": shown.max_tokens}}


def handle(args) -> int:
    if args.n < 2:
        raise ConfigError(f"--n {args.n}: at least 2 problems (an interval needs two)")
    exp = load(args.scenario, args.overrides, seed=args.seed)
    from scenarios.registry import get_scenario

    if get_scenario(exp.run.scenario).heldout_point is None:
        raise ConfigError(f"{args.scenario}: scenario {exp.run.scenario!r} is not an LLM world (probe plays a "
                          "role's skill lines)")
    out = probe(exp, args.role, args.n)
    if args.show_prompt:
        if out["prompt"] is None:
            print(f"role {args.role} was sent no prompt: it never acted on the {args.n} problems")
        else:
            print(f"# the prompt role {args.role} was sent (max_tokens {out['prompt']['max_tokens']}), as chat messages:")
            for m in out["prompt"]["messages"]:
                print(f"[{m['role']}] {m['content']}")
            if out["prompt"]["text"] is not None:
                print("# as the engine tokenizes it:")
                print(out["prompt"]["text"])
    print(f"role {args.role}: success {out['success']:.3f} on {args.n} held-out problems with all "
          f"{len(out['lines'])} lines; each line's harm = success without it - with it (95% interval, paired):")
    for e in out["lines"]:
        print(f"  {e['harm']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}]  {e['line']}")
    if args.json:
        print(json.dumps(out))
    return 0
