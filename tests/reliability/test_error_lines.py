"""Bad stored or given values end a command in one line naming the table and field or the file, exit 2, never a
traceback: a deeply nested or malformed ``skill.extra``, a missing parent version, an unreadable
``skill.created_at``, a ``--set`` or TOML value nested thousands deep, random bytes in a SQLite file's pages, an
import into a database on a read-only disk, a report onto a full disk (no half-written folder left), and a WAL
database in a read-only folder, which is reported. The disks are real: a read-only bind mount and a 48 KiB
tmpfs, each in a private mount namespace (``unshare``), where this machine lets a test make one."""

import json
import random
import shutil
import sqlite3
import subprocess
import sys

import pytest

from tests.reliability.test_stored_code import cli, relay_run, sql
from tests.reliability.test_stored_paths import library_db  # noqa: F401  (the fixture: a two-skill library)


def one_line(code, err) -> str:
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("column, value, named", [
    ("extra", "[" * 5000 + "]" * 5000, "skill.extra: nested deeper than"),
    ("extra", '{"a":' * 900 + "1" + "}" * 900, "skill.extra: nested deeper than"),  # JSON reads it; YAML would not
    ("extra", "{bad", "skill.extra: not JSON (Expecting property name"),
    ("parent_id", 999, "skill.parent_id = 999: no such version"),
    ("created_at", "yesterday", "skill.created_at: a stored value cannot be read (Invalid isoformat"),
])
@pytest.mark.parametrize("action", ["export", "show"])
def test_a_bad_stored_skill_value_is_one_line_naming_its_column(tmp_path, capsys, library_db, column, value, named,
                                                                action):
    sql(library_db, f"UPDATE skill SET {column} = ?", args=(value,))
    target = [str(tmp_path / "export")] if action == "export" else ["tidy"]
    err = one_line(*cli(["skills", action, *target, "--db", library_db], capsys)[::2])
    assert named in err
    assert not (tmp_path / "export").exists()


def test_a_value_nested_thousands_deep_is_one_line(tmp_path, capsys):
    deep = "[" * 5000 + "]" * 5000
    err = one_line(*cli(["config", "show", "relay", "--set", f"relay.x={deep}"], capsys)[::2])
    assert "--set relay.x=" in err and "nested deeper than 32 levels" in err
    err = one_line(*cli(["config", "show", "relay", "--set", "relay.x=" + "{a=" * 40 + "1" + "}" * 40], capsys)[::2])
    assert "nested deeper than 32 levels" in err
    for value in (deep, "[" * 40 + "]" * 40):
        path = tmp_path / "deep.toml"
        path.write_text(f'[run]\nscenario = "relay"\n[relay]\nx = {value}\n')
        err = one_line(*cli(["config", "show", str(path)], capsys)[::2])
        assert str(path) in err and "nested deeper than 32 levels" in err


def test_random_bytes_in_a_sqlite_file_are_one_line_naming_it(tmp_path, capsys):
    url, run_id = relay_run(tmp_path, capsys)
    path = tmp_path / "their.db"
    data, rng = bytearray(path.read_bytes()), random.Random(0)
    for page in range(2, len(data) // 4096):  # every page but the header's: the file still opens
        for _ in range(64):
            data[page * 4096 + rng.randrange(4096)] = rng.randrange(256)
    path.write_bytes(bytes(data))
    for command in (["report", run_id, "--out", str(tmp_path / "r")], ["resume", run_id],
                    ["run", "relay", "--set", "run.episodes=8"]):
        err = one_line(*cli([*command, "--db", url], capsys)[::2])
        assert url in err and ("the database cannot be used" in err or "cannot open the database" in err)


def in_namespace(script: str) -> subprocess.CompletedProcess:
    """``script`` (sh) in a private user and mount namespace: its mounts vanish with it, and need no root."""
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    if shutil.which("unshare") is None or probe.returncode != 0:
        pytest.skip("this machine lets no test make a private mount namespace (unshare), so no real read-only or "
                    "full disk here")
    return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-ec", script],
                          capture_output=True, text=True, timeout=300)


CATALLAX = f"{sys.executable} -m scenarios.cli.main"


def test_import_into_a_database_on_a_read_only_disk_is_one_line(tmp_path, capsys, library_db):
    cli(["skills", "export", str(tmp_path / "skills"), "--db", library_db], capsys)
    (tmp_path / "ro").mkdir()
    shutil.copy(tmp_path / "lib.db", tmp_path / "ro" / "lib.db")
    done = in_namespace(f"mount --bind {tmp_path}/ro {tmp_path}/ro; mount -o remount,bind,ro {tmp_path}/ro; "
                        f"{CATALLAX} skills import {tmp_path}/skills --db sqlite:///{tmp_path}/ro/lib.db")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"cannot write {tmp_path}/ro/lib.db (Read-only file system)" in done.stderr


@pytest.mark.slow  # a report's figures: ~20 s on 2 cores
def test_a_wal_database_in_a_read_only_folder_is_reported(tmp_path, capsys):
    url, run_id = relay_run(tmp_path, capsys)
    (tmp_path / "ro").mkdir()
    shutil.copy(tmp_path / "their.db", tmp_path / "ro" / "their.db")
    con = sqlite3.connect(tmp_path / "ro" / "their.db")
    assert con.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    con.close()
    done = in_namespace(f"mount --bind {tmp_path}/ro {tmp_path}/ro; mount -o remount,bind,ro {tmp_path}/ro; "
                        f"{CATALLAX} report {run_id} --db sqlite:///{tmp_path}/ro/their.db --out {tmp_path}/out --json")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / f"report-{run_id}" / "summary.md").is_file()


@pytest.mark.slow  # a report's figures: ~20 s on 2 cores
def test_a_report_onto_a_full_disk_is_one_line_and_leaves_no_folder(tmp_path, capsys):
    url, run_id = relay_run(tmp_path, capsys)
    (tmp_path / "full").mkdir()
    done = in_namespace(f"mount -t tmpfs -o size=48k tmpfs {tmp_path}/full; "
                        f"{CATALLAX} report {run_id} --db {url} --out {tmp_path}/full/out || code=$?; "
                        f"ls -A {tmp_path}/full; exit ${{code:-0}}")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "cannot write the report (No space left on device)" in done.stderr
    assert done.stdout.strip() == ""  # the tmpfs as the command left it: no empty report folder
