"""Paths built from stored data stay in the folder the user named (issue 52, cases 2 and 3): skill names from a
database are checked again on export, run ids before they name a folder, and a symlink planted where a file
or folder is written is replaced or refused, never followed."""

import json
import os

import pytest

from skills import SkillLibrary
from market.store import make_engine
from tests.reliability.test_stored_code import cli, relay_run, sql


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def library_db(tmp_path):
    url = f"sqlite:///{tmp_path / 'lib.db'}"
    engine = make_engine(url)
    library = SkillLibrary(engine)
    library.add("tidy", "Keep it tidy.", "Tidy up.")
    library.add("sweep", "Sweep the floor.", "Sweep.")
    engine.dispose()
    return url


@pytest.mark.parametrize("name", ["{outside}/escape_abs", "../../escape_rel", "..", "a/b", "UPPER"])
def test_case_2_export_rechecks_the_names_a_database_holds(tmp_path, capsys, library_db, name):
    outside = tmp_path / "outside"
    outside.mkdir()
    bad = name.format(outside=outside)
    sql(library_db, "UPDATE skill SET name = ? WHERE name = 'sweep'", args=(bad,))
    target = tmp_path / "deep" / "er" / "export"
    code, _, err = cli(["skills", "export", str(target), "--db", library_db], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert files_under(outside) == [] and not (tmp_path / "escape_rel").exists()
    assert not target.exists() or files_under(target) == []  # every name is checked before any file is written


def test_export_writes_no_file_through_a_planted_symlink(tmp_path, capsys, library_db):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    code, _, err = cli(["skills", "export", str(victim), "--db", library_db], capsys)
    assert code == 2 and "not a folder" in err  # --out (the folder) an existing file
    code, _, _ = cli(["skills", "export", str(tmp_path / "ok"), "--db", library_db, "--json"], capsys)
    assert code in (0, None) and (tmp_path / "ok" / "tidy" / "SKILL.md").is_file()
    assert victim.read_text() == "keep"


@pytest.mark.parametrize("run_id", ["/../../../../../tmp/x/rep_escape", "../up", "a/b", ".."])
def test_case_3_a_crafted_run_id_names_no_folder(tmp_path, capsys, run_id):
    url, _ = relay_run(tmp_path, capsys)
    out = tmp_path / "reports"
    out.mkdir()
    code, _, err = cli(["report", run_id, "--db", url, "--out", str(out)], capsys)
    assert code == 2 and "not a run id" in err, err
    assert files_under(out) == [] and not (tmp_path.parent / "rep_escape").exists()


def test_case_3_report_replaces_planted_symlinks_and_refuses_a_symlinked_folder(tmp_path, capsys):
    url, run_id = relay_run(tmp_path, capsys)
    out = tmp_path / "reports"
    folder = out / f"report-{run_id}"
    folder.mkdir(parents=True)
    victim, created = tmp_path / "victim.md", tmp_path / "created.png"
    victim.write_text("keep")
    os.symlink(victim, folder / "summary.md")
    os.symlink(created, folder / "wealth.png")
    code, out_text, err = cli(["report", run_id, "--db", url, "--out", str(out), "--json"], capsys)
    assert code in (0, None), err
    assert victim.read_text() == "keep" and not created.exists()
    assert not (folder / "summary.md").is_symlink() and (folder / "summary.md").read_text().startswith("# Run")
    assert json.loads(out_text.splitlines()[-1])["summary"] == str(folder / "summary.md")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for p in folder.iterdir():
        p.unlink()
    folder.rmdir()
    os.symlink(elsewhere, folder)  # the report's folder itself
    code, _, err = cli(["report", run_id, "--db", url, "--out", str(out)], capsys)
    assert code == 2 and "symlink" in err and files_under(elsewhere) == []

    file_out = tmp_path / "a-file"
    file_out.write_text("x")
    code, _, err = cli(["report", run_id, "--db", url, "--out", str(file_out)], capsys)
    assert code == 2 and "not a folder" in err and file_out.read_text() == "x"
