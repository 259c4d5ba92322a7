"""The LM learner's privileged passes: the round's completions rescored under prompts holding what the agent did not see.

Batch C's objectives (agents/objectives/privileged.py) read the same sampled tokens teacher-forced by the
current policy under a second prompt (the backend's ``forced``, agents/backends/base.py): the step's own prompt
with one more paragraph at the end of what the agent reads. Three contexts, one signal each:

* ``teacher_logp``: a reference reply for the step, the correct output at its state (the world's ``correct``);
* ``sibling_logp``: the same paragraph holding a failed sibling's reply instead (another rollout of the same
  problem that failed; its last reply of the same role), so the two differ in the answer alone; a step whose
  group has no failed sibling gets the teacher's (no contrast);
* ``hindsight_logp``: the episode's outcome, the feedback that came after the step;
* ``belief_before``, ``belief_after``: not the reply but the gold final answer (the world's ``question``) is
  scored, after the step's prompt and after the prompt with the step's reply in it: the policy's belief in the
  answer where the step began and once it committed to its reply (the mean per-token log-probability);
* ``hint_logp``: the teacher's context, scored by an exponential moving average of the policy's weights (the
  learner swaps them in for the pass, agents/learners/ema_weights.py);
* teacher samples (:func:`teacher_samples`): not a score but a reply, the policy *sampling* under the teacher's
  context, which the learner then scores under the step's own prompt (distil);
* rubric samples (:func:`teacher_samples` with :data:`RUBRIC`): the same, with the world's rubric for the step (what
  a good reply does, not the reply) as the paragraph (evidence_diagnosis's rewrites);
* ``grounding`` (:func:`grounding`): no pass at all, the text itself: how much of a reply its agent read;
* ``located``, ``teacher_verified`` (:func:`located`, :func:`verified`): the world's verifier (the text task's ``verify``) on what
  was written: the agent's reply at a failed episode's step (the fault locator), the teacher's sample.

Only what the objective reads is scored. The pass is the learner's cost: the engine counts it in
``Stats.privileged_tokens`` (not the agents' tokens, not the round's usage) and the learner in its own
``lm_privileged_tokens``.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from agents.backends.base import Prompt

REFERENCE = "\n\n(A reference reply for this step: {answer})"
HINDSIGHT = "\n\n(Feedback after the episode: it {verdict}.)"
REPLIED = "\n\n(Reply so far: {reply})"
RUBRIC = "\n\n(What a good reply for this step does: {answer})"
FUNCTION_WORDS = frozenset("a an the of to in on at by for with and or not is are was be it its this that as from".split())
"""Words that claim nothing about the input: never counted for or against a reply's grounding."""


def told(prompt: Prompt, paragraph: str) -> Prompt:
    """``prompt`` with ``paragraph`` appended to what its agent reads (the frozen part and skills unchanged)."""
    return dataclasses.replace(prompt, user=prompt.user + paragraph)


def failed_replies(steps, role_of, solved: np.ndarray) -> dict[tuple[int, str], str]:
    """(world, role) -> the last reply of that role in each failed world (``steps``: the round's generations;
    ``role_of(row)``: the acting row's role name)."""
    out = {}
    for generations in steps:
        for b, row, _, done, _ in generations:
            if not solved[b]:
                out[(b, role_of(row))] = done.text
    return out


