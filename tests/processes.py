"""Real servers for the tests: a free loopback port, and a server process that is up for a ``with`` block.

The dashboard test (solara), the openai backend test (``vllm serve``) and PostgreSQL (tests/pg.py)
all start real processes on 127.0.0.1; this is the one place that starts, waits for and stops them.
A server is also stopped when the process that started it dies, however it dies (a SIGKILL, a worker
killed for memory): the kernel sends it a signal then (:func:`dies_with_parent`), where a ``finally``
would never run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from scenarios.run.lifetime import die_with_parent

VLLM_SERVED = "smollm2-135m-instruct"
"""The model name the suite's ``vllm serve`` (tests/conftest.py) serves the embedded SmolLM2 under."""


def dies_with_parent(signum: int = signal.SIGTERM):
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``signum`` when the thread that started it
    exits (scenarios/run/lifetime.py; it runs after Popen's ``user=``/``group=`` change, which would clear it)."""
    parent = os.getpid()
    return lambda: die_with_parent(parent, signum)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(cmd: list[str], url: str, log: Path, timeout: float, **popen):
    """Start ``cmd`` (output to ``log``), wait until ``url`` answers 200, yield the process; on exit
    terminate it (kill it if it lingers). A server that exits or stays silent fails with its log's tail."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, preexec_fn=dies_with_parent(), **popen)
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


class ToyOpenAIServer:
    """Answers ``/models`` and ``/chat/completions``; the next ``fail`` requests get ``status``.
    A scoring request (``top_logprobs``) about a text containing "good" leans yes, otherwise no. Each request's
    ``Authorization`` header is kept in ``keys`` (what a client sent as its API key)."""

    def __init__(self):
        self.fail, self.status, self.seen, self.keys = 0, 503, 0, []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                owner.keys.append(self.headers.get("Authorization"))
                self._reply(200, {"data": [{"id": "toy"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.seen += 1
                owner.keys.append(self.headers.get("Authorization"))
                if owner.fail > 0:
                    owner.fail -= 1
                    return self._reply(owner.status, {"error": "try later"})
                if "top_logprobs" in body:
                    yes = -0.1 if "good" in body["messages"][-1]["content"] else -3.0
                    top = [{"token": "yes", "logprob": yes}, {"token": "no", "logprob": -1.5}]
                    content = [{"token": "yes", "logprob": yes, "top_logprobs": top}]
                    return self._reply(200, {"choices": [{"message": {"content": "yes"}, "finish_reason": "length",
                                                          "logprobs": {"content": content}}]})
                self._reply(200, {"choices": [{"message": {"content": "4"}, "finish_reason": "stop",
                                               "logprobs": {"content": [{"token": "4", "logprob": -0.2}]}}],
                                  "usage": {"prompt_tokens": 9, "completion_tokens": 1}})

        self.http, self.running = ThreadingHTTPServer(("127.0.0.1", 0), Handler), True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def stop(self):
        if self.running:
            self.running = False
            self.http.shutdown()
            self.http.server_close()
