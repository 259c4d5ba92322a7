"""Bad input, end to end through the CLI: malformed scenario files and unusable databases each give one
error line that names the file (or URL), the key and the value; exit code 2; nothing written."""

import pytest
from sqlalchemy import create_engine, text

from scenarios.cli.main import main

HEAD = '[run]\nscenario = "relay"\nepisodes = 5\n'
CREDIT = HEAD + '[market]\nbatch = 8\n[agents]\nactions = "grpo"\ngroup = 4\ncredit = "delta_ttg"\n'
CONFIGS = [  # (file body, what the error line must name besides the file)
    (HEAD + '[market]\nclearng = "first_price"\n', ["market.clearng", "'first_price'", "did you mean 'clearing'"]),
    ('[run]\nscenario = "relay"\nepisodes = "ten"\n', ["run.episodes", "'ten'"]),
    (HEAD + "[market]\nbatch = true\n", ["market.batch", "True", "integer"]),
    (HEAD + "[market]\nbatch = 2.5\n", ["market.batch", "2.5"]),
    (HEAD + '[market]\nrent = "0.05"\n', ["market.rent", "'0.05'", "number"]),
    (HEAD + "[market]\nconserve = 1\n", ["market.conserve", "1", "true or false"]),
    (HEAD + '[market]\npayment = "gift"\n', ["market.payment", "'gift'"]),
    (HEAD + "[market]\nbatch = {x = 1}\n", ["market.batch", "{'x': 1}"]),
    (HEAD + "[relay]\nstages = 100\n", ["relay.stages", "100"]),
    (HEAD + "[population]\nmin_agents = 10\nmax_agents = 5\n", ["population", "'min_agents': 10", "max_agents"]),
    ("market = 3\n" + HEAD, ["market = 3"]),
    (HEAD + "[markt]\nbatch = 2\n", ["[markt]", "did you mean 'market'"]),
    (HEAD + "[market\nbatch = 2\n", ["not valid TOML", "line 4"]),
    ('[run]\nscenario = "nosuch"\n', ["run.scenario", "'nosuch'"]),
    (HEAD + "checkpoint_seconds = 0\n", ["run.checkpoint_seconds", "0", "greater than 0"]),
    (HEAD + "checkpoint_seconds = 900\n", ["run.checkpoint_seconds", "900", "less than or equal to 600"]),
    (HEAD + "checkpoint_every = 0\n", ["run.checkpoint_every", "0", "greater than or equal to 1"]),
    (CREDIT + "[agents.credit_settings.delta_ttg]\nrhoo = 0.3\n",
     ["agents.credit_settings.delta_ttg.rhoo", "0.3", "unknown key", "did you mean 'rho'"]),
    (CREDIT + "[agents.credit_settings.delta_ttg]\nrho = 2\n", ["agents.credit_settings.delta_ttg.rho", "2", "less than"]),
    (CREDIT + '[agents.credit_settings.delta_ttg]\nrho = "0.3"\n', ["agents.credit_settings.delta_ttg.rho", "number"]),
    (CREDIT + "[agents.credit_settings.draco]\neps = 0.1\n", ["agents.credit_settings.draco", "not read"]),
    ('[run]\nscenario = "recsys"\n[recsys.world]\nuserz = 300\n', ["recsys.world.userz", "did you mean 'users'"]),
    ('[run]\nscenario = "recsys"\n[recsys.world]\nusers = 5\n', ["recsys.world.users", "5", "greater than"]),
    ('[run]\nscenario = "recsys"\n[recsys]\nusers = 300\n', ["recsys.users", "did you mean 'world.users'"]),
    ('[run]\nscenario = "recsys"\n[recsys]\ncredit = "presence"\n', ["recsys.credit", "did you mean 'skills.credit'"]),
    (HEAD + "[skills]\nevery = 2\n", ["skills.every", "2", "scenario 'relay' has no skill library"]),
]
OVERRIDES = [  # (--set arguments, what the error line must name)
    (["agents.credit_settings.delta_ttg.rhoo=0.3"], ["agents.credit_settings.delta_ttg.rhoo", "did you mean 'rho'"]),
    (["agents.credit_settings.triage.bonus.progress=true"], ["agents.credit_settings.triage.bonus.progress", "number"]),
    (["recsys.world.userz=300"], ["recsys.world.userz", "did you mean 'users'"]),
    (["recsys.credit=presence"], ["--set recsys.credit=presence", "recsys.credit = 'presence'", "unknown key",
                                  "did you mean 'skills.credit'"]),  # the key moved to [skills]
    (["skills.credit=presence"], ["--set skills.credit=presence", "skills.credit = 'presence'",
                                  "scenario 'relay' has no skill library"]),
]


def one_error_line(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and captured.out == "", captured
    return lines[0]


@pytest.mark.parametrize("body, named", CONFIGS)
def test_malformed_scenario_file(tmp_path, capsys, body, named):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    out = tmp_path / "out"
    line = one_error_line(capsys, ["run", str(path), "--out", str(out)])
    assert str(path) in line and all(n in line for n in named), line
    assert not out.exists()


@pytest.mark.parametrize("sets, named", OVERRIDES)
def test_bad_override(tmp_path, capsys, sets, named):
    scenario = "recsys" if sets[0].startswith("recsys") else "relay"  # skills.*: relay has no skill library
    line = one_error_line(capsys, ["run", scenario, *(a for s in sets for a in ("--set", s)), "--out", str(tmp_path)])
    assert all(n in line for n in named), line
    assert not any(tmp_path.iterdir())


def test_unreachable_database(tmp_path, capsys):
    line = one_error_line(capsys, ["run", "relay", "--db", "postgresql://ann:secret@127.0.0.1:1/x", "--out", str(tmp_path)])
    assert "postgresql://ann:***@127.0.0.1:1/x: cannot open the database" in line and "secret" not in line


def test_a_file_that_is_not_a_database(tmp_path, capsys):
    path = tmp_path / "junk.db"
    path.write_bytes(b"not a database, just bytes " * 200)
    line = one_error_line(capsys, ["run", "relay", "--db", f"sqlite:///{path}"])
    assert str(path) in line and "file is not a database" in line


def test_resume_of_a_run_that_does_not_exist(tmp_path, capsys):
    db = tmp_path / "runs.db"
    assert main(["run", "relay", "--set", "run.episodes=2", "--db", f"sqlite:///{db}"]) == 0
    capsys.readouterr()
    line = one_error_line(capsys, ["resume", "nosuchrun", "--db", f"sqlite:///{db}"])
    assert "run nosuchrun: not found" in line and str(db) in line
    missing = tmp_path / "missing.db"
    line = one_error_line(capsys, ["resume", "nosuchrun", "--db", f"sqlite:///{missing}"])
    assert "no such database file" in line and not missing.exists()


@pytest.mark.parametrize("command", [["run", "relay"], ["resume", "somerun"],
                                     ["sweep", "relay", "--grid", "market.rent=0.01,0.02"]])
def test_a_database_from_a_newer_schema(db_url, capsys, tmp_path, command):
    from market.store import make_engine

    make_engine(db_url).dispose()
    engine = create_engine(db_url)
    with engine.begin() as c:
        c.execute(text("UPDATE alembic_version SET version_num = 'f00d_newer'"))
    line = one_error_line(capsys, [*command, "--db", db_url, "--out", str(tmp_path / "out")])
    assert "schema revision 'f00d_newer' is unknown" in line and not (tmp_path / "out").exists()
    with engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM run")).scalar() == 0  # nothing written
    engine.dispose()
