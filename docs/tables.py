"""Results tables generated from stored rows: ``python -m docs.tables`` rewrites them, ``--check`` compares.

A page holds a table between two markers that name a JSON Lines file (one object per line, written by the
experiment or benchmark that measured it) and the columns to show::

    <!-- table: benchmarks/results/relay.jsonl | payment, seed, success_rate -->
    | payment | seed | success_rate |
    |---|---|---|
    | bucket_brigade | 0 | 1 |
    <!-- end table -->

Every row with at least one of the named columns is a table row, in file order; a row with none of them is
a sidecar (provenance only). Each table row, or a sidecar row of its file, must say where it came from:
``command``, ``date``, ``commit`` and ``machine`` (``source: "transcribed"`` where a table was copied from an
earlier README rather than written by its script). So a number on a results page is never typed by hand:
it is the stored row's value, and ``--check`` (run by the suite, and by the docs build through
docs/hooks.py) fails when a page's table and its rows disagree.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PROVENANCE = ("command", "date", "commit", "machine")
MARKER = re.compile(r"^<!-- table: (?P<path>[^|]+?) \| (?P<columns>.+?) -->\n(?P<body>.*?)^<!-- end table -->$",
                    re.M | re.S)


def shown(path: Path) -> str:
    """A path as a message names it: relative to the repository where it lies inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


class TableError(ValueError):
    """A marker naming a missing file, a malformed row, or rows without their provenance: one line naming it."""


@dataclass(frozen=True)
class Table:
    page: Path
    rows_path: str
    columns: tuple[str, ...]
    body: str  # the markdown between the markers, as the page has it


def cell(value) -> str:
    """A value as a table cell: floats to 4 significant digits (no exponent below 1e6), lists joined by spaces."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-4):
            return f"{value:.3e}"
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    if isinstance(value, (list, tuple)):
        return " ".join(cell(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def read_rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise TableError(f"{shown(path)}: no such rows file")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise TableError(f"{shown(path)}:{n}: not JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise TableError(f"{shown(path)}:{n}: a row is a JSON object")
        rows.append(row)
    return rows


def table_rows(table: Table) -> list[dict]:
    """The rows of ``table``'s file that it shows, checked for provenance (on the row or in a sidecar row)."""
    path = ROOT / table.rows_path
    rows = read_rows(path)
    shown = [r for r in rows if any(c in r for c in table.columns)]
    sidecar = {k: v for r in rows if not any(c in r for c in table.columns) for k, v in r.items() if k in PROVENANCE}
    for r in shown:
        missing = [k for k in PROVENANCE if k not in r and k not in sidecar]
        if missing:
            raise TableError(f"{table.rows_path}: a row lacks {', '.join(missing)} (on the row or a sidecar row)")
    if not shown:
        raise TableError(f"{shown(table.page)}: {table.rows_path} has no row with {', '.join(table.columns)}")
    return shown


def render(table: Table) -> str:
    """The markdown table of ``table``'s rows: a header of its columns, one line per row."""
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in table.columns) + " |" for r in table_rows(table)]
    return "\n".join(lines) + "\n"


FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def _markers(text: str) -> list[re.Match]:
    """The table markers of ``text``, those inside fenced code blocks (an example of the format) left out."""
    fenced = [m.span() for m in FENCE.finditer(text)]
    return [m for m in MARKER.finditer(text) if not any(a <= m.start() < b for a, b in fenced)]


def _table(page: Path, m: re.Match) -> Table:
    return Table(page, m["path"].strip(), tuple(c.strip() for c in m["columns"].split(",")), m["body"])


def find_tables(page: Path, text: str | None = None) -> list[Table]:
    text = page.read_text(encoding="utf-8") if text is None else text
    return [_table(page, m) for m in _markers(text)]


def _cells(markdown: str) -> list[list[str]]:
    """A markdown table's cells, alignment row dropped; numbers compared as numbers ("1.00" is "1")."""
    out = []
    for line in markdown.strip().splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue
        out.append([_number(c) for c in cells])
    return out


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def differs(table: Table) -> bool:
    return _cells(table.body) != _cells(render(table))


def regenerate(text: str, page: Path) -> str:
    """``text`` with every marked table replaced by the one its rows give."""
    out, last = [], 0
    for m in _markers(text):
        t = _table(page, m)
        out += [text[last:m.start()], f"<!-- table: {t.rows_path} | {', '.join(t.columns)} -->\n{render(t)}<!-- end table -->"]
        last = m.end()
    return "".join(out) + text[last:]


def pages(root: Path = DOCS) -> list[Path]:
    return sorted(root.rglob("*.md"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 naming each table that differs")
    parser.add_argument("paths", nargs="*", type=Path, help="pages (default: every .md under docs/)")
    args = parser.parse_args(argv)
    stale, count = [], 0
    try:
        for page in [p.resolve() for p in args.paths] or pages():
            text = page.read_text(encoding="utf-8")
            tables = find_tables(page, text)
            count += len(tables)
            if args.check:
                stale += [f"{shown(page)}: the table of {t.rows_path} differs from its rows"
                          for t in tables if differs(t)]
            elif tables and (new := regenerate(text, page)) != text:
                page.write_text(new, encoding="utf-8")
                print(f"rewrote {shown(page)}")
    except TableError as err:
        print(f"docs.tables: {err}", file=sys.stderr)
        return 2
    for line in stale:
        print(line, file=sys.stderr)
    if args.check and not stale:
        print(f"{count} tables match their rows")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
