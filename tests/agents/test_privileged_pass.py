"""The privileged pass (agents/backends/base.py ``forced``): teacher-forced log-probabilities of given completions under
another prompt, batched, on the real embedded SmolLM2; and who pays for it (the learner, never the agents)."""

import numpy as np
import pytest
import torch

from agents.backends import BackendConfig, Prompt
from agents.backends.base import NoPrivilegedPass
from agents.backends.factory import make_backend, shared_backend

PROMPTS = [Prompt("You are a terse assistant.", "", "What is 2 + 3?"),
           Prompt("You are a terse assistant.", "", "What is 2 + 3? (The correct reply here is: 5)"),
           Prompt("You answer in one word.", "example: Rhyme with sun. => fun", "Rhyme with cat.")]
COMPLETIONS = ["5", "The answer is 5.", "hat"]


def plain(backend, prompt: Prompt, completion: str) -> np.ndarray:
    """One row, no padding, no batching: transformers' own forward pass over prompt + completion."""
    tok = backend.tokenizer
    head = tok(tok.apply_chat_template(prompt.messages(), tokenize=False, add_generation_prompt=True),
               add_special_tokens=False)["input_ids"]
    tail = tok(completion, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = backend.model(input_ids=torch.tensor([head + tail])).logits[0].float()
    every = torch.log_softmax(logits, -1)
    return np.array([float(every[len(head) + k - 1, t]) for k, t in enumerate(tail)])


def test_hf_privileged_pass_equals_a_plain_forward_pass_and_is_the_learners_cost():
    hf = shared_backend(BackendConfig(backend="hf", dtype="float32", max_batch=2))  # 3 rows: two batches, padded
    before = (hf.stats.prompt_tokens, hf.stats.completion_tokens, hf.stats.seconds, hf.stats.privileged_tokens)
    got = hf.forced(PROMPTS, COMPLETIONS)
    for row, p, c in zip(got, PROMPTS, COMPLETIONS):
        want = plain(hf, p, c)
        assert row.shape == want.shape and np.allclose(row, want, atol=1e-4)
    # the agents' counters (charged to them, stored as the round's usage) did not move; the learner's did
    assert (hf.stats.prompt_tokens, hf.stats.completion_tokens, hf.stats.seconds) == before[:3]
    assert hf.stats.privileged_tokens - before[3] > sum(len(c) for c in COMPLETIONS)
    # the hint moves the answer's likelihood: the pass reads the prompt it is given
    assert not np.allclose(hf.forced(PROMPTS[:1], ["5"])[0], hf.forced(PROMPTS[1:2], ["5"])[0])


def test_a_chat_server_refuses_the_privileged_pass_in_one_line():
    client = make_backend(BackendConfig(backend="openai", model="any"))  # a named model: no request is made
    with pytest.raises(NoPrivilegedPass, match="openai.*privileged pass") as err:
        client.forced(PROMPTS[:1], ["5"])
    assert "\n" not in str(err.value)


def test_a_teachers_samples_are_written_with_the_reference_in_context_and_charged_to_the_learner():
    from agents.llm.privileged_pass import teacher_samples

    hf = shared_backend(BackendConfig(backend="hf", dtype="float32", max_batch=2))
    asked = [Prompt("You are a terse assistant.", "", "What is 2 + 3?", max_tokens=8, temperature=0.7, seed=s)
             for s in (1, 2, 3)]
    before = (hf.stats.prompt_tokens, hf.stats.completion_tokens, hf.stats.seconds, hf.stats.calls, hf.stats.privileged_tokens)
    samples, spent = teacher_samples(hf, asked, ["5", "5", "5"], [0, 2])
    assert samples[1] is None and all(isinstance(samples[i], str) or samples[i] is None for i in (0, 2))
    # the agents' counters did not move; the learner's moved by the two prompts and what was written
    assert (hf.stats.prompt_tokens, hf.stats.completion_tokens, hf.stats.seconds, hf.stats.calls) == before[:4]
    assert spent == hf.stats.privileged_tokens - before[4] > 2 * 20
    # the samples are the policy's under the reference paragraph: the same seed and prompt give the same reply
    from agents.llm.privileged_pass import REFERENCE, told

    again = hf.generate([told(asked[0], REFERENCE.format(answer="5"))])[0]
    assert samples[0] in (again.text, None) and (samples[0] is None) == (again.finish != "stop" or not again.text.strip())


def test_grounding_is_the_share_of_a_replys_content_its_agent_read():
    from agents.llm.privileged_pass import grounding

    read = "Record: price=35, rating=4, stock=3, warranty=1, weight=9. Policy: price below 50; stock above 10."
    reader = "Quote the record's values. Reply only: evidence: <attribute>=<value>, ..."
    assert grounding("evidence: price=35, stock=3", read, reader) == 1.0  # every word and number was read
    assert grounding("evidence: price=53, stock=3", read, reader) == 0.75  # {price, 53, stock, 3}: 53 never read
    assert grounding("evidence: colour=red", read, reader) == 0.0
    assert grounding("the price is fine", read, reader) == 0.5  # function words claim nothing: {price, fine}
    scorer = "Count the rules passed. Reply only: score: <0, 1, 2 or 3>"
    assert grounding("score: 2", "Policy: price below 50. Evidence: price=35", scorer) == 1.0  # its range, not a claim
    assert grounding("", read, reader) == 1.0
