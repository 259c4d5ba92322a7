"""``catallax bench NAME [--json] [--quick]``: run one of the scripts in benchmarks/ and print its tables.

    catallax bench engine                    # vectorized engine vs a per-agent Mesa economy
    catallax bench boltzmann --json          # Mesa's BoltzmannWealth vs ours: Gini check, speedup_10k
    catallax bench scaling [--out DIR]       # time per auction step vs N and B, memory per agent, plot
    catallax bench db [--db URL]             # transfers per second persisted (SQLite; and URL if given)
    catallax bench llm [--backend openai --base-url URL]   # lockstep LLM agents; openai: + the mesa-llm peer

The benchmarks are scripts in the repository's ``benchmarks/`` folder (not an installed
package); NAME is any script there. Each runs in its own process (``python
benchmarks/NAME.py``), so its imports and timings are its own, and its output passes straight
through: with ``--json`` the last line is one JSON object with its ratios. The exit code is the
script's (a benchmark whose correctness check fails exits non-zero).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scenarios.cli.run import database_url
from scenarios.run.config import ConfigError

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
ONLY = {"db": "db", "out": "scaling", "backend": "llm", "base_url": "llm"}  # options that only one benchmark takes


def available() -> list[str]:
    return sorted(p.stem for p in BENCHMARKS.glob("*.py") if not p.stem.startswith("_"))


def add_parser(subparsers):
    names = available()
    p = subparsers.add_parser("bench", help="run a benchmark from benchmarks/ (" + ", ".join(names) + ")")
    p.add_argument("name", metavar="NAME", help="the benchmark: " + (", ".join(names) or "none found"))
    p.add_argument("--json", action="store_true", help="print one JSON line with the results last")
    p.add_argument("--quick", action="store_true", help="a smoke run at toy size (seconds)")
    p.add_argument("--db", help="bench db: also measure this SQLAlchemy URL (e.g. PostgreSQL)")
    p.add_argument("--out", type=Path, help="bench scaling: folder for the plot (default runs/bench)")
    p.add_argument("--backend", choices=("hf", "vllm", "openai"), help="bench llm: the engine (default hf)")
    p.add_argument("--base-url", help="bench llm --backend openai: the OpenAI-compatible server (runs mesa-llm too)")
    return p


def handle(args) -> int:
    script = BENCHMARKS / f"{args.name}.py"
    if not script.is_file():
        found = ", ".join(available()) or f"none: no benchmarks/ folder at {BENCHMARKS.parent}"
        raise ConfigError(f"bench {args.name}: unknown benchmark (known: {found})")
    for option, owner in ONLY.items():
        if getattr(args, option) is not None and args.name != owner:
            raise ConfigError(f"bench {args.name}: --{option.replace('_', '-')} applies to bench {owner} only")
    cmd = [sys.executable, str(script)] + ["--json"] * args.json + ["--quick"] * args.quick
    if args.db is not None:
        cmd += ["--db", database_url(args.db, Path("."))]
    if args.out is not None:
        cmd += ["--out", str(args.out)]
    if args.backend is not None:
        cmd += ["--backend", args.backend]
    if args.base_url is not None:
        cmd += ["--base-url", args.base_url]
    return subprocess.run(cmd).returncode
