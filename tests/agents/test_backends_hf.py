"""The ``hf`` backend on the real embedded SmolLM2 (converted once, cached; shared by the session).

float32 here: the checks compare batched against one-by-one results, which must agree exactly
in what they decide (greedy tokens) and closely in what they measure (log-probabilities).
"""

import math

import numpy as np
import pytest
import torch

from agents.backends import BackendConfig, Prompt
from agents.backends import smollm2
from agents.backends.base import NO, YES
from agents.backends.factory import shared_backend

CFG = BackendConfig(backend="hf", dtype="float32", max_batch=8)


@pytest.fixture(scope="module")
def hf():
    return shared_backend(CFG)


def ask(user, **kw):
    return Prompt("You are a terse assistant.", "", user, **kw)


def test_embedded_model_is_converted_once_into_the_cache():
    folder = smollm2.model_folder()
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    assert folder.is_relative_to(smollm2.cache_root())
    assert smollm2.resolve("smollm2") == str(folder) and smollm2.resolve("/some/local/model") == "/some/local/model"


def test_generate_keeps_order_caps_stops_and_reports_logprobs(hf):
    prompts = [ask("Count from 1 to 20.", max_tokens=24, stop=("\n",)),
               ask("Write a long story about a dragon.", max_tokens=3),
               ask("Say hello.", max_tokens=12, stop=("\n", "llo")),
               ask("What is 2 + 2?", max_tokens=16)]
    out = hf.generate(prompts)
    assert len(out) == 4
    for p, c in zip(prompts, out):
        assert c.tokens <= p.max_tokens and not any(s in c.text for s in p.stop)
        assert c.logprob is not None and c.logprob <= 0 and math.isfinite(c.logprob)
    assert out[1].finish == "length" and out[1].tokens == 3  # the cap ends it: an over-long action
    assert out[0].finish == "stop" and out[0].tokens < 24  # the first newline ends the count
    assert hf.stats.completion_tokens >= sum(c.tokens for c in out) and hf.stats.seconds > 0


def test_batched_greedy_equals_one_by_one(hf):
    prompts = [ask(f"Give one word that rhymes with {w}.", max_tokens=8) for w in ("cat", "tree", "moon", "house", "blue")]
    batched = hf.generate(prompts)
    single = [hf.generate([p])[0] for p in prompts]
    assert [c.text for c in batched] == [c.text for c in single]
    assert np.allclose([c.logprob for c in batched], [c.logprob for c in single], atol=1e-2)


LONG = Prompt("You are a careful assistant for a market of agents. Keep every answer short and plain; never explain.",
              "Answer in one word.\nexample: Give one word that rhymes with dog. => log", "")


def test_one_agents_prompts_share_a_prefix_and_get_the_same_results(hf):
    prompts = [Prompt(LONG.system, LONG.skills, f"Give one word that rhymes with {w}.", max_tokens=6)
               for w in ("cat", "tree", "moon", "house")]
    assert min(hf._encode(prompts)[1]) >= 32  # the prefix path runs
    batched, single = hf.generate(prompts), [hf.generate([p])[0] for p in prompts]
    assert [c.text for c in batched] == [c.text for c in single]
    assert np.allclose([c.logprob for c in batched], [c.logprob for c in single], atol=1e-2)
    questions = [Prompt(LONG.system, LONG.skills, f"Is {w} a colour? Answer yes or no.", max_tokens=1)
                 for w in ("red", "dog", "blue")]
    assert np.allclose(hf.score(questions), np.concatenate([hf.score([q]) for q in questions]), atol=1e-3)


def test_score_is_the_yes_no_log_odds_of_the_first_token(hf):
    prompts = [ask("Is the sky blue? Answer yes or no.", max_tokens=1), ask("Is fire cold? Answer yes or no.", max_tokens=1),
               ask("Are cats animals? Reply with yes or no only, nothing else at all.", max_tokens=1)]
    batched = hf.score(prompts)
    one_by_one = np.concatenate([hf.score([p]) for p in prompts])
    assert np.allclose(batched, one_by_one, atol=1e-3)  # left padding does not change the score
    # the same quantity by hand: a plain forward pass over the templated prompt, no padding
    text = hf.tokenizer.apply_chat_template(prompts[2].messages(), tokenize=False, add_generation_prompt=True)
    ids = hf.tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids
    with torch.inference_mode():
        logp = torch.log_softmax(hf.model(input_ids=ids).logits[0, -1].float(), -1)
    first = lambda spellings: sorted({hf.tokenizer.encode(s, add_special_tokens=False)[0] for s in spellings})
    expected = torch.logsumexp(logp[first(YES)], 0) - torch.logsumexp(logp[first(NO)], 0)
    assert batched[2] == pytest.approx(float(expected), abs=1e-3)


def test_sampling_is_reproducible_per_seed(hf):
    p = lambda seed: ask("Invent a name for a cat.", max_tokens=10, temperature=1.0, seed=seed)
    a, b, c = hf.generate([p(1), p(1), p(2)])
    assert a.text == b.text and hf.generate([p(1)])[0].text == a.text
    others = {hf.generate([p(s)])[0].text for s in range(3, 8)}
    assert len(others | {a.text, c.text}) > 1


