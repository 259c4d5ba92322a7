"""A results database names code only the user may run (issue 52, cases 1 and 10): a plugin named by a stored
config is imported only when the user names it or its files hash to what the run stored when it started; a
database with triggers is not written; a refused resume takes no lease."""

import json
import sqlite3
import sys

import pytest

from scenarios.cli.main import main
from tests.scenarios.test_plugins import write_world

EVIL = '''
import os
from pathlib import Path
Path({marker!r}).write_text(str(os.getpid()))
'''


def cli(argv, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_:
        sys.exit(main(argv))
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


def relay_run(tmp_path, capsys, scenario="relay") -> tuple[str, str]:
    db = tmp_path / "their.db"
    code, out, _ = cli(["run", scenario, "--set", "run.episodes=8", "--db", f"sqlite:///{db}", "--json"], capsys)
    assert code in (0, None)
    return f"sqlite:///{db}", json.loads(out.splitlines()[-1])["run_id"]


def sql(url: str, *statements, args=()):
    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        rows = [con.execute(s, args).fetchall() for s in statements]
        con.commit()
        return rows[-1]
    finally:
        con.close()


def interrupted(url: str, run_id: str) -> None:
    """As a run that was stopped part-way: status interrupted, no lease."""
    sql(url, "UPDATE run SET status = 'interrupted' WHERE id = ?", args=(run_id,))
    sql(url, "DELETE FROM lease")


def status(url: str, run_id: str) -> tuple[str, int]:
    return (sql(url, "SELECT status FROM run WHERE id = ?", args=(run_id,))[0][0],
            sql(url, "SELECT count(*) FROM lease")[0][0])


def test_a_stored_plugin_path_never_executes(tmp_path, capsys):
    url, run_id = relay_run(tmp_path, capsys)
    marker = tmp_path / "x" / "marker"
    evil = tmp_path / "x" / "evil.py"
    evil.parent.mkdir()
    evil.write_text(EVIL.format(marker=str(marker)))
    config = json.loads(sql(url, "SELECT config FROM run")[0][0])
    config["run"]["scenario"] = str(evil)
    for stamp in (None, {"scenario": str(evil), "sha256": "0" * 64}):  # no hash stored; a forged one
        forged = config | ({"catallax:plugin": stamp} if stamp else {})
        sql(url, "UPDATE run SET config = ?", args=(json.dumps(forged),))
        interrupted(url, run_id)
        code, _, err = cli(["resume", run_id, "--db", url], capsys)
        assert code == 2 and str(evil) in err and len(err.strip().splitlines()) == 1, err
        assert not marker.exists()
        assert status(url, run_id) == ("interrupted", 0)  # no lease taken, the run as it was


def test_a_plugin_run_resumes_while_its_file_is_unchanged(tmp_path, capsys):
    world = write_world(tmp_path / "lab")
    url, run_id = relay_run(tmp_path, capsys, str(world))
    stored = json.loads(sql(url, "SELECT config FROM run")[0][0])
    assert stored["catallax:plugin"]["scenario"] == str(world.resolve())
    interrupted(url, run_id)
    code, out, _ = cli(["resume", run_id, "--db", url, "--json"], capsys)
    assert code in (0, None) and json.loads(out.splitlines()[-1])["run_id"] == run_id

    interrupted(url, run_id)
    world.write_text(world.read_text() + "\n# changed\n")
    code, _, err = cli(["resume", run_id, "--db", url], capsys)
    assert code == 2 and "differ" in err and str(world.resolve()) in err
    assert status(url, run_id) == ("interrupted", 0)
    code, _, err = cli(["resume", run_id, "--db", url, "--scenario", str(world), "--json"], capsys)
    assert code in (0, None), err  # the user names it: trusted
    assert status(url, run_id) == ("finished", 0)


def test_case_10_a_resume_whose_plugin_is_gone_leaves_the_run_as_it_was(tmp_path, capsys):
    world = write_world(tmp_path / "lab")
    url, run_id = relay_run(tmp_path, capsys, str(world))
    interrupted(url, run_id)
    world.unlink()
    code, _, err = cli(["resume", run_id, "--db", url], capsys)
    assert code == 2 and str(world.resolve()) in err
    assert status(url, run_id) == ("interrupted", 0)  # not running, no lease held


@pytest.mark.parametrize("trigger", [
    "CREATE TRIGGER plant AFTER INSERT ON run BEGIN UPDATE run SET config = "
    "json_set(config, '$.run.scenario', '/tmp/x/evil.py') WHERE id = new.id; END",
    "CREATE TRIGGER drop_money BEFORE INSERT ON transfer_log BEGIN SELECT RAISE(IGNORE); END",
])
def test_a_database_with_triggers_is_not_written(tmp_path, capsys, trigger):
    url, run_id = relay_run(tmp_path, capsys)
    sql(url, trigger)
    runs = sql(url, "SELECT count(*) FROM run")[0][0]
    code, _, err = cli(["run", "relay", "--set", "run.episodes=8", "--db", url], capsys)
    assert code == 2 and "trigger" in err and len(err.strip().splitlines()) == 1, err
    assert sql(url, "SELECT count(*) FROM run")[0][0] == runs
    skill = tmp_path / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tidy\ndescription: Keep it tidy.\n---\nTidy up.\n")
    code, _, err = cli(["skills", "import", str(skill.parent), "--db", url], capsys)
    assert code == 2 and "trigger" in err
    code, _, err = cli(["report", run_id, "--db", url, "--out", str(tmp_path / "rep")], capsys)
    assert code in (0, None), err  # reading fires no trigger: the runs can still be read


def test_case_6_the_dashboard_builds_built_in_scenarios_only(tmp_path):
    from scenarios.report.dashboard import LiveMarket

    marker = tmp_path / "marker"
    evil = tmp_path / "evil.py"
    evil.write_text(EVIL.format(marker=str(marker)))
    with pytest.raises(ValueError, match="not a built-in"):
        LiveMarket(scenario=str(evil))
    assert not marker.exists()
