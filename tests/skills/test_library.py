"""The library keeps every version; edits write new versions; the current library is read off the lineage."""

import numpy as np
import pytest
from sqlalchemy import inspect
from sqlmodel import create_engine

from market.store import RunStore
from skills import Edit, GateResult, SkillError, SkillLibrary
from tests.skills.team import evolve, seed_library


def dumps(library):
    return [v.model_dump() for v in library.versions()]


def test_every_edit_adds_a_version_and_changes_no_row(library):
    seed_library(library)
    before = dumps(library)
    library.apply([Edit("revise", "rank-strong", body="Score by overlap with the last 20 items.\n")])
    library.apply([Edit("merge", "recall-broad", partner="recall-sloppy", name="recall-merged")])
    library.apply([Edit("prune", "rank-harmful")])
    after = dumps(library)
    assert after[: len(before)] == before  # old rows untouched
    assert [(v["name"], v["version"], v["status"]) for v in after[len(before):]] == [
        ("rank-strong", 2, "active"), ("recall-merged", 1, "active"), ("rank-harmful", 2, "pruned")]
    merged = library.get("recall-merged")
    ids = {v.label: v.id for v in library.versions()}
    assert (merged.parent_id, merged.merge_parent_id) == (ids["recall-broad@1"], ids["recall-sloppy@1"])
    assert merged.body == "Take the top 50 by popularity too.\n\nDo not validate the item ids.\n"
    assert sorted(v.label for v in library.current()) == ["rank-strong@2", "recall-merged@1"]
    assert [e.operator for e in library.edits().values()] == ["add"] * 4 + ["revise", "merge", "prune"]


def test_a_rejected_candidate_is_kept_with_its_scores_but_not_used(library):
    seed_library(library)
    (v,) = library.apply([Edit("prune", "rank-strong")], gate=GateResult(False, 0.5, 0.2, np.array([-0.3])))
    assert v.status == "rejected" and v.label == "rank-strong@2"
    edit = library.edits()[v.edit_id]
    assert (edit.gate, edit.score_before, edit.score_after) == ("rejected", 0.5, 0.2)
    assert "rank-strong@1" in {s.label for s in library.current()}
    assert library.get("rank-strong").label == "rank-strong@1"  # newest version that was not rejected
    (w,) = library.apply([Edit("revise", "rank-strong", description="Rank by the last 20 items.")])
    assert w.label == "rank-strong@3"  # a rejected version uses up its number


def test_plan_shows_the_candidate_and_writes_nothing(library):
    evolve(library)
    rows = dumps(library)
    new, candidate = library.plan([Edit("revise", "rank-strong", body="x\n"),
                                   Edit("revise", "rank-strong", body="y\n")])
    assert [v.label for v in new] == ["rank-strong@4", "rank-strong@5"]  # @3 was rejected: numbers are not reused
    assert new[1].parent_id == new[0].id < 0  # the second edit builds on the first
    assert "rank-strong@5" in {v.label for v in candidate} and "rank-strong@2" not in {v.label for v in candidate}
    assert dumps(library) == rows


@pytest.mark.parametrize("edit, named", [
    (Edit("add", "rank-strong", description="d", body="b"), "rank-strong: name: already in library"),
    (Edit("add", "Rank_Strong", description="d", body="b"), "name: 'Rank_Strong' must be"),
    (Edit("add", "a" * 65, description="d", body="b"), "must be 1-64"),
    (Edit("add", "rank--double", description="d", body="b"), "name: 'rank--double'"),
    (Edit("add", "fine", description="x" * 1025, body="b"), "description: 1025 characters, at most 1024"),
    (Edit("add", "fine", description=" ", body="b"), "description: must be a non-empty string"),
    (Edit("add", "fine", description="d"), "description and body are required"),
    (Edit("add", "fine", description="d", body="a\n```rule\nx\n```"), "body: a '```rule' block"),
    (Edit("revise", "rank-strong", rule="a ``` b"), "rule: must be non-empty text"),
    (Edit("revise", "nowhere"), "revise nowhere: not in the current library"),
    (Edit("merge", "rank-strong", partner="rank-strong"), "partner 'rank-strong' is not another current skill"),
    (Edit("merge", "rank-strong", partner="recall-broad", name="rank-harmful"), "name: 'rank-harmful' already"),
    (Edit("rewrite", "rank-strong"), "operator 'rewrite' is not one of"),
])
def test_bad_edits_are_refused_naming_the_field(library, edit, named):
    seed_library(library)
    rows = dumps(library)
    with pytest.raises(SkillError) as err:
        library.apply([edit])
    assert named in str(err.value)
    assert dumps(library) == rows


def test_name_rules_of_agent_skills(library):
    library.add("a" * 64, "max length", "")
    library.add("x1-y2-z3", "digits and single hyphens", "")
    for bad in ("-lead", "trail-", "UPPER", "under_score", "", "sp ace"):
        with pytest.raises(SkillError):
            library.add(bad, "d", "")


def test_tables_appear_on_any_engine_and_beside_a_run(tmp_path):
    plain = create_engine(f"sqlite:///{tmp_path / 'plain.db'}")  # nothing created yet
    SkillLibrary(plain, "a").add("solo", "d", "b")
    assert {"skill", "skill_edit"} <= set(inspect(plain).get_table_names())

    url = f"sqlite:///{tmp_path / 'run.db'}"
    store = RunStore.create(url, "relay", 0, {})
    run_library, other = SkillLibrary.open(url, store.run_id), SkillLibrary.open(url, "other")
    run_library.add("solo", "d", "b")
    assert {"run", "agent", "skill", "skill_edit"} <= set(inspect(store.engine).get_table_names())
    assert [v.label for v in run_library.versions()] == ["solo@1"] and other.versions() == []
