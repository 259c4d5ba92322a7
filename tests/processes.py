"""Real servers for the tests: a free loopback port, and a server process that is up for a ``with`` block.

The dashboard test (solara), the openai backend test (``vllm serve``) and PostgreSQL (tests/pg.py)
all start real processes on 127.0.0.1; this is the one place that starts, waits for and stops them.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

VLLM_SERVED = "smollm2-135m-instruct"
"""The model name the suite's ``vllm serve`` (tests/conftest.py) serves the embedded SmolLM2 under."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(cmd: list[str], url: str, log: Path, timeout: float, **popen):
    """Start ``cmd`` (output to ``log``), wait until ``url`` answers 200, yield the process; on exit
    terminate it (kill it if it lingers). A server that exits or stays silent fails with its log's tail."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, **popen)
        try:
            deadline = time.monotonic() + timeout
            while not _answers(url):
                if proc.poll() is not None:
                    raise RuntimeError(f"{cmd[0]} exited ({proc.returncode}): {log.read_text()[-2000:]}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{url} did not answer in {timeout:g} s; see {log}")
                time.sleep(0.5)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False
