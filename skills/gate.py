"""The validation gate: a candidate library replaces the current one only if it does not regress.

Both libraries are scored by the same ``evaluate(skills, questions, seeds) ->
scores`` on the same fixed validation questions with the same seeds (paired
evaluation: common random numbers, so the per-question differences carry the
edit's effect and little noise). With d_i = candidate_i - current_i::

    accept  <=>  mean_i d_i >= -delta          (gate.delta, default 0)

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
            seeds: np.ndarray, cfg: GateConfig) -> GateResult:
    """Score both libraries on the same questions and seeds; accept if the mean drops by at most delta."""
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
    return GateResult(bool(diffs.mean() >= -cfg.delta), float(before.mean()), float(after.mean()), diffs)


def validate(library: SkillLibrary, edits: list[Edit], evaluate: Evaluate, questions: np.ndarray,
             seeds: np.ndarray, cfg: GateConfig | None = None) -> tuple[GateResult, list[Skill]]:
    """Gate ``edits`` as one candidate library and write them with the verdict; return it and the new versions."""
    _, candidate = library.plan(edits)
    result = compare(evaluate, library.current(), candidate, questions, seeds, cfg or GateConfig())
    return result, library.apply(edits, gate=result)
