"""Fixtures shared by the suite (helpers that tests import live in tests/helpers.py)."""

import pytest

from tests.helpers import Books


@pytest.fixture
def books() -> Books:
    """An empty set of books that checks the ledger invariants round by round."""
    return Books()
