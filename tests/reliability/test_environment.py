"""The environment failing the command: a scenario file that is not UTF-8, cannot be read, is empty; an
output folder or database that cannot be written; an in-memory database whose run could never be resumed.
Each is one error line, exit 2, nothing written. Also: no progress-bar frames into a piped stderr, and the
report counts in words ("0 episodes", "1 agent")."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from market.store import RunStore
from scenarios.cli.main import main
from tests.helpers import error_line
from scenarios.run.config import load

CATALLAX = Path(sys.executable).parent / "catallax"


@pytest.mark.parametrize("body, named", [
    (b"\xff", "not UTF-8 text (invalid start byte at byte 0)"),
    (b'[run]\nscenario = "relay"\n# caf\xe9\n', "not UTF-8 text"),
    (b"", 'no [run] scenario: a scenario file names its world (e.g. scenario = "relay")'),
    (b"[market]\nbatch = 2\n", "no [run] scenario"),
    (b"[run]\nepisodes = 5\n", "no [run] scenario"),
    (b"[run]\nepisodes = " + b"9" * 5000 + b"\n", "not valid TOML"),
])
def test_scenario_file_that_cannot_be_used(tmp_path, capsys, body, named):
    path = tmp_path / "x.toml"
    path.write_bytes(body)
    out = tmp_path / "out"
    line = error_line(capsys, ["run", str(path), "--out", str(out)])
    assert line.startswith(f"{path}: {named}"), line
    assert not out.exists()


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
def test_scenario_file_that_cannot_be_read(tmp_path, capsys):
    """/proc/self/mem fails every read at offset 0 (EIO), for root too: permission bits would not."""
    path = tmp_path / "x.toml"
    path.symlink_to("/proc/self/mem")
    line = error_line(capsys, ["run", str(path), "--out", str(tmp_path / "out")])
    assert line == f"{path}: cannot read it (Input/output error)", line


def test_out_is_a_file(tmp_path, capsys):
    out = tmp_path / "out"
    out.write_text("a file\n")
    assert error_line(capsys, ["run", "relay", "--out", str(out)]) == f"--out {out}: not a folder"
    line = error_line(capsys, ["run", "relay", "--out", str(out / "sub")])
    assert line.startswith(f"--out {out / 'sub'}: cannot write"), line
    assert out.read_text() == "a file\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs Linux /proc")
def test_database_folder_that_cannot_be_written(tmp_path, capsys):
    """/proc takes no new files, for root too (a chmod 500 folder does not stop root)."""
    line = error_line(capsys, ["run", "relay", "--db", "sqlite:////proc/catallax.db", "--out", str(tmp_path / "out")])
    assert line.startswith("--db sqlite:////proc/catallax.db: cannot write /proc"), line
    assert not (tmp_path / "out").exists() and not Path("/proc/catallax.db").exists()
    line = error_line(capsys, ["run", "relay", "--out", "/proc/runs"])
    assert line.startswith("--out /proc/runs: cannot write there"), line


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_database_file_that_cannot_be_written(tmp_path, capsys):
    db = tmp_path / "x.db"
    db.write_bytes(b"")
    db.chmod(0o444)
    line = error_line(capsys, ["run", "relay", "--db", f"sqlite:///{db}", "--out", str(tmp_path / "out")])
    assert line.startswith(f"--db sqlite:///{db}: cannot write {db}"), line


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_in_memory_database_is_refused(tmp_path, capsys, url):
    """A run in memory could never be resumed or reported: refused, not run and lost."""
    line = error_line(capsys, ["run", "relay", "--db", url, "--out", str(tmp_path / "out")])
    assert line.startswith(f"--db {url}: an in-memory database is gone when the run ends"), line
    assert not (tmp_path / "out").exists()
    sweep = ["sweep", "relay", "--grid", "market.payment=final_only", "--db", url, "--out", str(tmp_path / "out")]
    assert "in-memory database" in error_line(capsys, sweep)


def test_no_progress_frames_into_a_pipe(tmp_path):
    """tqdm's \\r frames made a piped stderr (a log file, CI) one long line; only a terminal gets the bar."""
    proc = subprocess.run([str(CATALLAX), "run", "relay", "--set", "run.episodes=20", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "round/s" not in proc.stderr and "ledger_hash" in proc.stdout


def test_report_counts_in_words(tmp_path, capsys):
    """A run killed before its first round: "0 episodes run", not "1 episodes"."""
    url = f"sqlite:///{tmp_path / 'x.db'}"
    store = RunStore.create(url, "relay", 0, load("relay").to_dict())
    store.engine.dispose()
    assert main(["report", store.run_id, "--db", url, "--out", str(tmp_path)]) == 0
    summary = (tmp_path / f"report-{store.run_id}" / "summary.md").read_text()
    assert "0 episodes run" in summary and "1 episodes" not in summary and "replaying 0 transfers" in summary
