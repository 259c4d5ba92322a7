"""SKILL.md folders: export then import gives the same versions, edits and lineage; bad files name file and field."""

from pathlib import Path

import networkx as nx
import pytest

from skills import SkillFormatError, SkillLibrary, export_library, import_library, skill_graph
from skills.skillmd import render
from skills.skillmd_parse import parse
from tests.skills.team import evolve

FOREIGN = """\
---
name: pdf-tables
description: Extract tables from PDF files; use when a document has tabular data.
license: MIT
---
# PDF tables

Read each page, then find ruled regions.
"""


def snapshot(library: SkillLibrary) -> list[dict]:
    """Every version with its edit, lineage by label: what must survive a trip through SKILL.md files."""
    versions, edits = library.versions(), library.edits()
    labels = {v.id: v.label for v in versions}
    out = []
    for v in versions:
        row = v.model_dump(exclude={"id", "library", "parent_id", "merge_parent_id", "edit_id"})
        row["parent"], row["merge_parent"] = labels.get(v.parent_id), labels.get(v.merge_parent_id)
        edit = edits.get(v.edit_id)
        row["edit"] = edit and edit.model_dump(exclude={"id", "library"})
        out.append(row)
    return sorted(out, key=lambda r: (r["name"], r["version"]))


def files(folder):
    return {p.relative_to(folder): p.read_text() for p in sorted(folder.rglob("*.md"))}


def test_export_then_import_gives_identical_versions_and_lineage(library, tmp_path):
    evolve(library)
    export_library(library, tmp_path / "a")
    again = SkillLibrary.open(f"sqlite:///{tmp_path / 'other.db'}", "elsewhere")
    import_library(again, tmp_path / "a")

    assert snapshot(again) == snapshot(library)
    assert nx.utils.graphs_equal(skill_graph(again), skill_graph(library))
    assert sorted(v.label for v in again.current()) == sorted(v.label for v in library.current())
    export_library(again, tmp_path / "b")
    assert files(tmp_path / "b") == files(tmp_path / "a")  # byte for byte


def test_export_layout_head_in_skill_md_history_in_versions(library, tmp_path):
    evolve(library)
    export_library(library, tmp_path / "out")
    layout = sorted(str(p) for p in files(tmp_path / "out"))
    assert "rank-strong/SKILL.md" in layout and "rank-strong/versions/v3.md" in layout  # v3 was rejected
    head = (tmp_path / "out/rank-strong/SKILL.md").read_text()
    assert "version: '2'" in head and "parent: rank-strong@1" in head
    assert head.endswith("\n\n```rule\nhistory >= 1 -> rank_overlap\n```\n")
    merged = (tmp_path / "out/recall-broad/SKILL.md").read_text()
    assert "parent: recall-broad@1" in merged and "merge-parent: recall-sloppy@1" in merged
    with pytest.raises(SkillFormatError, match="not empty"):
        export_library(library, tmp_path / "out")


@pytest.mark.parametrize("body", ["", "\n", "text", "text\n\n", "```python\nx = 1\n```", "---\nnot front matter\n---"])
@pytest.mark.parametrize("rule", [None, "stage == 2 -> advance_2"])
def test_one_version_renders_and_parses_back_exactly(library, body, rule):
    v = library.add("edge", "An edge case: a colon, 'quotes', # and\na second line.", body, rule=rule, role="rank")
    text = render(v, {}, library.edits()[v.edit_id])
    p = parse(text, Path("edge/SKILL.md"), "edge")
    fields = ("name", "version", "description", "body", "rule", "role", "status", "created_at")
    assert [getattr(p.skill, f) for f in fields] == [getattr(v, f) for f in fields]
    assert render(p.skill, {}, p.edit) == text


