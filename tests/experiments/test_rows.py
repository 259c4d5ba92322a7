"""The experiments' results rows: Markdown tables in, one JSON Lines file per table out, each row with its
provenance, in the shape the docs' table generator (docs/tables.py) reads."""

import json

from docs import tables
from experiments import rows

TEXT = """title line

| world | GRSE, seeds 0-4 | after | after |
|---|---|---|---|
| default | 0.19 | 0.2 | 0.3 |

| arm | edits |
|---|---|
| GRSE | 126 |
"""


def test_markdown_tables_become_rows_with_marker_safe_columns():
    parsed = rows.from_markdown(TEXT)
    assert parsed == [{"world": "default", "GRSE; seeds 0-4": "0.19", "after": "0.2", "after (2)": "0.3"},
                      {"table": 1, "arm": "GRSE", "edits": "126"}]


def test_each_table_goes_to_its_own_file_with_provenance_and_renders(tmp_path):
    path = tmp_path / "compare.jsonl"
    written = rows.write_tables(path, {"main": TEXT, "extra": "| a |\n|---|\n| 1 |\n"}, "experiments.x", ["--seeds", "2"])
    assert [p.name for p in written] == ["compare.jsonl", "compare-1.jsonl", "compare_extra.jsonl"]
    first = json.loads(path.read_text().splitlines()[0])
    assert first["command"] == "python -m experiments.x --seeds 2" and first["date"] and first["commit"] and first["machine"]
    page = tmp_path / "page.md"
    page.write_text(f"<!-- table: {path} | world, after (2) -->\n<!-- end table -->\n")
    assert tables.main([str(page)]) == 0
    assert "| world | after (2) |\n|---|---|\n| default | 0.3 |\n" in page.read_text()
