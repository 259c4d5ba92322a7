"""API keys and the server an LLM run contacts: a key comes from the environment only, is never stored in the
run's database nor printed, a config (a file, a ``--set``, a foreign database's stored config) that carries one
is refused in one line, a server other than the config's is named, and a server that is not there ends the
command in one line within its retry deadline (a real refused connection, a real toy OpenAI server)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

from sqlalchemy import create_engine, text

from tests.processes import ToyOpenAIServer

KEY = "sk-catallax-test-9f27c1"
TOY_RUN = ["--set", "wordmath.llm.backend=openai", "--set", "run.episodes=16", "--set", "wordmath.heldout=4"]


def catallax(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "scenarios.cli.main", *args], capture_output=True, text=True,
                          env=env or os.environ.copy(), timeout=timeout)


def test_a_key_given_by_the_environment_reaches_the_server_and_is_stored_nowhere(tmp_path):
    server = ToyOpenAIServer()
    try:
        env = os.environ | {"CATALLAX_OPENAI_API_KEY": KEY}
        done = catallax("run", "wordmath", *TOY_RUN, "--set", f"wordmath.llm.base_url={server.url}",
                        "--out", str(tmp_path), env=env)
        assert done.returncode == 0, done.stderr
        assert set(server.keys) == {f"Bearer {KEY}"}  # the server got it on every request
        stored = b"".join(p.read_bytes() for p in tmp_path.glob("catallax.db*"))
        assert KEY.encode() not in stored and b"api_key\"" not in stored  # the database bytes (WAL too)
        assert KEY not in done.stdout + done.stderr
        shown = catallax("config", "show", "wordmath", env=env)
        assert shown.returncode == 0 and KEY not in shown.stdout and 'api_key_env = "CATALLAX_OPENAI_API_KEY"' in shown.stdout
    finally:
        server.stop()


def test_a_key_named_by_its_own_variable_is_read_from_it(tmp_path):
    server = ToyOpenAIServer()
    try:
        env = os.environ | {"MY_LLM_KEY": KEY}
        done = catallax("run", "wordmath", *TOY_RUN, "--set", f"wordmath.llm.base_url={server.url}",
                        "--set", "wordmath.llm.api_key_env=MY_LLM_KEY", "--out", str(tmp_path), env=env)
        assert done.returncode == 0, done.stderr
        assert set(server.keys) == {f"Bearer {KEY}"}
    finally:
        server.stop()


def test_a_key_given_by_set_is_refused_in_one_line_and_never_repeated(tmp_path):
    for command in (["config", "show", "wordmath"], ["run", "wordmath", "--out", str(tmp_path)]):
        done = catallax(*command, "--set", f"wordmath.llm.api_key={KEY}")
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and KEY not in done.stderr
        assert "wordmath.llm.api_key" in done.stderr and "CATALLAX_OPENAI_API_KEY" in done.stderr
    assert not (tmp_path / "catallax.db").exists()


def test_a_stored_config_with_a_key_is_refused_on_resume(tmp_path):
    done = catallax("run", "relay", "--set", "run.episodes=40", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    db = create_engine(f"sqlite:///{tmp_path / 'catallax.db'}")
    with db.begin() as conn:  # an old or foreign database: an unfinished wordmath run whose config holds a key
        run_id, config = conn.execute(text("SELECT id, config FROM run")).one()
        config = json.loads(config)
        config["run"]["scenario"] = "wordmath"
        del config["relay"]
        config["wordmath"] = {"llm": {"backend": "openai", "api_key": KEY}}
        conn.execute(text("UPDATE run SET config = :c, status = 'running', summary = NULL WHERE id = :i"),
                     {"c": json.dumps(config), "i": run_id})
    db.dispose()
    done = catallax("resume", run_id, "--out", str(tmp_path))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "wordmath.llm.api_key" in done.stderr and KEY not in done.stderr


def test_a_server_other_than_the_configs_is_named(tmp_path):
    server = ToyOpenAIServer()
    try:
        env = os.environ | {"CATALLAX_OPENAI_BASE_URL": server.url}
        done = catallax("run", "wordmath", *TOY_RUN, "--set", "wordmath.llm.base_url=http://127.0.0.1:9/v1",
                        "--out", str(tmp_path), env=env)
        assert done.returncode == 0, done.stderr
        assert f"llm.base_url is http://127.0.0.1:9/v1 in the run's config; contacting {server.url}" in done.stderr
        assert server.seen > 0
    finally:
        server.stop()


def test_an_unreachable_server_is_one_line_within_the_retry_deadline(tmp_path):
    start = time.monotonic()
    done = catallax("run", "wordmath", *TOY_RUN, "--set", "wordmath.llm.base_url=http://127.0.0.1:9/v1",
                    "--set", "wordmath.llm.retry_for=2", "--out", str(tmp_path), timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "llm.base_url = http://127.0.0.1:9/v1: no OpenAI-compatible server answers" in done.stderr
    assert time.monotonic() - start < 30


def test_sigterm_is_not_held_off_while_a_server_is_waited_for(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as silent:  # takes the connection, never answers
        silent.settimeout(60)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        proc = subprocess.Popen([sys.executable, "-m", "scenarios.cli.main", "run", "wordmath", *TOY_RUN,
                                 "--set", f"wordmath.llm.base_url={url}", "--out", str(tmp_path)],
                                stderr=subprocess.PIPE, text=True)
        try:
            connection, _ = silent.accept()  # the command is in its first request (600 s of llm.timeout ahead)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=10) == 128 + signal.SIGTERM
            assert "SIGTERM before the run started; nothing was written" in proc.stderr.read()
            connection.close()
        finally:
            proc.kill()
            proc.wait()
