"""Results pages read as results, not as a lab notebook: each opens with its summary (claim, evidence, caveat and
the command that regenerates it), and none carries history ("used to", "before the change", "now" as a time
word: that goes to CHANGELOG.md), a label only the project's own work knew ("this stop", "the issue"), or a
private name (a ``_function``) a reader cannot look up."""

import re
from pathlib import Path

import pytest

PAGES = sorted((Path(__file__).resolve().parents[1] / "docs" / "results").glob("*.md"))
FORBIDDEN = {
    "this stop": re.compile(r"\bthis stop\b", re.I),
    "the issue": re.compile(r"\bthe issue('s)?\b", re.I),
    "used to": re.compile(r"\bused to\b", re.I),
    "before the change": re.compile(r"\bbefore the change\b", re.I),
    "now": re.compile(r"\bnow\b", re.I),
    "a private name": re.compile(r"(?<![\w.])_[a-z][a-z0-9_]*(?=\W)"),
}
SUMMARY = re.compile(r'\A# [^\n]+\n\n!!! abstract "Summary"\n    \*\*Claim\.\*\* \S.*?\n\n    \*\*Evidence\.\*\* \S.*?\n\n'
                     r"    \*\*Caveat\.\*\* \S.*?\n\n    \*\*Regenerate\.\*\* `(python -m |catallax )[^`]+`", re.S)


def test_there_are_results_pages():
    assert {p.stem for p in PAGES} >= {"relay", "blocks", "credit", "objectives", "skill_evolution"}


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_opens_with_its_summary_and_carries_no_history_or_internal_label(page):
    text = page.read_text()
    assert SUMMARY.match(text), f"{page.name}: does not open with the summary block (claim, evidence, caveat, command)"
    prose = re.sub(r"<!-- table: [^>]*-->.*?<!-- end table -->", "", text, flags=re.S)  # rows are data, not prose
    found = {label: m.group(0) for label, pattern in FORBIDDEN.items() if (m := pattern.search(prose))}
    assert not found, f"{page.name}: {found}"


def test_the_scan_finds_what_it_forbids(tmp_path):
    bad = ["This stop measured it.", "Against the issue's acceptance.", "It used to fail.", "Seeds run before the change.",
           "The default now.", "See `_accuracy`."]
    for line in bad:
        assert any(p.search(line) for p in FORBIDDEN.values()), line
    assert not any(p.search("A known result: `skills.window`, snow, edits_refused_role_tokens.") for p in FORBIDDEN.values())


def test_the_readmes_scenario_table_and_results_lines_are_generated():
    """The README's scenario table is the scenario cards', its results lines the pages' claims (no number of its own)."""
    from docs import readme_sections

    assert readme_sections.main(["--check"]) == 0
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert all(f"| `{name}` |" in text for name in readme_sections.scenario_cards.CARDS)
