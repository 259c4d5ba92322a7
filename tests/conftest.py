"""Fixtures shared by the suite (helpers that tests import live in tests/helpers.py)."""

import pytest

from tests import pg
from tests.helpers import Books


@pytest.fixture(scope="session")
def postgres() -> pg.Cluster:
    """A throwaway PostgreSQL server for the session (tests/pg.py); skipped where the binaries are missing."""
    if pg.binaries() is None:
        pytest.skip("PostgreSQL server binaries not found (.ci/run installs them)")
    with pg.cluster() as cluster:
        yield cluster


@pytest.fixture(params=pg.DATABASES)
def db_url(request, tmp_path) -> str:
    """An empty database, once SQLite and once PostgreSQL: persistence tests run on both."""
    return pg.new_database(request.param, request, tmp_path)


@pytest.fixture
def books() -> Books:
    """An empty set of books that checks the ledger invariants round by round."""
    return Books()