def test_a_call_past_its_timeout_ends_as_timeout_not_an_exception():
    slow = shared_backend(BackendConfig(backend="hf", dtype="float32", max_batch=1, timeout=0.05))
    out = slow.generate([ask("Write a long story about a dragon.", max_tokens=200) for _ in range(3)])
    assert all(c.finish == "timeout" for c in out) and all(c.tokens < 200 for c in out)


def test_agents_with_different_prefixes_decode_in_one_batch_as_they_would_alone(hf):
    other = Prompt("You are a poet who answers in a single word, lower case, with no punctuation at all, and never "
                   "explains the word you chose.", "", "")
    prompts = [Prompt(a.system, a.skills, f"Give one word that rhymes with {w}.", max_tokens=6)
               for a in (LONG, other) for w in ("cat", "tree", "moon")] + [ask("Say hi.", max_tokens=4)]
    shared = hf._encode(prompts)[1]
    assert len(set(shared[:6])) == 2 and min(shared[:6]) >= 32 and shared[6] == 0  # two shared prefixes, one plain row
    batched, single = hf.generate(prompts), [hf.generate([p])[0] for p in prompts]
    assert [c.text for c in batched] == [c.text for c in single]
    assert np.allclose([c.logprob for c in batched], [c.logprob for c in single], atol=1e-2)


def plain(hf, prompt):
    """The reference: the templated prompt alone through transformers' own greedy ``generate`` and
    a plain forward, no padding, no prefix cache."""
    text = hf.tokenizer.apply_chat_template(prompt.messages(), tokenize=False, add_generation_prompt=True)
    ids = hf.tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids
    with torch.inference_mode():
        new = hf.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=prompt.max_tokens,
                                do_sample=False, pad_token_id=hf.tokenizer.pad_token_id)[0, ids.shape[1]:]
        logp = torch.log_softmax(hf.model(input_ids=ids).logits[0, -1].float(), -1)
    out = hf.tokenizer.decode(new, skip_special_tokens=True)
    for s in prompt.stop:
        out = out.split(s, 1)[0]
    return out, float(torch.logsumexp(logp[hf.yes_ids], 0) - torch.logsumexp(logp[hf.no_ids], 0))


def test_cached_prefixes_give_what_plain_transformers_gives(hf):
    """Two agents, their prompts in one call and again in a second call (prefixes then come from the
    prefix cache): greedy texts and wake-up scores equal transformers' on each prompt alone."""
    agents = [LONG, Prompt("You are a poet who answers in a single word, lower case, with no punctuation at all, "
                           "and never explains the word you chose.", "example: Rhyme with sun. => fun", "")]
    prompts = [Prompt(a.system, a.skills, f"Give one word that rhymes with {w}.", max_tokens=6)
               for a in agents for w in ("cat", "tree", "moon")]
    expected = [plain(hf, p) for p in prompts]
    saved = hf.stats.prefix_tokens_saved
    first = hf.generate(prompts)
    again = hf.generate(prompts[::-1])[::-1] + hf.generate(prompts[1:2])  # all prefixes from the cache now
    assert hf.stats.prefix_tokens_saved - saved >= 7 * 32  # each prompt but one agent's first, per call
    assert [c.text for c in first] == [c.text for c in again[:6]] == [t for t, _ in expected]
    assert again[6].text == expected[1][0]
    assert np.allclose(hf.score(prompts), [s for _, s in expected], atol=1e-3)


def test_prefix_cache_is_bounded_least_recently_used_out():
    from agents.backends.hf import PrefixCache

    entry = lambda: [(torch.zeros(1, 1, 4, 2), torch.zeros(1, 1, 4, 2))]  # 64 bytes
    cache = PrefixCache(budget=150)
    cache.put((1,), entry()), cache.put((2,), entry())
    assert cache.get((1,)) is not None  # (1,) is now the most recently used
    cache.put((3,), entry())
    assert cache.get((2,)) is None and cache.get((1,)) is not None and cache.get((3,)) is not None
    assert cache.used <= cache.budget


def test_choose_decodes_greedily_within_the_options_token_trie(hf):
    """Constrained decoding (skills' verdicts): at each point where the options part, the allowed token the model
    rates highest; brute force over the full forward pass agrees, and a single option is taken as it is."""
    prompt = ask("What is 2 + 3? Answer with a number.")
    options = ["The answer is 5", "The answer is 7", "5", "12"]
    head = hf.tokenizer(hf._template(prompt.messages(), generation=True), add_special_tokens=False)["input_ids"]
    tails = [hf.tokenizer(o, add_special_tokens=False)["input_ids"] for o in options]

    def next_logits(prefix):
        with torch.no_grad():
            return hf.model(input_ids=torch.tensor([head + prefix])).logits[0, -1].float()

    alive, prefix = list(range(len(options))), []
    while len(alive) > 1:  # the same walk, each step from a fresh full forward pass
        allowed = sorted({tails[i][len(prefix)] for i in alive})
        logits = next_logits(prefix)
        token = max(allowed, key=lambda t: float(logits[t]))
        alive = [i for i in alive if tails[i][len(prefix)] == token]
        prefix.append(token)
    assert hf.choose([prompt, prompt], [options, ["only"]]) == [alive[0], 0]
