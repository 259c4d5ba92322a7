"""Bad stored values and oversized requests are one line and exit 2 (issue 52, cases 8, 9 and 11): a foreign
database's invalid JSON or non-integer log values name the table and field; counts are bounded before
anything runs; a sweep grid counts each value once and holds a bounded number of runs."""

import json

import pytest

from scenarios.run.sweep import MAX_RUNS, parse_grid, plan
from tests.reliability.test_stored_code import cli, interrupted, relay_run, sql

FOREIGN = {  # an UPDATE on a finished relay run -> the field the line names
    "summary not JSON": ("UPDATE run SET summary = '{oops'", "run.summary"),
    "config not JSON": ("UPDATE run SET config = '[1, 2'", "run.config"),
    "summary a list": ("UPDATE run SET summary = '[1]'", "run.summary"),
    "amount text": ("UPDATE transfer_log SET amount = 'abc' WHERE id = (SELECT min(id) FROM transfer_log)",
                    "transfer_log.amount"),
    "amount 1e300": ("UPDATE transfer_log SET amount = 1e300 WHERE id = (SELECT min(id) FROM transfer_log)",
                     "transfer_log.amount"),
    "reason 99999": ("UPDATE transfer_log SET reason = 99999 WHERE id = (SELECT min(id) FROM transfer_log)",
                     "transfer_log.reason"),
    "episode steps text": ("UPDATE episode_log SET steps = 'x' WHERE id = (SELECT min(id) FROM episode_log)",
                           "episode_log.steps"),
    "born huge": ("UPDATE agent SET born_episode = 1e300 WHERE agent_id = 1", "agent.born_episode"),
    "started_at garbage": ("UPDATE run SET started_at = 'not a date'", "run"),
}


@pytest.mark.parametrize("case", FOREIGN)
def test_case_8_a_foreign_value_is_one_line_naming_its_field(tmp_path, capsys, case):
    url, run_id = relay_run(tmp_path, capsys)
    statement, field = FOREIGN[case]
    sql(url, statement)
    code, _, err = cli(["report", run_id, "--db", url, "--out", str(tmp_path / "rep")], capsys)
    assert code == 2 and field in err and len(err.strip().splitlines()) == 1, err
    if case in ("config not JSON", "amount text", "reason 99999"):
        interrupted(url, run_id)
        code, _, err = cli(["resume", run_id, "--db", url], capsys)
        assert code == 2 and field in err and len(err.strip().splitlines()) == 1, err
        assert sql(url, "SELECT count(*) FROM lease")[0][0] == 0  # released on the way out


def test_case_9_a_stored_episode_count_past_its_bound_is_refused(tmp_path, capsys):
    url, run_id = relay_run(tmp_path, capsys)
    config = json.loads(sql(url, "SELECT config FROM run")[0][0])
    config["run"]["episodes"] = 9223372036854775807
    sql(url, "UPDATE run SET config = ?", args=(json.dumps(config),))
    interrupted(url, run_id)
    code, _, err = cli(["resume", run_id, "--db", url], capsys)
    assert code == 2 and "run.episodes" in err, err
    assert sql(url, "SELECT status FROM run")[0][0] == "interrupted"


@pytest.mark.parametrize("key, named", [
    ("population.initial_agents=4611686018427387904", "population.initial_agents"),
    ("relay.horizon_factor=10000000", "relay.horizon_factor"),
    ("population.max_agents=10000000000000000", "population.max_agents"),
    ("population.initial_agents=100000000000000", "out of memory"),  # valid, but no machine holds it
])
def test_count_keys_are_bounded(tmp_path, capsys, key, named):
    code, _, err = cli(["run", "relay", "--set", key, "--db", f"sqlite:///{tmp_path / 'x.db'}"], capsys)
    assert code == 2 and named in err and len(err.strip().splitlines()) == 1, err


def test_case_11_a_grid_counts_each_value_once():
    grid = parse_grid(["market.batch=1,1,+1,2", "market.payment=bucket_brigade,\"bucket_brigade\""])
    assert grid == {"market.batch": ["1", "2"], "market.payment": ["bucket_brigade"]}
    tasks = plan("relay", ["run.episodes=4"], grid, 1)
    assert [t.point for t in tasks] == [{"market.batch": "1", "market.payment": "bucket_brigade"},
                                        {"market.batch": "2", "market.payment": "bucket_brigade"}]
    assert parse_grid(["agents.bids=true,1"])["agents.bids"] == ["true", "1"]  # true is not 1


def test_case_11_a_sweep_past_its_cap_is_refused_before_planning(tmp_path, capsys):
    values = ",".join(str(v) for v in range(1, 1001))
    code, _, err = cli(["sweep", "relay", "--grid", f"run.episodes={values}", "--seeds", str(MAX_RUNS // 1000 + 1),
                        "--out", str(tmp_path)], capsys)
    assert code == 2 and f"{MAX_RUNS:,}" in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_run_number_past_int64_ids_is_one_line(tmp_path, capsys):
    """Found by the fuzz suite: run_number.num = 2^63 - 1 made the log's id range overflow SQLite's integers."""
    url, run_id = relay_run(tmp_path, capsys)
    sql(url, "UPDATE run_number SET num = 9223372036854775807")
    code, _, err = cli(["report", run_id, "--db", url, "--out", str(tmp_path / "rep")], capsys)
    assert code == 2 and "run_number.num" in err and len(err.strip().splitlines()) == 1, err


def test_a_finished_run_without_its_time_or_summary_resumes_in_one_line(tmp_path, capsys):
    url, run_id = relay_run(tmp_path, capsys)
    sql(url, "UPDATE run SET finished_at = NULL")
    code, _, err = cli(["resume", run_id, "--db", url, "--json"], capsys)
    assert code in (0, None) and "finished; nothing to resume" in err
    sql(url, "UPDATE run SET summary = '[]'")
    code, _, err = cli(["resume", run_id, "--db", url], capsys)
    assert code == 2 and "run.summary" in err
