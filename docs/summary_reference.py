"""The run summary's reference: every key, what it means and its unit, read from scenarios/run/summary_keys.py.

docs/hooks.py puts this into ``reference/summary.md`` when the site is built; ``python -m docs.summary_reference``
prints it. A key with no description is an error here (the strict build fails); tests/test_summary_keys.py runs
the built-in scenarios and fails on a key they produce that is not documented.
"""

from __future__ import annotations

from scenarios.run.summary_keys import GROUPS


def markdown() -> str:
    lines = []
    for group in GROUPS:
        scenarios = "every scenario" if "*" in group.scenarios else ", ".join(f"`{s}`" for s in group.scenarios)
        lines += ["", f"### {group.title}", "", f"Produced by {scenarios}: {group.when}.", "",
                  "| key | what it means (unit) |", "|---|---|"]
        for key, doc in group.keys.items():
            if not doc.strip():
                raise ValueError(f"scenarios/run/summary_keys.py: {key!r} ({group.title}) has no description")
            lines.append(f"| `{key}` | {doc.replace('|', chr(92) + '|')} |")
    return "\n".join(lines).lstrip() + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
