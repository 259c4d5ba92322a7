"""What the market needs from a world and from the agents' policy, and the hooks it offers them.

The market imports nothing from ``agents`` or ``scenarios``: it drives any object with these
methods. Shapes: B worlds in lockstep, N = population rows (the house row 0 included, never
eligible), F observation features.

Every optional hook is declared here with a default that does nothing, so the market calls hooks
without asking whether they exist, and a class that subclasses the protocol inherits the defaults.
A wrapper (a policy around another: a trained bid head, a dashboard watching the auctions, agents
dropped out) subclasses :class:`PolicyWrapper` and overrides only what it changes.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class World(Protocol):
    """B independent task instances stepped in lockstep."""

    horizon: int
    """Maximum steps per episode; an episode still running then has failed."""
    group: int = 1
    """G: consecutive instances of a round that share one task, for group-relative learning (the runner
    sets it from agents.group); a world whose tasks are all alike may ignore it."""

    def reset(self, batch: int, rng: np.random.Generator) -> None:
        """Start B fresh instances."""

    def observe(self) -> np.ndarray:
        """[B, F] features of the current state of each instance."""

    def step(self, actions: np.ndarray, acting: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply ``actions[b]`` where ``acting[b]``; return (reward [B] float, done [B] bool).

        A reward returned with ``done`` is the terminal reward; any other reward
        is a step reward for that step's winner.
        """

    @property
    def solved(self) -> np.ndarray:
        """[B] bool: which instances reached their goal."""

    # --- optional hooks ---------------------------------------------------------------------------
    def state_dict(self) -> dict | None:
        """What the world carries from one round to the next (a curriculum), for checkpoints; None: nothing."""
        return None

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""

    task_ids: list | None = None
    """The task each instance of the round was drawn as, where a task sampler draws them (draw_tasks); None:
    the world's own draw."""

    def draw_tasks(self, name: str, rng: np.random.Generator, settings=None) -> None:
        """From the next round on, draw the training instances with the task sampler ``name`` (agents/tasks, the
        ``agents.tasks`` key) over this world's tasks, and report each round's rewards to it; ``rng`` for
        what the world draws once (a pool of tasks); ``settings``: the sampler's ``Config``
        (``agents.task_settings.<name>``), handed to ``agents.tasks.Draw``. Only asked of a world whose scenario
        declares ``SPEC.task_signals``; held-out instances stay the world's own."""
        raise NotImplementedError(f"{type(self).__name__} draws its own tasks (its SPEC has no task_signals)")

    def oracle(self, obs: np.ndarray) -> np.ndarray:
        """[M] the action an executable oracle (the world's solver) takes in each state of ``obs`` [M, F], -1
        where it has none (a finished instance), for the ``sero`` objective. Only asked of a world whose
        scenario declares ``oracle`` (scenarios.ScenarioSpec)."""
        raise NotImplementedError(f"{type(self).__name__} has no oracle (its SPEC does not declare oracle)")

    def snapshot(self):
        """The state of all B instances now, as an object :meth:`restore` reads back, for rounds whose learner
        branches rollouts from inner states (``agents.branches``). Only asked of a world whose scenario
        declares ``branches`` (scenarios.ScenarioSpec)."""
        raise NotImplementedError(f"{type(self).__name__} cannot branch (its SPEC does not declare branches)")

    def restore(self, state, src: np.ndarray, dst: np.ndarray) -> None:
        """Instances ``dst`` take the state instances ``src`` had in ``state`` (a :meth:`snapshot`): each
        ``dst`` then plays on from there, its step budget spent as the source's was."""
        raise NotImplementedError(f"{type(self).__name__} cannot branch (its SPEC does not declare branches)")

    def credit_signals(self, obs: np.ndarray, actions: np.ndarray, b: int, steps: np.ndarray) -> dict:
        """Fields of :class:`agents.credit.Trajectory` for world ``b``'s trajectory (observations [T+1, F],
        actions [T], the acting steps' indices in the round), for the credit estimators; {}: none."""
        return {}