def test_a_hand_written_skill_imports_and_keeps_its_extra_fields(library, tmp_path):
    (tmp_path / "src/pdf-tables").mkdir(parents=True)
    (tmp_path / "src/pdf-tables/SKILL.md").write_text(FOREIGN)
    (v,) = import_library(library, tmp_path / "src/pdf-tables")  # one skill folder works too
    body = "# PDF tables\n\nRead each page, then find ruled regions."
    assert (v.label, v.status, v.body, v.rule) == ("pdf-tables@1", "active", body, None)
    export_library(library, tmp_path / "out")
    text = (tmp_path / "out/pdf-tables/SKILL.md").read_text()
    assert text.startswith("---\nname: pdf-tables\n")
    assert "license: MIT\nmetadata:\n  version: '1'" in text and text.endswith(f"---\n{body}\n")


GOOD = "---\nname: good\ndescription: A fine skill.\nmetadata:\n  version: '1'\n---\nBody.\n"


@pytest.mark.parametrize("text, field", [
    ("name: good\n---\nBody\n", "front matter: the file must start"),
    ("---\nname: good\ndescription: d\nBody\n", "front matter: no closing"),
    ("---\nname: [good\n---\nBody\n", "front matter: not valid YAML"),
    ("---\n- a list\n---\nBody\n", "front matter: must be a YAML mapping"),
    ("---\ndescription: d\n---\nBody\n", "name: missing"),
    ("---\nname: Good\ndescription: d\n---\n", "name: 'Good' must be"),
    ("---\nname: other\ndescription: d\n---\n", "name: 'other' differs from its folder 'good'"),
    ("---\nname: good\n---\n", "description: missing"),
    ("---\nname: good\ndescription: " + "x" * 1025 + "\n---\n", "description: 1025 characters"),
    ("---\nname: good\ndescription: d\nauthor: me\n---\n", "author: unknown field"),
    ("---\nname: good\ndescription: d\nmetadata: [1]\n---\n", "metadata: must be a mapping"),
    ("---\nname: good\ndescription: d\nmetadata:\n  colour: red\n---\n", "metadata.colour: unknown key"),
    ("---\nname: good\ndescription: d\nmetadata:\n  version: two\n---\n", "metadata.version: 'two' is not"),
    ("---\nname: good\ndescription: d\nmetadata:\n  status: gone\n---\n", "metadata.status: 'gone' is not one of"),
    ("---\nname: good\ndescription: d\nmetadata:\n  parent: good-1\n---\n", "metadata.parent: 'good-1' is not"),
    ("---\nname: good\ndescription: d\nmetadata:\n  parent: ghost@1\n---\n",
     "metadata.parent: unknown version 'ghost@1'"),
    ("---\nname: good\ndescription: d\nmetadata:\n  created: monday\n---\n", "metadata.created: 'monday'"),
    ("---\nname: good\ndescription: d\nmetadata:\n  edit-operator: revise\n---\n", "metadata.edit-target: missing"),
    ("---\nname: good\ndescription: d\n---\nBody\n\n```rule\nx -> y\n", "rule: the ```rule block must close"),
])
def test_a_bad_file_names_the_file_and_the_field(library, tmp_path, text, field):
    folder = tmp_path / "src"
    (folder / "good").mkdir(parents=True)
    (folder / "fine").mkdir()
    (folder / "fine/SKILL.md").write_text(GOOD.replace("good", "fine"))
    (folder / "good/SKILL.md").write_text(text)
    with pytest.raises(SkillFormatError) as err:
        import_library(library, folder)
    assert str(err.value).startswith(f"{folder / 'good/SKILL.md'}: {field}")
    assert library.versions() == []  # all or nothing: the good folder was not imported either


def test_importing_a_version_twice_is_refused(library, tmp_path):
    (tmp_path / "src/good").mkdir(parents=True)
    (tmp_path / "src/good/SKILL.md").write_text(GOOD)
    import_library(library, tmp_path / "src")
    with pytest.raises(SkillFormatError, match="good@1 is already in library 'test'"):
        import_library(library, tmp_path / "src")
    (tmp_path / "src/good/versions").mkdir()
    (tmp_path / "src/good/versions/v1.md").write_text(GOOD)
    with pytest.raises(SkillFormatError, match="metadata.version: good@1 is also"):
        import_library(library, tmp_path / "src")
