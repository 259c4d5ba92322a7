"""A report of a run that another process is writing works (issue 52, case 7): every reader loads the run in
one read transaction, so it sees the run as of one committed round (agents, logs and lineage agree)."""

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from market.store import make_engine
from scenarios.report.data import load_run
from tests.reliability.test_stored_code import cli

CATALLAX = str(Path(sys.executable).with_name("catallax"))


def test_case_7_reports_of_a_run_being_written(tmp_path, capsys):
    db = tmp_path / "live.db"
    url = f"sqlite:///{db}"
    writer = subprocess.Popen([CATALLAX, "run", "relay", "--set", "run.episodes=1000000", "--set", "run.checkpoint_every=1",
                               "--db", url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_id, deadline = None, time.monotonic() + 60
        while time.monotonic() < deadline:  # until the run has written some rounds with births
            time.sleep(0.2)
            if db.exists():
                try:
                    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                    row = con.execute("SELECT r.id, (SELECT count(*) FROM agent a WHERE a.run_id = r.id "
                                      "AND a.parent_id IS NOT NULL) FROM run r").fetchone()
                    con.close()
                except sqlite3.OperationalError:  # the schema is still being made
                    continue
                if row and row[1] >= 3:
                    run_id = row[0]
                    break
        assert run_id is not None and writer.poll() is None, "the writer did not get going"
        engine = make_engine(url, readonly=True)
        seen = []
        for _ in range(10):  # each read is one moment: logs, agents and lineage agree
            data = load_run(engine, run_id)
            last = max(e["episode"] for e in data.episodes)
            assert int(data.transfers["episode"].max()) <= last
            assert set(data.agents_graph.nodes) == set(data.ids.tolist())
            assert set(data.parent[data.parent > 0].tolist()) <= set(data.ids.tolist())
            assert (data.born <= last + 1).all()
            seen.append(last)
        engine.dispose()
        for i in range(2):
            code, out, err = cli(["report", run_id, "--db", url, "--out", str(tmp_path / f"r{i}"), "--json"], capsys)
            assert code in (0, None), err
            summary = Path(json.loads(out.splitlines()[-1])["summary"]).read_text()
            assert "Status **running**" in summary
        assert writer.poll() is None and seen[-1] > seen[0]  # it was written to all along
    finally:
        if writer.poll() is None:
            writer.send_signal(signal.SIGTERM)
        writer.communicate(timeout=60)
