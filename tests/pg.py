"""A throwaway PostgreSQL server for the persistence tests (real server, no mocks).

``initdb`` into a fresh temp folder, ``pg_ctl start`` with its Unix socket in
that folder and a free TCP port on 127.0.0.1, one new database per test, and
``pg_ctl stop`` at the end. PostgreSQL refuses to run as root, so as root the
server runs as ``nobody`` (the folder is handed to it). Durability is switched
off (``fsync=off``): the tests kill clients, never the machine.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

from tests.processes import free_port

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
            options = (f"-k {folder} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off "
                       "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50")
            as_server(bin_dir / "pg_ctl", "start", "-w", "-D", data, "-l", folder / "server.log", "-o", options)
        except subprocess.CalledProcessError as err:
            log = folder / "server.log"
            detail = (err.stderr or b"").decode() + (log.read_text() if log.exists() else "")
            raise RuntimeError(f"PostgreSQL test server did not start: {detail[-2000:]}") from None
        try:
            yield Cluster(folder, port, user)
        finally:
            as_server(bin_dir / "pg_ctl", "stop", "-D", data, "-m", "immediate")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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
