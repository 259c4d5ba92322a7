"""A throwaway PostgreSQL server for the persistence tests (real server, no mocks).

``initdb`` into a fresh temp folder, ``postgres`` started directly (not through
``pg_ctl``, which daemonizes it) with its Unix socket in that folder and a free TCP
port on 127.0.0.1, one new database per test, and an immediate shutdown at the end,
or as soon as the process that started it dies, however it dies
(tests/processes.py ``dies_with_parent``). PostgreSQL refuses to run as root, so as root the
server runs as ``nobody`` (the folder is handed to it). Durability is switched
off (``fsync=off``): the tests kill clients, never the machine.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from tests.processes import dies_with_parent, free_port

DATABASES = ["sqlite", "postgres"]  # what the persistence tests run on


def new_database(kind: str, request, folder: Path) -> str:
    """An empty database of ``kind``: a SQLite file in ``folder``, or a new database on the test server
    (the session fixture ``postgres`` in tests/conftest.py)."""
    if kind == "sqlite":
        return f"sqlite:///{folder / 'catallax.db'}"
    return request.getfixturevalue("postgres").new_database()


def binaries() -> Path | None:
    """The folder with initdb/pg_ctl: on PATH, else Debian's /usr/lib/postgresql/N/bin."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(folders[-1]).parent if folders else None


class Cluster:
    """A running server; :meth:`new_database` gives each test its own empty database."""

    def __init__(self, folder: Path, port: int, user: str):
        self.folder, self.port, self.user = folder, port, user
        self._names = itertools.count()

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(host="127.0.0.1", port=self.port, user=self.user, dbname="postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@contextmanager
def cluster():
    """Start a server; yields a :class:`Cluster` and stops and removes it afterwards."""
    bin_dir = binaries()
    if bin_dir is None:
        raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) not found; apt-get install postgresql")
    folder = Path(tempfile.mkdtemp(prefix="catallax-pg-"))
    run_as = {}
    if os.geteuid() == 0:  # initdb and postgres refuse root
        run_as = {"user": "nobody", "group": "nogroup" if _has_group("nogroup") else "nobody", "extra_groups": []}
        os.chown(folder, *_ids(run_as["user"], run_as["group"]))
    data, port, user = folder / "data", free_port(), "catallax"

    def as_server(*cmd):
        subprocess.run(cmd, check=True, capture_output=True, cwd=folder, timeout=120, **run_as)

    try:
        try:
            as_server(bin_dir / "initdb", "-D", data, "-U", user, "--auth=trust", "--no-locale", "--encoding=UTF8",
                      "--no-sync")
        except subprocess.CalledProcessError as err:
            raise RuntimeError(f"PostgreSQL test server did not start: {(err.stderr or b'').decode()[-2000:]}") from None
        options = ["-k", folder, "-p", str(port), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                   "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=50"]
        with open(folder / "server.log", "w") as log:  # SIGQUIT: PostgreSQL's immediate shutdown
            server = subprocess.Popen([bin_dir / "postgres", "-D", data, *options], stdout=log, stderr=subprocess.STDOUT,
                                      cwd=folder, preexec_fn=dies_with_parent(signal.SIGQUIT), **run_as)
        try:
            _wait_ready(server, folder)
            yield Cluster(folder, port, user)
        finally:
            server.send_signal(signal.SIGQUIT)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(server: subprocess.Popen, folder: Path, timeout: float = 60) -> None:
    """Until the server takes connections (what ``pg_ctl start -w`` waits for: ``postmaster.pid``'s status line
    says ``ready``); one that exits or stays silent fails with its log."""
    deadline = time.monotonic() + timeout
    while not _ready(folder / "data" / "postmaster.pid"):
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"PostgreSQL test server did not start: {(folder / 'server.log').read_text()[-2000:]}")
        time.sleep(0.1)


def _ready(pid_file: Path) -> bool:
    try:
        lines = pid_file.read_text().splitlines()
    except OSError:
        return False
    return len(lines) >= 8 and lines[7].strip() == "ready"


def _has_group(name: str) -> bool:
    import grp

    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def _ids(user: str, group: str) -> tuple[int, int]:
    import grp
    import pwd

    return pwd.getpwnam(user).pw_uid, grp.getgrnam(group).gr_gid