def contexts(needs, prompts, texts, worlds, roles, solved: np.ndarray, group: int, lessons=None, failed=None,
             gold=None) -> dict:
    """signal -> the (privileged prompt, completion to score) of each step (``texts[i]``: its reply; ``worlds[i]``,
    ``roles[i]``: where and as whom it acted; ``lessons[i]``: the correct output at its state; ``failed``:
    :func:`failed_replies`; ``gold[i]``: the problem's correct final answer; ``group``: G, the rollouts of a
    problem, a size: agents.AgentsConfig.group_size)."""
    out = {}
    if "hindsight_logp" in needs:
        out["hindsight_logp"] = [told(p, HINDSIGHT.format(verdict="succeeded" if solved[b] else "failed"))
                                 for p, b in zip(prompts, worlds)]
    if {"teacher_logp", "sibling_logp", "hint_logp"} & set(needs):
        out["teacher_logp"] = [told(p, REFERENCE.format(answer=c)) for p, c in zip(prompts, lessons)]
    if "hint_logp" in needs:  # the teacher's context, for the EMA teacher: the caller scores it apart, under its weights
        out["hint_logp"] = out["teacher_logp"]
    if "sibling_logp" in needs:
        siblings = []
        for p, b, role, teacher in zip(prompts, worlds, roles, out["teacher_logp"]):
            wrong = next((failed[(s, role)] for s in range(b // group * group, b // group * group + group) if s != b and (s, role) in failed), None)
            siblings.append(teacher if wrong is None else told(p, REFERENCE.format(answer=wrong)))
        out["sibling_logp"] = siblings
    out = {k: list(zip(v, texts)) for k, v in out.items() if k in needs}
    if "belief_before" in needs or "belief_after" in needs:
        out["belief_before"] = list(zip(prompts, gold))
        out["belief_after"] = [(told(p, REPLIED.format(reply=t)), g) for p, t, g in zip(prompts, texts, gold)]
    return {k: v for k, v in out.items() if k in needs}


def teacher_samples(backend, prompts, lessons, rows, paragraph: str = REFERENCE) -> tuple[list[str | None], int]:
    """(each step's teacher sample, None outside ``rows`` and where it wrote nothing whole: empty, or cut at its
    token cap or timeout; privileged tokens spent): the policy's reply under the step's prompt (its temperature and
    seed) with the correct output ``lessons[i]`` as the reference paragraph (``paragraph``: :data:`RUBRIC` and the
    world's rubrics, evidence_diagnosis's rewrites), one batched ``generate`` counted as a privileged pass
    (``Stats.privileged``), never as the agents' usage."""
    rows = list(rows)
    before = backend.stats.privileged_tokens
    with backend.stats.privileged():
        done = backend.generate([told(prompts[i], paragraph.format(answer=lessons[i])) for i in rows]) if rows else []
    out: list[str | None] = [None] * len(prompts)
    for i, completion in zip(rows, done):
        out[i] = completion.text if completion.finish == "stop" and completion.text.strip() else None
    return out, backend.stats.privileged_tokens - before


def words(text: str) -> set[str]:
    """The lower-cased words and numbers of ``text`` (``price=35`` is ``price`` and ``35``)."""
    return set(re.findall(r"[a-z]+|\d+(?:\.\d+)?", text.lower()))


def grounding(text: str, read: str, frozen: str) -> float:
    """The share of ``text``'s content words and numbers that occur in ``read`` (what its agent read): content is what
    is neither in ``frozen`` (its role's frozen prompt: the format and range it was told to write) nor a function
    word; 1.0 where none is left (the reply claims nothing about its input). Why this measure:
    scenarios/text/world.py ``rubric``."""
    content = words(text) - words(frozen) - FUNCTION_WORDS
    return len(content & words(read)) / len(content) if content else 1.0


def located(verify, texts, roles, seen, failed) -> np.ndarray:
    """[n] bool, the world's fault locator: a step of a failed episode (``failed[i]``) whose reply ``texts[i]`` the
    world's verifier ``verify(role, text, obs_row)`` (the text task's) rejects at its state ``seen[i]``."""
    return np.array([bool(f) and not verify(role, text, obs) for text, role, obs, f in zip(texts, roles, seen, failed)],
                    dtype=bool)


def verified(verify, samples, roles, seen) -> np.ndarray:
    """[n] bool: the world's verifier accepts each step's teacher sample (a step without one: False)."""
    return np.array([text is not None and verify(role, text, obs) for text, role, obs in zip(samples, roles, seen)],
                    dtype=bool)


def score(backend, wanted: dict) -> tuple[dict, int]:
    """(signal -> [n] per-token log-probability arrays of its completions under its prompts, for a belief the
    [n] means; privileged tokens spent): one batched ``forced`` call for all signals, identical pairs scored once."""
    before = backend.stats.privileged_tokens
    unique = list(dict.fromkeys(pair for pairs in wanted.values() for pair in pairs))
    scored = dict(zip(unique, backend.forced([p for p, _ in unique], [c for _, c in unique]))) if unique else {}
    out = {}
    for name, pairs in wanted.items():
        rows = [scored[pair] for pair in pairs]
        out[name] = np.array([float(r.mean()) if len(r) else 0.0 for r in rows]) if name.startswith("belief") else rows
    return out, backend.stats.privileged_tokens - before
