"""The ``openai`` backend when the server fails: a real HTTP server on 127.0.0.1 (standard library,
tests/processes.py) that answers like an OpenAI-compatible one, fails on request (503, 429) and is
stopped mid-run. No mock object: every failure is a real response or a real refused connection."""

import math

import numpy as np
import pytest

from agents.backends import BackendConfig, Prompt
from agents.backends.factory import make_backend
from agents.llm.policy import LLMPolicy
from scenarios.text import Role
from tests.processes import ToyOpenAIServer


@pytest.fixture
def server():
    s = ToyOpenAIServer()
    yield s
    s.stop()


def ask(user):
    return Prompt("You are a terse assistant.", "", user, max_tokens=4)


def test_503_and_429_are_retried_with_backoff_and_recorded(server):
    client = make_backend(BackendConfig(backend="openai", base_url=server.url, timeout=5.0))
    assert client.model == "toy"
    server.fail = 2
    out = client.generate([ask("What is 2 + 2?")])
    assert out[0].finish == "stop" and out[0].text == "4" and server.seen == 3
    assert client.stats.failures == 2 and [f["retried"] for f in client.failures] == [True, True]
    assert "503" in client.failures[0]["error"]
    server.status, server.fail = 429, 1
    assert math.isfinite(client.score([ask("Is this good?")])[0]) and client.stats.failures == 3


def test_a_server_stopped_mid_run_gives_errors_and_no_opinion_within_the_deadline(server):
    client = make_backend(BackendConfig(backend="openai", base_url=server.url, model="toy", timeout=0.6))
    assert client.generate([ask("What is 2 + 2?")])[0].text == "4"
    server.stop()
    out = client.generate([ask("What is 2 + 2?")])
    assert out[0].finish == "error" and out[0].error
    assert np.isnan(client.score([ask("Is this good?")])[0])  # no opinion, not -inf
    assert client.stats.failures >= 4 and client.failures[-1]["retried"] is False  # retried, then given up


class Task:
    """Just what wake-up reads: two state summaries, one per world."""

    all_summaries = ("a good state", "a bad state")

    def summaries(self, obs):
        return [self.all_summaries[int(o[0])] for o in obs]

    def illegal(self, role, obs_row):
        return ""  # a judge may act anywhere


def test_a_failed_score_wakes_nobody_and_is_not_cached(server):
    client = make_backend(BackendConfig(backend="openai", base_url=server.url, model="toy", timeout=0.3))
    policy = LLMPolicy(client, Task(), [Role("judge", "You judge states.")], {})
    policy.resize(1)
    policy.spawn(np.array([0]), np.random.default_rng(0))
    policy.theta[:] = -10.0  # with any opinion at all it would wake everywhere
    obs = np.array([[0], [1]])
    server.fail = 10**6  # the server is overloaded for the whole first step
    assert not policy.eligible(obs).any() and policy.scores == {}
    server.fail = 0  # it recovers: the scores are asked again, cached, and the agent wakes
    assert policy.eligible(obs).all() and len(policy.scores) == 2
