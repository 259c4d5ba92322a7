"""The credit interface: a group of G trajectories of the same task in, an advantage per step out.

A :class:`Trajectory` holds one rollout as per-step arrays (length T) and per-state arrays
(length T + 1: the state each step acted on, then the final state). Every field but the
outcome, the agents and the actions is an optional *signal*; a world fills the ones it can.
An estimator module declares ``NEEDS`` (signal names, i.e. field names below);
:func:`check` refuses an estimator whose signals a world does not provide, naming the missing ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from skills.credit import EPS, advantages



@dataclass
class Trajectory:
    """One rollout as a credit estimator reads it: per-step arrays of length T, per-state arrays of length T + 1.

    ``outcome``, ``agent`` and ``action`` are always there; every other field is an optional signal (None where
    the world gives none), and an estimator names the ones it reads in its ``NEEDS``. Worlds make these
    (``market.protocols.World.credit_signals`` for array worlds; ``TextWorld.step_signals`` for text worlds).

    Args:
        outcome: The terminal outcome (success 1/0, NDCG, ...).
        agent: [T] who acted at each step.
        action: [T] what it did.
        **signals: Any of the optional fields below, each documented where it is declared.
    """

    outcome: float
    """The terminal outcome (success 1/0, NDCG, ...)."""
    agent: np.ndarray
    """[T] who acted at each step (a population row or any id)."""
    action: np.ndarray
    """[T] what it did (an action index)."""
    reward: np.ndarray | None = None
    """[T] step reward (0 where the world pays none); None: all zero."""
    role: list[str] | None = None
    """[T] the role of each step (a pipeline stage, a relay stage...)."""
    # --- per state: length T + 1 (the state each step acted on, then the final state) ---------
    state: list[Hashable] | None = None
    """[T+1] canonical state keys (traj_graph, proas, mcgpo)."""
    progress: np.ndarray | None = None
    """[T+1] task progress in [0, 1] (proas, mcgpo's rubric)."""
    meter: np.ndarray | None = None
    """[T+1] work left to finish: the progress meter's regression target (delta_ttg)."""
    solver: np.ndarray | None = None
    """[T+1] a solver's value of each state (cast)."""
    conditions: list[frozenset] | None = None
    """[T+1] the atomic task conditions already satisfied (knowgpo)."""
    paired: np.ndarray | None = None
    """[T+1, 2] what each state's standing submission would pay if the episode ended there, in the world and in
    its paired world (one private condition changed): the outcome checker's two verdicts (pacpo)."""
    # --- per step: length T ------------------------------------------------------------------
    deps: list[tuple[int, ...]] | None = None
    """[T] the earlier steps whose output each step read (depgpo)."""
    checked: tuple[int, ...] | None = None
    """The steps whose output the verifier reads (depgpo); None: the last step."""
    logp: np.ndarray | None = None
    """[T] log-probability of each step's action under the current policy (steppo)."""
    logp_old: np.ndarray | None = None
    """[T] the same under the policy that sampled it (steppo's ratio); None: logp."""
    tokens: np.ndarray | None = None
    """[T] tokens per step (steppo's length normalisation); None: 1."""
    entropy: np.ndarray | None = None
    """[T] policy entropy at each step."""
    embedding: np.ndarray | None = None
    """[T, D] unit embedding of each step (scpo)."""
    results: list[np.ndarray] | None = None
    """[T] per step, the cached value v(S) of every coalition S of its m sub-actions, indexed by
    bitmask (length 2^m): the set interventions of casi."""
    criteria: np.ndarray | None = None
    """[T, 2] passed and failed criteria that each step is responsible for (draco)."""
    evidence: np.ndarray | None = None
    """[T] stage reward in [0, 1] from intermediate evidence (credo)."""
    labels: list[str] | None = None
    """[T] progress / exploration / noop / regression (triage)."""
    selection: np.ndarray | None = None
    """[T] -1: an execution step; 1 / 0: a selection step that did / did not pick the oracle one (skillgate)."""
    score: np.ndarray | None = None
    """[T] an action score (taspo): the agent's bid, a judge's score..."""
    profit: np.ndarray | None = None
    """[T] the step winner's bucket-brigade profit, from the round's payments (bucket_brigade)."""
    skill: list[str] | None = None
    """[T] the skill the step's agent used (grse)."""
    hit: np.ndarray | None = None
    """[T] 1: the step's search query retrieved a gold clue within the retriever's cutoff, 0: it did not, -1: the
    step issued no query (sid_span)."""
    plan: list[str] | None = None
    """[T] the plan the step wrote, as canonical text ("" for a step that wrote none): rollouts with the same plan
    are renders of one plan (dars)."""
    prefix: np.ndarray | None = None
    """[T] a planner step: the share of its plan's fields right before the first wrong one (0 for a plan it could not
    write); -1: a step of another role (dars)."""
    cited: np.ndarray | None = None
    """[T] 1: a search turn some later compaction cited (kept in the context), 0: one a compaction dropped and none
    cited, -1: a step that searched nothing, or a turn no compaction judged (self_credit)."""
    retrieved: list[tuple[int, ...]] | None = None
    """[T] the ids of the facts the step's search retrieved (() for a step that searched nothing): steps of different
    rollouts match by the Jaccard similarity of these sets (self_credit)."""

    def __len__(self) -> int:
        return len(self.agent)

    def provided(self) -> set[str]:
        return {f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None} | {"outcome"}


SIGNALS = tuple(f.name for f in dataclasses.fields(Trajectory))


@dataclass
class Credit:
    """What an estimator returns: one advantage array per trajectory (aligned with its steps).

    Args:
        steps: One [T] array per trajectory of the group, in its order: each step's advantage.
        skills: Per (agent, skill) or per sub-action credit, where the method attributes them.
    """

    steps: list[np.ndarray]
    """One [T] advantage array per trajectory of the group, in the group's order."""
    skills: dict[Hashable, float] = field(default_factory=dict)
    """Per (agent, skill) or per sub-action credit, where the method attributes them."""


class MissingSignals(ValueError):
    """An estimator needs signals the world does not provide."""


def provided(group: Sequence[Trajectory]) -> set[str]:
    """The signals every trajectory of the group carries."""
    return set.intersection(*(t.provided() for t in group)) if group else set()


def check(name: str, needs, signals, world: str = "this world", kind: str = "credit estimator",
          error: type[MissingSignals] = MissingSignals) -> None:
    """The one check of what a method (a ``kind``: credit estimator, objective, task sampler) ``needs`` against the
    ``signals`` ``world`` provides: ``error``, naming the missing ones and what there is, where some are missing."""
    missing = sorted(set(needs) - set(signals))
    if missing:
        raise error(f"{kind} {name!r} needs signals {world} does not provide: "
                    f"{', '.join(missing)} (provided: {', '.join(sorted(signals)) or 'none'})")


def outcomes(group: Sequence[Trajectory]) -> np.ndarray:
    return np.array([t.outcome for t in group], dtype=np.float64)


def group_advantage(group: Sequence[Trajectory], eps: float = EPS) -> np.ndarray:
    """[G] (r - mean) / (std + eps): the outcome advantage of one group (skills/credit.py's formula)."""
    return advantages(outcomes(group)[None], eps)[0]


def broadcast(group: Sequence[Trajectory], values) -> list[np.ndarray]:
    """One value per trajectory -> that value at each of its steps."""
    return [np.full(len(t), float(v)) for t, v in zip(group, values)]


def flat(group: Sequence[Trajectory], name: str) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate a per-step signal over the group -> (values, trajectory index of each step)."""
    parts = [np.asarray(getattr(t, name), dtype=np.float64).reshape(len(t), -1) for t in group if len(t)]
    values = np.concatenate(parts) if parts else np.zeros((0, 1))
    owner = np.repeat(np.arange(len(group)), [len(t) for t in group])
    return values, owner


def split(group: Sequence[Trajectory], values: np.ndarray) -> list[np.ndarray]:
    """Inverse of :func:`flat`: a [sum T] array back into per-trajectory arrays."""
    return np.split(np.asarray(values, dtype=np.float64), np.cumsum([len(t) for t in group])[:-1])
