"""What a scenario can do, declared once: :class:`ScenarioSpec`.

A scenario module states its capabilities in one value, ``SPEC = ScenarioSpec(...)``, instead of one module
flag per capability. The config loader checks every learner, credit estimator, task sampler and ``[skills]``
key a run asks for against it before anything loads (a key the scenario cannot honour is refused, exit 2,
naming it), and the registry fills in the defaults that depend on the scenario's kind (a ``build`` scenario's
rule policy can bid from any feature and learn action logits; a model of its own offers neither unless it says
so). Every field's default is "not offered", so a module without ``SPEC`` runs on the auction alone::

    from scenarios import ScenarioSpec

    SPEC = ScenarioSpec(credit_signals=("outcome", "progress"), oracle=True, value_bids={"margin": 0.3})
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from agents.config import ValueBidsConfig

BID_FEATURES = ("numeric", "minilm", "hf", "agent")
"""What learned bids can read (``agents.features``)."""
ACTION_KINDS = ("logits", "lm", "none")
"""What ``agents.actions = "grpo"`` trains: action logits over a rule policy's actions, a LoRA adapter of an LLM
(agents/learners/lm_grpo.py), or nothing (an agent's action is not trained by a learner)."""


@dataclass(frozen=True)
class ScenarioSpec:
    credit_signals: tuple[str, ...] = ()
    """The Trajectory fields its world's ``credit_signals`` fills (agents/credit), checked against
    ``agents.credit``."""
    task_signals: tuple[str, ...] = ()
    """What its world gives a task sampler (agents/tasks ``NEEDS``: ``tasks``, ``variant``, ``subproblems``,
    ``progress``), checked against ``agents.tasks``; the world's ``draw_tasks(name, rng)`` hands the sampler its
    training draw."""
    bid_features: tuple[str, ...] | None = None
    """The ``agents.features`` its agents can bid from under ``market.bid_scheme = "learned"`` (None: all of
    :data:`BID_FEATURES` for a ``build`` scenario, whose policy describes its features with a RuleSpace; none for a
    model of its own)."""
    learned_actions: str | None = None
    """One of :data:`ACTION_KINDS` (None: ``logits`` for a ``build`` scenario, ``none`` for a model of its own)."""
    skill_library: bool = False
    """Its agents' skills are a library evolved by the ``[skills]`` section (skills/config.py); without one a
    changed ``skills.*`` key is refused. A model of its own evolves it itself (recsys); a ``build`` scenario's
    policy does, through ``policy.evolve_skills``."""
    oracle: bool = False
    """Its world has an executable oracle for the ``sero`` objective: ``world.oracle(obs)`` (market.protocols.World)
    or, for LLM agents, the correct continuation of a step."""
    rubric: bool = False
    """Its LLM world says what a good step of a role does at a state (scenarios/text/world.py ``rubric``): the
    ``evidence_diagnosis`` objective's rewrites."""
    branches: bool = False
    """Its world can restart an instance from a state another one reached (``world.snapshot()`` and
    ``world.restore(state, src, dst)``), so a learner may branch rollouts (``agents.branches``)."""
    subgoals: bool = False
    """Its world says which order-free sub-goals a state has achieved (``TextWorld.subgoals``): the canonical states of
    the ``diamond_sd`` objective's state graph."""
    objective_signals: tuple[str, ...] = ()
    """What a learner of its own (not action logits) gives ``agents.objective`` (recsys: its learned recall's item
    scores, for ``ca_pg``); an objective reading none of them is refused."""
    batch_signals: tuple[str, ...] = ()
    """Per-step signals its world adds to the action learner's batch for ``agents.objective`` (a text world with
    ``edit_roles``: ``context_edit``, which step edited the context)."""
    value_bids: dict[str, float] = field(default_factory=dict)
    """Its own defaults for value bids' keys (``[agents.value]``'s: ``{"margin": 0.3}`` ...), where its economy needs other settings
    than the platform's (which are blocks'); applied under ``agents.bid_objective = "value"`` unless the config
    sets the key."""

    def __post_init__(self):
        if self.learned_actions not in (None, *ACTION_KINDS):
            raise ValueError(f"ScenarioSpec.learned_actions = {self.learned_actions!r}: one of {', '.join(ACTION_KINDS)}")
        if self.bid_features is not None and (unknown := sorted(set(self.bid_features) - set(BID_FEATURES))):
            raise ValueError(f"ScenarioSpec.bid_features names {', '.join(map(repr, unknown))}: learned bids read "
                             f"{', '.join(BID_FEATURES)} only")
        known = [f.name for f in fields(ValueBidsConfig)]
        if unknown := sorted(set(self.value_bids) - set(known)):
            raise ValueError(f"ScenarioSpec.value_bids names {', '.join(map(repr, unknown))}: value bids read "
                             f"{', '.join(known)} only (the keys of [agents.value])")
        for name in ("credit_signals", "task_signals", "objective_signals", "batch_signals"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.bid_features is not None:
            object.__setattr__(self, "bid_features", tuple(self.bid_features))

    def resolved(self, own_model: bool) -> ScenarioSpec:
        """This spec with the kind-dependent defaults filled in (see :attr:`bid_features`, :attr:`learned_actions`)."""
        return replace(self, bid_features=self.bid_features if self.bid_features is not None else
                       (() if own_model else BID_FEATURES),
                       learned_actions=self.learned_actions or ("none" if own_model else "logits"))


LEGACY_FLAGS = {"CREDIT_SIGNALS": "credit_signals", "TASK_SIGNALS": "task_signals", "BID_FEATURES": "bid_features",
                "LEARNED_ACTIONS": "learned_actions", "SKILL_LIBRARY": "skill_library", "ORACLE": "oracle",
                "BRANCHES": "branches", "OBJECTIVE_SIGNALS": "objective_signals", "VALUE_BIDS": "value_bids"}
"""Module flags of the first scenario interface and the ScenarioSpec field each became: a module still setting
one is refused with a message naming the field (scenarios/registry.py)."""
