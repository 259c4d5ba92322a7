"""The validation gate: a candidate library replaces the current one only if it does not regress.

Both libraries are scored by the same ``evaluate(skills, questions, seeds) ->
scores`` on the same fixed validation questions with the same seeds (paired
evaluation: common random numbers, so the per-question differences carry the
edit's effect and little noise). With d_i = candidate_i - current_i::

    accept  <=>  mean_i d_i >= -delta          (gate.delta, default 0)

A prune (every edit of the candidate removes a skill) may also pass on the one-standard-error rule
(Breiman et al. 1984; Hastie et al., ESL 7.10): between two libraries the validation questions cannot
tell apart, keep the smaller one::

    accept a prune  <=>  mean_i d_i >= -delta - prune_se x sd(d) / sqrt(n)      (gate.prune_se, default 0)

so a skill that does nothing measurable (a rule that fires on users the library ranks no better than
chance, say) can go, while a prune that costs more than the paired differences' noise is still refused.

Either way the edits are written (skills/library.py): accepted versions join
the library, rejected ones are kept with status ``rejected``, and each edit
records the verdict and both mean scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass as config_dataclass

from market.config import STRICT
from skills.library import Edit, Skill, SkillLibrary

Evaluate = Callable[[list[Skill], np.ndarray, np.ndarray], np.ndarray]


@config_dataclass(config=STRICT)
class GateConfig:
    delta: float = Field(0.0, ge=0)
    """Largest drop of the mean validation score a candidate may show and still be accepted."""
    prune_se: float = Field(0.0, ge=0)
    """A prune may also drop the mean by up to this many standard errors of the paired differences (the
    one-standard-error rule at 1); 0: a prune faces the same test as any edit."""


@dataclass
class GateResult:
    accepted: bool
    before: float  # mean score of the current library
    after: float  # mean score of the candidate
    diffs: np.ndarray  # [n] paired differences, candidate - current

    @property
    def delta(self) -> float:
        return self.after - self.before


def compare(evaluate: Evaluate, current: list[Skill], candidate: list[Skill], questions: np.ndarray,
            seeds: np.ndarray, cfg: GateConfig, smaller: bool = False) -> GateResult:
    """Score both libraries on the same questions and seeds; accept if the mean drops by at most delta (a
    ``smaller`` candidate, one that only prunes: by at most delta plus prune_se standard errors)."""
    questions, seeds = np.asarray(questions), np.asarray(seeds)
    if questions.shape != seeds.shape or questions.ndim != 1:
        raise ValueError(f"questions {questions.shape} and seeds {seeds.shape} must be two [n] arrays")
    scores = []
    for skills in (current, candidate):
        s = np.asarray(evaluate(list(skills), questions.copy(), seeds.copy()), dtype=np.float64)
        if s.shape != questions.shape:
            raise ValueError(f"evaluate returned scores of shape {s.shape} for {questions.size} questions")
        scores.append(s)
    before, after = scores
    diffs = after - before
    tolerance = cfg.delta
    if smaller and cfg.prune_se and diffs.size > 1:
        tolerance += cfg.prune_se * diffs.std(ddof=1) / np.sqrt(diffs.size)
    return GateResult(bool(diffs.mean() >= -tolerance), float(before.mean()), float(after.mean()), diffs)


def validate(library: SkillLibrary, edits: list[Edit], evaluate: Evaluate, questions: np.ndarray,
             seeds: np.ndarray, cfg: GateConfig | None = None) -> tuple[GateResult, list[Skill]]:
    """Gate ``edits`` as one candidate library and write them with the verdict; return it and the new versions."""
    _, candidate = library.plan(edits)
    smaller = all(e.operator == "prune" for e in edits)
    result = compare(evaluate, library.current(), candidate, questions, seeds, cfg or GateConfig(), smaller)
    return result, library.apply(edits, gate=result)
