"""The README's scenario table and results lines, generated: ``python -m docs.readme_sections`` rewrites them,
``--check`` fails (exit 1) when the README differs.

Each has one home elsewhere, so the README cannot drift from it: the scenario table is the scenario cards'
(docs/scenario_cards.py: every shipped scenario, what it models, its results page), and each results line is
the **Claim** of a results page's summary (docs/results/*.md), whose evidence is the page's tables of stored
rows. The README carries no number of its own; the numbers stay on the pages, next to their rows.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from docs import scenario_cards

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESULTS = ROOT / "docs" / "results"
BLOCK = re.compile(r"(<!-- generated: (?P<name>[a-z ]+) \(python -m docs\.readme_sections\) -->\n).*?(<!-- end generated -->)",
                   re.S)
CLAIM = re.compile(r"^    \*\*Claim\.\*\* (?P<claim>.+)$", re.M)
ORDER = ("relay", "blocks", "bids", "credit", "objectives", "recsys", "skill_evolution", "wordmath", "desk")


def page_title(path: Path) -> str:
    return path.read_text().split("\n", 1)[0].removeprefix("# ")


def scenarios() -> str:
    rows = ["| scenario | what it models | results |", "|---|---|---|"]
    for name, card in scenario_cards.CARDS.items():
        page = f"[{page_title(ROOT / 'docs' / card.results)}](docs/{card.results})"
        rows.append(f"| `{name}` | {card.models} | {page} |")
    return "\n".join(rows) + "\n"


def results() -> str:
    rows = ["| results page | claim |", "|---|---|"]
    for stem in ORDER:
        path = RESULTS / f"{stem}.md"
        claim = CLAIM.search(path.read_text())
        if claim is None:
            raise SystemExit(f"{path.relative_to(ROOT)}: no **Claim.** line in its summary")
        rows.append(f"| [{page_title(path)}](docs/results/{stem}.md) | {claim['claim']} |")
    return "\n".join(rows) + "\n"


SECTIONS = {"scenarios": scenarios, "results": results}


def render(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + SECTIONS[m["name"]]() + m.group(3), text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the README differs, rewrite nothing")
    args = parser.parse_args(argv)
    text = README.read_text()
    if {m["name"] for m in BLOCK.finditer(text)} != set(SECTIONS):
        print(f"README.md: needs one block of each of {', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    new = render(text)
    if args.check:
        if new != text:
            print("README.md: its scenario table or results lines differ (python -m docs.readme_sections "
                  "rewrites them)", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
