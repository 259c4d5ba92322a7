"""The CLI reference: ``catallax``'s own ``--help`` for every subcommand, read from its parser at build time.

The parser (scenarios/cli/main.py ``build_parser``) is the one the command uses, so the page cannot drift
from the code; docs/hooks.py puts this into ``reference/cli.md``.
"""

from __future__ import annotations

import argparse
import os


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def markdown() -> str:
    from scenarios.cli.main import build_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal's width: a fixed one keeps the page stable
    lines = []

    def walk(parser: argparse.ArgumentParser, depth: int) -> None:
        heading = "#" * min(depth + 2, 4)
        lines.extend([f"{heading} `{parser.prog}`", "", "```text", parser.format_help().rstrip(), "```", ""])
        for sub in _subcommands(parser).values():
            walk(sub, depth + 1)

    walk(build_parser(), 0)
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
