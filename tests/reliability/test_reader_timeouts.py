"""A database whose ``run`` table is a view that never finishes (a recursive query without end; views are
data anyone can write) neither hangs a reader nor deafens it: ``catallax report`` stops at the statement time
limit with one line (exit 2), and Ctrl-C stops it at once."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from market.database import STATEMENT_TIMEOUT_ENV
from tests.reliability.test_stored_code import cli, relay_run, sql

CATALLAX = Path(sys.executable).parent / "catallax"
ENDLESS = ("CREATE VIEW run AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
           "SELECT run_kept.* FROM n JOIN run_kept ON n.i < 0")


@pytest.fixture
def endless_db(tmp_path, capsys):
    url, run_id = relay_run(tmp_path, capsys)
    sql(url, "PRAGMA legacy_alter_table = ON", "ALTER TABLE run RENAME TO run_kept", ENDLESS)
    return url, run_id


def report(url, run_id, tmp_path, limit: str) -> subprocess.Popen:
    """``catallax report`` as a user's shell starts it: SIGINT at its default, whatever the test worker inherited or set
    (a process that ignores SIGINT passes that on, and Python then installs no Ctrl-C handler)."""
    env = os.environ | {STATEMENT_TIMEOUT_ENV: limit}
    return subprocess.Popen([str(CATALLAX), "report", run_id, "--db", url, "--out", str(tmp_path / "reports")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_report_of_an_endless_view_stops_at_the_time_limit(tmp_path, endless_db):
    started = time.monotonic()
    proc = report(*endless_db, tmp_path, limit="2")
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 2, err
    [line] = err.strip().splitlines()
    assert "2-second statement limit" in line and STATEMENT_TIMEOUT_ENV in line, line
    assert time.monotonic() - started < 45  # the process's start (imports) and the 2 s limit, not an endless wait


def test_ctrl_c_stops_a_report_of_an_endless_view(tmp_path, endless_db):
    proc = report(*endless_db, tmp_path, limit="600")
    try:
        time.sleep(8)  # started, and in the endless query (imports take a few seconds on a busy machine)
        assert proc.poll() is None
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        stopped = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode != 0 and stopped < 5, (proc.returncode, stopped)


@pytest.mark.parametrize("value", ["0", "soon", "nan"])
def test_a_bad_statement_limit_is_one_line_naming_it(tmp_path, capsys, monkeypatch, value):
    url, run_id = relay_run(tmp_path, capsys)
    monkeypatch.setenv(STATEMENT_TIMEOUT_ENV, value)
    code, _, err = cli(["report", run_id, "--db", url, "--out", str(tmp_path / "r")], capsys)
    assert code == 2 and STATEMENT_TIMEOUT_ENV in err and len(err.strip().splitlines()) == 1, err
