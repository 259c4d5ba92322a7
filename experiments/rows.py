"""Results rows for the docs: each experiment writes its table as JSON Lines with ``--rows PATH``.

One object per table row, keyed by the table's column names, each carrying where it came from: the
``command`` that produced it, the ``date`` (UTC), the ``commit`` of the code (``-dirty`` when the tree had
changes) and the ``machine``. The docs' results pages show these rows between table markers
(docs/tables.py), so a number on a page is always a stored row of a named command, never typed by hand.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commit() -> str:
    """The checkout's short commit, ``-dirty`` if tracked files differ from it; ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def machine() -> str:
    """CPUs and GPU in a few words: what a reader needs to compare a time with their own."""
    cpu = platform.processor() or platform.machine()
    try:
        import torch

        gpu = f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    except ImportError:
        gpu = ""
    return f"{os.cpu_count()} CPUs ({cpu}){gpu}, {platform.system()}"


def provenance(module: str, argv: list[str] | None) -> dict:
    """The fields every row carries; ``command`` is the script as it was called."""
    args = sys.argv[1:] if argv is None else argv
    return {"command": f"python -m {module} {shlex.join(args)}".strip(), "date": dt.date.today().isoformat(),
            "commit": commit(), "machine": machine()}


def from_markdown(text: str) -> list[dict]:
    """The rows of every pipe table in ``text``, keyed by its header (the scripts' Markdown tables, as rows);
    a table after the first gets a ``table`` field: its index, so the rows of several tables stay apart."""
    rows, header, index = [], None, -1
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if header is None:
            header, index = _columns(cells), index + 1
        elif not all(re.fullmatch(r":?-+:?", c) for c in cells):
            rows.append({**({"table": index} if index else {}), **dict(zip(header, cells))})
    return rows


def _columns(cells: list[str]) -> list[str]:
    """Header cells as column names a table marker can list: commas (the marker's separator) become
    semicolons, and a repeated name gets `` (2)``, `` (3)``... so no column overwrites another."""
    names: list[str] = []
    for cell in cells:
        name = cell.replace(",", ";")
        n = sum(1 for x in names if x == name or x.startswith(f"{name} ("))
        names.append(f"{name} ({n + 1})" if n else name)
    return names


def write(path: Path, rows: list[dict], module: str, argv: list[str] | None = None, append: bool = False,
          **extra) -> None:
    """Write ``rows`` to ``path`` (replacing it, or after what it holds with ``append``), each with its provenance
    and the ``extra`` fields (the size a script ran at; ``commit=`` the runs' own, when a table is made later)."""
    meta = {**provenance(module, argv), **extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w", encoding="utf-8") as f:
        f.write("".join(json.dumps({**row, **meta}) + "\n" for row in rows))
    if not append:
        print(f"wrote {len(rows)} rows to {path}", file=sys.stderr)


def write_tables(path: Path, tables: dict[str, str], module: str, argv: list[str] | None = None) -> list[Path]:
    """A script's named Markdown texts as rows, one file per table: the first text's first table to ``path``,
    every other to ``PATH-STEM_NAME.jsonl`` beside it (``bids.jsonl``, ``bids_recsys.jsonl``), a text's k-th table
    after its first with ``-k`` added (``recsys_default-1.jsonl``): each page table names one file."""
    written = []
    for i, (name, text) in enumerate(tables.items()):
        rows = from_markdown(text)
        for k in sorted({row.get("table", 0) for row in rows}):
            stem = path.stem if i == 0 else f"{path.stem}_{name}"
            target = path.with_name(f"{stem}{f'-{k}' if k else ''}{path.suffix}")
            write(target, [{c: v for c, v in row.items() if c != "table"} for row in rows if row.get("table", 0) == k],
                  module, argv)
            written.append(target)
    return written