class Policy(Protocol):
    """The agents' skills, row-aligned with the population."""

    def eligible(self, obs: np.ndarray) -> np.ndarray:
        """[B, N] bool: which rows would act on each observation (wake-up)."""

    def act(self, obs: np.ndarray, winners: np.ndarray) -> np.ndarray:
        """[B] int actions of ``winners[b]`` on ``obs[b]`` (ignored where winners[b] < 0)."""

    def resize(self, capacity: int) -> None:
        """Grow row-aligned arrays to the population's new capacity."""

    def spawn(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        """Give fresh random skills to newborn rows."""

    def inherit(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        """Give each newborn row a mutated copy of its parent row's skills."""

    def describe(self, rows: np.ndarray) -> list[str]:
        """The skill text of each row (e.g. its rule), for the record."""

    def state_dict(self) -> dict:
        """Everything needed to continue from here, for checkpoints."""

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""

    # --- optional hooks ---------------------------------------------------------------------------
    space = None
    """The RuleSpace its agents read a state through (bounded integer features; the world's actions), which a
    learner composed around it reads (agents/learners/policy.py): numeric bid features and action logits need one."""
    backend = None
    """Its own language model (agents/backends), which ``agents.features = "hf"`` reads instead of loading another."""
    state_text = None
    """A function of [B, F] observations -> each state as text (an LLM task's state summaries), which text bid
    features embed instead of the features' own rendering; None: the features' own."""

    reads_auctions: bool = False
    """Whether :meth:`learn` reads every auction in full (``RoundTrace.eligible``, ``RoundTrace.wealth``: [T, B, N]
    and [T, N], so the market records them only for a policy that asks)."""

    def bids(self, obs: np.ndarray) -> np.ndarray:
        """[N] or [B, N] bids in credits, for ``market.bid_scheme`` = ``policy`` or ``learned``."""
        raise NotImplementedError(f"{type(self).__name__} has no bids of its own (market.bid_scheme = policy)")

    def learn(self, model) -> None:
        """Update from the round the model just ran (``model.trace``), before rent, deaths and births,
        so children inherit the updated rows."""

    branches: int = 0
    """N: how many of a training round's worlds branch from each full rollout's inner states (the first
    B / (1 + N) worlds play in full, the rest start from states they reached: :meth:`plan_branches`); 0: none."""

    def plan_branches(self, obs: np.ndarray, lengths: np.ndarray, outcome: np.ndarray,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Where the round's branches start, once its M full rollouts are over: ``obs`` [T, M, F] what they
        observed, ``lengths`` [M] their steps, ``outcome`` [M] 1.0 where each reached its goal -> (source [M x N], the
        full rollout each branch continues; prefix [M x N], how many of its steps it keeps, below its length)."""
        raise NotImplementedError(f"{type(self).__name__} does not branch")

    def revise(self, rows: np.ndarray, parents: np.ndarray, obs: np.ndarray, found: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
        """Explore births: make ``rows`` children of ``parents`` revised at ``obs``, the state each
        parent's action preceded a failure (``found``: the parent had one this round). Returns which
        rows it made ([k] bool); the market has the others inherit as exploit children do."""
        return np.zeros(rows.size, dtype=bool)

    def compute(self) -> np.ndarray | None:
        """[N] LLM tokens each row's own model calls used since the last call (then zeroed), for
        ``market.token_price``; or {model label: [N] tokens} where rows call different models (priced by
        ``market.token_prices``); None: this policy calls no model."""
        return None

    def attach(self, store, population) -> None:
        """The run's database (market.store.RunStore) before the first round, for a policy that keeps
        state there too (LLM agents: their skill library); ``population`` names its rows' agents."""

    @property
    def unwrapped(self) -> Policy:
        """The scenario's own policy under any wrappers (as in Gymnasium), for scenario code that reads its
        own attributes (rules, switches)."""
        return self


class PolicyWrapper(Policy):
    """A policy around another: every call goes to ``inner`` unless the wrapper overrides it."""

    def __init__(self, inner: Policy):
        self.inner = inner

    def eligible(self, obs):
        return self.inner.eligible(obs)

    def act(self, obs, winners):
        return self.inner.act(obs, winners)

    def resize(self, capacity):
        self.inner.resize(capacity)

    def spawn(self, rows, rng):
        self.inner.spawn(rows, rng)

    def inherit(self, rows, parents, rng):
        self.inner.inherit(rows, parents, rng)

    def describe(self, rows):
        return self.inner.describe(rows)

    def state_dict(self):
        return self.inner.state_dict()

    def load_state_dict(self, state):
        self.inner.load_state_dict(state)

    @property
    def reads_auctions(self) -> bool:
        return self.inner.reads_auctions

    def bids(self, obs):
        return self.inner.bids(obs)

    def learn(self, model):
        self.inner.learn(model)

    def revise(self, rows, parents, obs, found, rng):
        return self.inner.revise(rows, parents, obs, found, rng)

    @property
    def branches(self) -> int:
        return self.inner.branches

    def plan_branches(self, obs, lengths, outcome, rng):
        return self.inner.plan_branches(obs, lengths, outcome, rng)

    def compute(self):
        return self.inner.compute()

    def attach(self, store, population):
        self.inner.attach(store, population)

    @property
    def unwrapped(self) -> Policy:
        return self.inner.unwrapped


class Economy(Protocol):
    """What the runner drives (scenarios/run/runner.py): ``MarketModel``, or a scenario's own model."""

    episodes_done: int

    def step(self) -> None:
        """One round; ``last_round`` then holds what it changed, for persistence."""

    def state_dict(self) -> dict:
        """Everything needed to continue this run exactly, at a round boundary."""

    def load_state_dict(self, state: dict) -> None:
        """Restore a checkpoint."""

    def attach(self, store) -> None:
        """A model that keeps state in the run database too (recsys: its skill libraries) gets the store
        here before the first round."""
