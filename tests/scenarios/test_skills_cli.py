"""`catallax skills list|show|export|import|lineage` on a named library or a run; bad input: one line, exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.cli.main import main
from scenarios.run.config import load
from scenarios.run.runner import run_experiment
from skills import SkillLibrary, export_library
from tests.skills.team import evolve

CATALLAX = Path(sys.executable).parent / "catallax"


def skills(capsys, *args):
    """Run in-process; return the JSON of the last stdout line."""
    assert main(["skills", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.fixture
def exported(tmp_path):
    library = SkillLibrary.open(f"sqlite:///{tmp_path / 'src.db'}", "src")
    evolve(library)
    export_library(library, tmp_path / "skills")
    return tmp_path / "skills"


def test_import_list_show_lineage_export(tmp_path, capsys, exported):
    db = ["--db", f"sqlite:///{tmp_path / 'lib.db'}", "--library", "team"]
    assert skills(capsys, "import", str(exported), *db) == {"folder": str(exported), "versions": 9, "library": "team"}
    current = skills(capsys, "list", *db)
    assert sorted(r["label"] for r in current) == ["rank-strong@2", "recall-broad@2", "rerank-diverse@1"]
    everything = skills(capsys, "list", "--all", *db)
    assert len(everything) == 9 and {r["status"] for r in everything} == {"active", "pruned", "rejected"}

    shown = skills(capsys, "show", "rank-strong", *db)
    assert shown["label"] == "rank-strong@2"
    assert shown["skill_md"] == (exported / "rank-strong/SKILL.md").read_text()

    merged = skills(capsys, "lineage", "recall-broad@2", *db)
    assert merged == {"node": "recall-broad@2", "ancestors": ["recall-broad@1", "recall-sloppy@1"], "descendants": []}
    path = skills(capsys, "lineage", "--path", "rank-strong@1", "rank-strong@3", *db)
    assert path == {"path": [["rank-strong@1", "rank-strong@2", "revise"],
                             ["rank-strong@2", "rank-strong@3", "revise"]]}
    whole = skills(capsys, "lineage", *db)
    assert len(whole["nodes"]) == 9 and ["recall-sloppy@1", "recall-broad@2"] in whole["edges"]

    out = skills(capsys, "export", str(tmp_path / "again"), *db)
    assert out["versions"] == 9 and out["skills"] == 5
    assert (tmp_path / "again/rank-strong/SKILL.md").read_text() == (exported / "rank-strong/SKILL.md").read_text()


def test_text_output_for_people(tmp_path, exported):
    db = f"sqlite:///{tmp_path / 'lib.db'}"
    proc = subprocess.run([str(CATALLAX), "skills", "import", str(exported), "--db", db], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"imported 9 version(s) from {exported} into library 'default'"
    proc = subprocess.run([str(CATALLAX), "skills", "lineage", "--db", db], capture_output=True, text=True, timeout=120)
    assert "recall-broad@2 <- recall-broad@1 (merge), recall-sloppy@1 (merge)" in proc.stdout.splitlines()


def test_a_runs_library_and_agent_lineage(tmp_path, capsys, exported):
    url = f"sqlite:///{tmp_path / 'run.db'}"
    exp = load("relay", ["run.episodes=30", "population.p_exploit=0.5"])
    run_id = run_experiment(exp, url, progress=False)["run_id"]
    db = ["--db", url, "--run", run_id]
    assert skills(capsys, "list", *db) == []
    skills(capsys, "import", str(exported), *db)
    assert len(skills(capsys, "list", "--all", *db)) == 9
    agents = skills(capsys, "lineage", "--agents", *db)
    child = next(v for u, v in agents["edges"])
    parent = next(u for u, v in agents["edges"] if v == child)
    assert parent in skills(capsys, "lineage", "--agents", str(child), *db)["ancestors"]


@pytest.mark.parametrize("args, named", [
    (["list", "--db", "sqlite:///{tmp}/missing.db"], "no such database file"),
    (["show", "ghost", "--db", "sqlite:///{tmp}/lib.db"], "ghost: no such skill version in library 'default'"),
    (["lineage", "--agents", "--db", "sqlite:///{tmp}/lib.db"], "lineage --agents: needs --run RUN_ID"),
    (["lineage", "--path", "rank-strong@2", "rank-strong@1", "--db", "sqlite:///{tmp}/lib.db"],
     "rank-strong@1 does not descend from rank-strong@2"),
    (["list", "--run", "nope", "--db", "sqlite:///{tmp}/lib.db"], "--run nope: not found"),
    (["export", "{tmp}", "--db", "sqlite:///{tmp}/lib.db"], "folder: not empty"),
])
def test_bad_input_exits_2_naming_it(tmp_path, capsys, exported, args, named):
    main(["skills", "import", str(exported), "--db", f"sqlite:///{tmp_path / 'lib.db'}"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["skills", *[a.replace("{tmp}", str(tmp_path)) for a in args]])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], lines


def test_a_file_that_is_not_a_database_is_one_line(tmp_path, capsys):
    (tmp_path / "lib.db").write_text("these are not the tables you are looking for\n" * 100)
    with pytest.raises(SystemExit) as exit_:
        main(["skills", "list", "--db", f"sqlite:///{tmp_path / 'lib.db'}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"catallax: error: --db sqlite:///{tmp_path / 'lib.db'}") and "\n" not in err


def test_a_bad_skill_md_is_reported_before_any_database_is_written(tmp_path, capsys, exported):
    bad = exported / "rank-strong/versions/v1.md"
    bad.write_text(bad.read_text().replace("name: rank-strong", "name: Rank_Strong"))
    with pytest.raises(SystemExit) as exit_:
        main(["skills", "import", str(exported), "--db", f"sqlite:///{tmp_path / 'lib.db'}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"catallax: error: {bad}: name: 'Rank_Strong' must be") and "\n" not in err
    assert not (tmp_path / "lib.db").exists()
