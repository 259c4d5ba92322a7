"""The LM learner's privileged passes: the round's completions rescored under prompts holding what the agent did not see.

Batch C's objectives (agents/objectives/privileged.py) read the same sampled tokens teacher-forced by the
current policy under a second prompt (the backend's ``forced``, agents/backends/base.py): the step's own prompt
with one more paragraph at the end of what the agent reads. Three contexts, one signal each:

* ``teacher_logp``: a reference reply for the step, the correct output at its state (the world's ``correct``);
* ``sibling_logp``: the same paragraph holding a failed sibling's reply instead (another rollout of the same
  problem that failed; its last reply of the same role), so the two differ in the answer alone; a step whose
  group has no failed sibling gets the teacher's (no contrast);
* ``hindsight_logp``: the episode's outcome, the feedback that came after the step.

Only what the objective reads is scored. The pass is the learner's cost: the engine counts it in
``Stats.privileged_tokens`` (not the agents' tokens, not the round's usage) and the learner in its own
``lm_privileged_tokens``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from agents.backends.base import Prompt

REFERENCE = "\n\n(A reference reply for this step: {answer})"
HINDSIGHT = "\n\n(Feedback after the episode: it {verdict}.)"


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


def contexts(needs, prompts, worlds, roles, solved: np.ndarray, group: int, lessons=None, failed=None) -> dict:
    """signal -> the privileged prompt of each completion (``worlds[i]``, ``roles[i]``: where and as whom it acted;
    ``lessons[i]``: the correct output at its state; ``failed``: :func:`failed_replies`)."""
    out = {}
    if "hindsight_logp" in needs:
        out["hindsight_logp"] = [told(p, HINDSIGHT.format(verdict="succeeded" if solved[b] else "failed"))
                                 for p, b in zip(prompts, worlds)]
    if "teacher_logp" in needs or "sibling_logp" in needs:
        out["teacher_logp"] = [told(p, REFERENCE.format(answer=c)) for p, c in zip(prompts, lessons)]
    if "sibling_logp" in needs:
        G = max(group, 1)
        siblings = []
        for p, b, role, teacher in zip(prompts, worlds, roles, out["teacher_logp"]):
            wrong = next((failed[(s, role)] for s in range(b // G * G, b // G * G + G) if s != b and (s, role) in failed), None)
            siblings.append(teacher if wrong is None else told(p, REFERENCE.format(answer=wrong)))
        out["sibling_logp"] = siblings
    return {k: v for k, v in out.items() if k in needs}


def score(backend, wanted: dict, texts: list[str]) -> tuple[dict, int]:
    """(signal -> [n] per-token log-probability arrays of ``texts`` under its prompts, privileged tokens spent):
    one batched ``forced`` call for all signals, identical prompts scored once."""
    before = backend.stats.privileged_tokens
    names = list(wanted)
    flat = [(p, t) for name in names for p, t in zip(wanted[name], texts)]
    unique = list(dict.fromkeys(flat))
    scored = dict(zip(unique, backend.forced([p for p, _ in unique], [t for _, t in unique]))) if unique else {}
    out = {name: [scored[(p, t)] for p, t in zip(wanted[name], texts)] for name in names}
    return out, backend.stats.privileged_tokens - before
