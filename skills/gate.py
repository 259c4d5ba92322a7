"""The validation gate: a candidate library replaces the current one only on evidence that it is no worse.

Both libraries are scored by the same ``evaluate(skills, questions, seeds) -> scores`` on the same fixed
validation questions with the same seeds (paired evaluation: common random numbers, so the per-question
differences d_i = candidate_i - current_i carry the edit's effect and little noise).

**An edit that adds or changes text must show an improvement** at the stated confidence c
(``skills.confidence``): a one-sided paired sign-flip test of "mean d > -delta" (under no effect each
d_i is as likely +|d_i| as -|d_i|; p = the share of the 2^n sign patterns whose sum reaches the observed
one)::

    accept  <=>  mean_i d_i > -delta  and  p <= 1 - c

The test is exact (every pattern of the non-zero differences) up to ``EXACT`` of them, and above that its
large-sample form, Student's t with n - 1 degrees of freedom. A tie (every d_i = 0) never passes: p = 1.
On 0/1 scores at c = 0.9 that is at least four more problems solved than lost, with none lost.

**A prune** passes that test too, or the one-standard-error rule (Breiman et al. 1984; Hastie et al., ESL
7.10): between two libraries the validation questions cannot tell apart, keep the smaller one::

    accept a prune  <=>  mean_i d_i >= -delta - prune_se x se,    se = sd(d) / sqrt(n)

but only where the validation set is large enough to see the harm a prune could do: a prune that costs
``min_harm`` (the planted harmful skills' effect, by the scenario) is refused by that rule with
probability Phi(min_harm / se - prune_se) (normal approximation), and the rule applies only while that is
at least ``POWER`` = 0.9. :func:`required_size` is the same calculation before the run: the validation
size at which it holds for a given per-question spread.

Either way the edits are written (skills/library.py): accepted versions join the library, rejected ones
are kept with status ``rejected``, and each edit records the verdict and both mean scores.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass as config_dataclass
from scipy import stats

from skills.library import Edit, Skill, SkillLibrary
from market.strict import STRICT

Evaluate = Callable[[list[Skill], np.ndarray, np.ndarray], np.ndarray]
EXACT = 16
"""Non-zero differences up to which the sign-flip test enumerates every pattern (2^16 sums)."""
POWER = 0.9
"""The probability with which a prune as harmful as ``min_harm`` must be refused for the one-standard-error rule to apply."""


@config_dataclass(config=STRICT)
class GateConfig:
    confidence: float = Field(0.9, ge=0.5, lt=1)
    """Confidence an edit that is not a prune must show that it improves the mean validation score (one-sided
    paired test: p <= 1 - confidence)."""
    delta: float = Field(0.0, ge=0)
    """Margin: the test is of mean d > -delta (0: a real improvement)."""
    prune_se: float = Field(0.0, ge=0)
    """A prune may also drop the mean by up to this many standard errors of the paired differences (the
    one-standard-error rule at 1), where the validation set has the power to see ``min_harm``; 0: a prune
    faces the same test as any edit."""
    min_harm: float = Field(0.0, ge=0)
    """The drop of the mean validation score a prune must not hide (the scenario's planted harm); the
    one-standard-error rule applies only where such a prune is refused with probability POWER. 0: the rule
    never applies."""


@dataclass
class GateResult:
    accepted: bool
    before: float  # mean score of the current library
    after: float  # mean score of the candidate
    diffs: np.ndarray  # [n] paired differences, candidate - current
    p: float = 1.0  # one-sided p-value of "the candidate is better" (sign-flip test)
    rule: str = "test"  # what decided: test (the confidence test), one_se (a prune within the rule)

    @property
    def delta(self) -> float:
        return self.after - self.before


def p_improves(d: np.ndarray) -> float:
    """One-sided p-value of mean d > 0 by the paired sign-flip test (exact up to EXACT non-zero differences)."""
    d = np.asarray(d, dtype=np.float64)
    nz = d[d != 0]
    if nz.size == 0:
        return 1.0
    if nz.size <= EXACT:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=nz.size)))
        sums = signs @ np.abs(nz)
        return float(np.mean(sums >= nz.sum() - 1e-12))
    sd = d.std(ddof=1)
    if sd == 0:
        return 0.0 if d.mean() > 0 else 1.0
    return float(stats.t.sf(d.mean() / (sd / math.sqrt(d.size)), d.size - 1))


def refusal_power(se: float, min_harm: float, prune_se: float) -> float:
    """P(the one-standard-error rule refuses a prune whose true cost is ``min_harm``), at standard error ``se``."""
    if se <= 0:
        return 1.0
    return float(stats.norm.cdf(min_harm / se - prune_se))


def required_size(sd: float, min_harm: float, prune_se: float, power: float = POWER) -> int:
    """Validation questions at which a prune costing ``min_harm`` (paired differences of spread ``sd``) is
    refused with probability ``power`` under the one-standard-error rule: n >= ((prune_se + z_power) sd / harm)^2."""
    if min_harm <= 0:
        raise ValueError("min_harm must be > 0")
    return max(2, math.ceil(((prune_se + stats.norm.ppf(power)) * sd / min_harm) ** 2))


def decide(diffs: np.ndarray, cfg: GateConfig, smaller: bool = False) -> tuple[bool, float, str]:
    """(accepted, p, rule) for paired differences ``diffs``; ``smaller``: the candidate only prunes."""
    d = np.asarray(diffs, dtype=np.float64)
    p = p_improves(d + cfg.delta)
    if d.mean() + cfg.delta > 0 and p <= 1 - cfg.confidence:
        return True, p, "test"
    if smaller and cfg.prune_se and cfg.min_harm and d.size > 1:
        se = d.std(ddof=1) / math.sqrt(d.size)
        if refusal_power(se, cfg.min_harm, cfg.prune_se) >= POWER and d.mean() >= -cfg.delta - cfg.prune_se * se:
            return True, p, "one_se"
    return False, p, "test"


def compare(evaluate: Evaluate, current: list[Skill], candidate: list[Skill], questions: np.ndarray,
            seeds: np.ndarray, cfg: GateConfig, smaller: bool = False) -> GateResult:
    """Score both libraries on the same questions and seeds and :func:`decide` (a ``smaller`` candidate only prunes)."""
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
    accepted, p, rule = decide(diffs, cfg, smaller)
    return GateResult(accepted, float(before.mean()), float(after.mean()), diffs, p, rule)


def validate(library: SkillLibrary, edits: list[Edit], evaluate: Evaluate, questions: np.ndarray,
             seeds: np.ndarray, cfg: GateConfig | None = None) -> tuple[GateResult, list[Skill]]:
    """Gate ``edits`` as one candidate library and write them with the verdict; return it and the new versions."""
    _, candidate = library.plan(edits)
    smaller = all(e.operator == "prune" for e in edits)
    result = compare(evaluate, library.current(), candidate, questions, seeds, cfg or GateConfig(), smaller)
    return result, library.apply(edits, gate=result)
