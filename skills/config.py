"""The ``[skills]`` section: how a scenario's skill library evolves (DESIGN.md, "Skills").

One section for every scenario with a library (scenarios/registry.py: ``SKILL_LIBRARY``), so that
``--set skills.credit=presence`` means the same in each; a scenario without one refuses a changed key.
The scenario's own section keeps what only its world has (recsys: ``window``, ``prune_below``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic.dataclasses import dataclass

from market.config import STRICT
from skills.credit import CreditConfig
from skills.editor import DiagnosisConfig
from skills.gate import GateConfig


@dataclass(config=STRICT)
class SkillsConfig:
    credit: Literal["grse", "presence", "random", "none"] = "grse"
    """How the skills to edit are found: group-relative credit (skills/credit.py), presence-based credit
    (the baseline GRSE is measured against), at random (what the gate alone buys), or none: no edit
    passes, the library stays as it is."""
    diagnoser: Literal["rule", "llm"] = "rule"
    """Who names a blamed skill's failure and edit: the rule diagnoser, which reads the trace's checks, or a
    language model the scenario passes in (skills/editor.py)."""
    group: int = Field(4, ge=2)
    """G: complete rollouts per question; a rollout's advantage is relative to its group's."""
    every: int = Field(1, ge=1)
    """Rounds between edit passes (1: after every round); the rollouts of the rounds between are still
    evidence for the next pass."""
    max_edits: int = Field(3, ge=1)
    """Edits diagnosed and gated per pass: the edit budget."""
    gate_delta: float = Field(0.0, ge=0)
    """Largest drop of the mean validation score a candidate library may show and still replace the current one."""
    prune_se: float = Field(0.0, ge=0)
    """A prune may drop the mean validation score by up to this many standard errors of the paired
    differences more (the one-standard-error rule at 1: of two libraries the validation cannot tell apart,
    keep the smaller; skills/gate.py); 0: a prune faces the same test as any edit."""
    p_use: float = Field(0.8, gt=0, le=1)
    """Probability that a skill an acting agent holds is applied in a rollout (recsys: an applicable rule
    clause runs; LLM agents: the line is in the prompt), drawn afresh per rollout: the randomised
    contrast group-relative credit reads within a group (at 1 every rollout of a question uses the same
    skills, and only the routing differs)."""
    min_support: int = Field(3, ge=1)
    """Blame a skill only with contrast on at least this many distinct questions."""
    penalty: float = Field(0.05, ge=0)
    """lambda of the structure-aware workflow penalty (skills/workflow.py): the team reward loses lambda x
    (failed nodes / nodes) per role, so of two rollouts with the same outcome the cleaner one ranks higher."""

    def credit_config(self) -> CreditConfig:
        return CreditConfig(group_size=self.group, penalty=self.penalty)

    def diagnosis_config(self, prune_below: float) -> DiagnosisConfig:
        """``prune_below`` is the scenario's: how harmful a skill must be to be pruned rather than revised."""
        return DiagnosisConfig(min_support=self.min_support, max_cases=self.max_edits, prune_below=prune_below)

    def gate_config(self) -> GateConfig:
        return GateConfig(delta=self.gate_delta, prune_se=self.prune_se)
