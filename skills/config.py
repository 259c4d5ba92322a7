"""The ``[skills]`` section: how a scenario's skill library evolves (docs: concepts/skills.md).

One section for every scenario with a library (scenarios/spec/: ``skill_library``), so that
``--set skills.credit=presence`` means the same in each; a scenario without one refuses a changed key.
Every knob of the edit loop (skills/loop.py) is here, with one meaning in every scenario; a scenario's
TOML sets the values that suit it (recsys: ``window = 3``, ``prune_below = -0.2``, ``min_harm``). G, the rollouts
per question, is ``agents.group``: one key for the skills' credit and the learner's advantages alike.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic.dataclasses import dataclass

from skills.credit import CreditConfig
from skills.editor import DiagnosisConfig
from skills.gate import GateConfig
from skills.shapley import ShapleyConfig
from market.strict import STRICT


@dataclass(config=STRICT)
class SkillsConfig:
    credit: Literal["grse", "presence", "memory_shapley", "random", "none"] = "grse"
    """How the skills to edit are found: group-relative credit (skills/credit.py), presence-based credit
    (the baseline GRSE is measured against), each skill's Shapley value from replays of the validation
    problems with subsets of the library (skills/shapley.py; settings in ``skills.shapley``), at random
    (what the gate alone buys), or none: no edit passes, the library stays as it is."""
    diagnoser: Literal["rule", "llm"] = "rule"
    """Who names a blamed skill's failure and edit: the rule diagnoser, which reads the trace's checks, or a
    language model the scenario passes in (skills/editor.py)."""
    imitation: bool = True
    """Before diagnosis, read which line the blamed lines' failed outputs imitate (skills/imitation.py: each line
    shown alone, the failed output's log-probability against the correct one's) and move a blame the outputs do
    not bear out to the line they do: group-relative credit is linear in a line's presence and cannot split a
    failure that needs two lines together. Used where the scenario's model can score text (LLM worlds with a
    privileged pass); false: blame by credit alone."""
    constrained: bool = True
    """The LLM diagnoser's verdict is decoded under a constraint: picked from the closed set of well-formed
    verdicts (skills/editor.py ``verdicts``) by the backend's ``choose`` (hf: log-likelihood; vllm: guided
    choice; openai: a JSON schema), so it parses by construction; false: free generation, parsed, the rule
    diagnoser answering where it does not (counted either way)."""
    evidence: Literal["training", "probe"] = "training"
    """Where the credit's rollouts come from. ``training``: the training rounds themselves, each world carrying
    each line with probability ``p_use`` and G consecutive worlds on one question, so the contrast the credit
    reads costs the training run lines and distinct problems. ``probe``: a controlled experiment apart from
    training, at every edit pass: the frozen market (greedy, no payments, nothing of the training run changed)
    plays ``probe`` fresh questions of the training stream G times each, each rollout carrying each line with
    probability ``p_use``; training keeps every line and its own grouping, so until an edit passes the gate the
    run is the run without evolution (an LLM world's evolver only: agents/llm/edit_pass.py)."""
    probe: int = Field(8, ge=1)
    """``evidence = "probe"``: questions each edit pass plays, G rollouts each (agents.group)."""
    every: int = Field(1, ge=1)
    """Rounds between edit passes (1: after every round); the rollouts of the rounds between are still
    evidence for the next pass."""
    max_edits: int = Field(3, ge=1)
    """Edits diagnosed and gated per pass: the edit budget."""
    confidence: float = Field(0.9, ge=0.5, lt=1)
    """Confidence with which an edit that is not a prune must improve the mean validation score to pass the
    gate (a one-sided paired sign-flip test, p <= 1 - confidence; skills/gate.py). 0.9: a candidate that
    changes nothing measurable passes at most one time in ten (a tie never), so repeated passes against
    the same validation set random-walk the library far less than a "no drop" rule would; and an
    improvement of 4 of 16 validation problems (0/1 scores) with none lost still passes. 0.5 is about
    "any mean improvement"."""
    gate_delta: float = Field(0.0, ge=0)
    """Margin of the gate's test: it asks whether the mean validation score changes by more than -gate_delta
    (0: a real improvement; a prune's one-standard-error allowance comes on top)."""
    prune_se: float = Field(0.0, ge=0)
    """A prune may drop the mean validation score by up to this many standard errors of the paired
    differences (the one-standard-error rule at 1: of two libraries the validation cannot tell apart,
    keep the smaller; skills/gate.py), where the validation set can see ``min_harm``; 0: a prune faces the
    same test as any edit."""
    min_harm: float = Field(0.0, ge=0)
    """The drop of the mean validation score a prune must not be able to hide: the one-standard-error rule
    applies only while a prune this costly is refused with probability >= 0.9 at the observed standard
    error (skills/gate.py ``POWER``). Set it to the planted harmful skills' effect (recsys:
    experiments/skill_gate_power.py measures it and the validation size it needs); 0: the rule never applies."""
    window: int = Field(16, ge=1)
    """Rounds of rollouts the credit is fitted on at most: the evidence since the last accepted edit (cleared
    on an accept: it was about the library before it), bounded so a long run without one does not carry
    every round in memory and checkpoints."""
    skill_tokens: int = Field(256, ge=1)
    """Most tokens (words and punctuation marks, skills/limits.py) a skill body an edit writes may have; a
    birth's line past it is recorded as unchecked (skills/catalogue.py)."""
    role_tokens: int = Field(4096, ge=1)
    """Most tokens the bodies of one role's skills may have together (a bound on every agent's skill set):
    an edit that would grow them past it is refused before the gate."""
    prune_below: float = -0.3
    """harmful_skill: a blamed skill with credit at or below this is pruned, else revised (the threshold
    MASkills prunes at)."""
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

    shapley: ShapleyConfig = Field(default_factory=ShapleyConfig)
    """``credit = "memory_shapley"``: how the skills' Shapley values are estimated (skills/shapley.py)."""

    def credit_config(self, group: int) -> CreditConfig:
        """Group-relative credit over groups of ``group`` rollouts: G is ``agents.group``, the one key of the
        run's grouping (the worlds group their rollouts by it, and the LM learner compares the same ones)."""
        return CreditConfig(group_size=group, penalty=self.penalty)

    def diagnosis_config(self) -> DiagnosisConfig:
        return DiagnosisConfig(min_support=self.min_support, max_cases=self.max_edits, prune_below=self.prune_below)

    def gate_config(self) -> GateConfig:
        return GateConfig(confidence=self.confidence, delta=self.gate_delta, prune_se=self.prune_se,
                          min_harm=self.min_harm)
