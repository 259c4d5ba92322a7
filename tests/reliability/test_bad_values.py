"""Values that used to pass validation and then crash mid-run (exit 1, a traceback, a failed run row) or run
forever: each is now one error line naming the flag and the key, exit 2, nothing written. And ``--set`` of a
whole table merges into its section instead of resetting it to defaults."""

import json

import pytest

from scenarios.cli.main import main
from tests.helpers import error_line as shared_error_line

HUGE = "9" * 5000  # past Python's 4300-digit int conversion limit
CASES = [  # (argv after `run relay`, what the line must start with after "catallax: error: ", and name)
    (["--set", "market.rent=inf"], "--set market.rent=inf: market.rent = inf", "finite"),
    (["--set", "population.initial_wealth=inf"], "--set population.initial_wealth=inf: population.initial_wealth = inf",
     "finite"),
    (["--set", "market.reward_scale=inf"], "--set market.reward_scale=inf: market.reward_scale = inf", "finite"),
    (["--set", "market.reward_scale=nan"], "--set market.reward_scale=nan: market.reward_scale = nan", "finite"),
    (["--set", "market.rent=1e300"], "--set market.rent=1e300: market.rent = 1e+300",
     "less than or equal to 1000000000"),
    (["--set", "market.batch=99999999999999999999"], "--set market.batch=99999999999999999999: market.batch = ",
     "int64"),
    (["--set", "market.batch=65537"], "--set market.batch=65537: market.batch = 65537", "less than or equal to 65536"),
    (["--set", f"market.batch={HUGE}"], "--set market.batch=99999", "expected an integer"),
    (["--seed", "-1"], "--seed -1: run.seed = -1", "greater than or equal to 0"),
    (["--seed", "99999999999999999999999"], "--seed 99999999999999999999999: run.seed = ", "int64"),
    (["--set", "run.seed=-5"], "--set run.seed=-5: run.seed = -5", "greater than or equal to 0"),
    (["--set", "run.episodes=99999999999999999999"], "--set run.episodes=99999999999999999999: run.episodes = ",
     "int64"),
    (["--set", "run.episodes=100000001"], "--set run.episodes=100000001: run.episodes = 100000001",
     "less than or equal to 100000000"),
    (["--set", "market.rent_interval=99999999999999999999"], "--set market.rent_interval=", "int64"),
    (["--set", "relay.p_specialist=nan"], "--set relay.p_specialist=nan: relay.p_specialist = nan", "finite"),
    (["--set", "agents.lr=inf"], "--set agents.lr=inf: agents.lr = inf", "finite"),
    (["--set", "market={rent=inf}"], "--set market={rent=inf}: market.rent = inf", "finite"),
]


def error_line(capsys, argv) -> str:
    line = shared_error_line(capsys, argv)
    assert len(line) < 400, line  # a 5000-digit value is shortened, not echoed
    return line


@pytest.mark.parametrize("args, starts, names", CASES)
def test_bad_value_is_refused_before_anything_runs(tmp_path, capsys, args, starts, names):
    out = tmp_path / "out"
    line = error_line(capsys, ["run", "relay", *args, "--out", str(out)])
    assert line.startswith(starts) and names in line, line
    assert not out.exists()


def test_a_bad_value_in_the_file_is_blamed_on_the_file(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('[run]\nscenario = "relay"\n[market]\nrent = inf\n')
    line = error_line(capsys, ["run", str(path), "--set", "market.batch=2", "--out", str(tmp_path / "out")])
    assert line.startswith(f"{path}: market.rent = inf"), line


def test_the_bounds_themselves_pass_validation(tmp_path):
    from scenarios.run.config import load

    exp = load("relay", ["market.batch=65536", "run.episodes=100000000", "market.rent=1e9"], seed=2**63 - 1)
    assert (exp.market.batch, exp.run.episodes, exp.market.rent, exp.run.seed) == (65536, 10**8, 1e9, 2**63 - 1)


def test_the_largest_seed_runs(tmp_path, capsys):
    assert main(["run", "relay", "--seed", str(2**63 - 1), "--set", "run.episodes=2", "--json",
                 "--out", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["seed"] == 2**63 - 1


def test_a_table_value_merges_into_its_section():
    """``--set market={batch=2}`` used to replace [market] with defaults (blocks.toml's clearing, payment...)."""
    from scenarios.run.config import load

    base = load("blocks")
    merged = load("blocks", ["market={batch=2}"])
    assert merged.market.batch == 2 and base.market.batch != 2
    assert {**vars(base.market), "batch": 2} == vars(merged.market)
    assert load("blocks", ["blocks={heldout_count=7}"]).scenario.heldout_count == 7
