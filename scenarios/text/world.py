"""Your own LLM-agent economy in one class: the text-world API.

A world of LLM agents is one subclass of :class:`TextWorld` whose state is ordinary Python (text,
numbers, a list of messages), one state per world. What it writes::

    from scenarios.text import Role, TextWorld

    class Haggle(TextWorld):
        roles = (Role("buyer", "You buy for your client. Reply with one offer: I offer $<n>.", max_tokens=12),)
        pool = {"buyer": [(0.5, ["Start low and raise slowly.", "example: Seller: $90 => I offer $60."])]}

        def problem(self, rng):                   # a fresh problem from the world's own generator
            return {"ask": int(rng.integers(50, 100))}
        def read(self, state, role):              # what an acting agent of ``role`` reads
            return f"Seller: ${state['problem']['ask']}"
        def act(self, state, role, text):         # a completion changes the state, or is refused
            ...; return None                      # (a string: the reason it is refused)
        def done(self, state): ...
        def reward(self, state): ...

and, where it has more to say, ``start`` (the state a problem begins in: by default
``{"problem": problem, "history": []}``), ``may_act`` (which roles may act in a state), ``stages`` and
``stage`` (a few short state summaries the agents' yes/no wake-up question reads), ``solved``,
``correct`` (the correct output of a role at a state: births from failures, skill diagnoses and the
``sero`` objective read it), ``credit_signals`` and ``step_signals`` (per-step signals a credit estimator reads;
``episode_signals`` where a later step decides a signal, as a compaction deciding which earlier turns it kept),
``rubric`` (what a good step of a role at a state does, as criteria a reply can be checked against, not the answer:
the ``evidence_diagnosis`` objective rewrites a failed episode's faulty steps against it),
``pair`` and ``check`` (the problem with one private condition changed, and what a state's standing submission
would pay against a problem: the ``paired`` signal the ``pacpo`` estimator reads), ``subgoals`` (the order-free
sub-goals a state has achieved, its canonical form: the ``subgoals`` signal the ``diamond_sd`` objective reads) and
``given`` (the task such a worked example shows: by default what the role reads), ``value_bids`` (its own
defaults for learned value bids), ``horizon`` and ``prompts`` (the framework's own rewrite and diagnosis prompts,
agents/llm/prompts.py: by default generic ones, shown the world's own first worked example).

A tool role is a Python function: ``Role("splitter", "Offers halfway.", tool=lambda state: "I offer $70.")``
acts wherever ``may_act`` lets it, without a model, its text applied by ``act`` like any completion.

The framework does the rest (scenarios/text/adapter.py, scenarios/text/scenario.py): B worlds in lockstep and
the array observation the market needs (the stage, the problem's seed stream and id, the episode and
how many actions the state has taken, so an agent that forfeited sleeps until the state changes);
actions that are the completions' text, applied to a copy of the state (a refused one is a forfeit,
the state unchanged); G consecutive worlds on one problem when a learner groups rollouts; held-out and
validation problems drawn from ``problem`` on seed streams of their own (``heldout_seed``,
``validation_seed``), never trained on; the agents (agents/llm/policy.py: wake-up, one batched model
call per step, births, the skill library); the summary's metrics, with the **complete agent**
(one agent holding every tool, the whole initial skill pool and the LLM roles' summed token budget,
playing every step itself as the first role that may act there; ``complete`` names the roles it combines
where that is not all of them) on the same held-out problems, and with ``single``, the best live agent of
those roles playing every step alone.

A world file is a scenario (scenarios/registry.py): ``catallax run my_world.toml`` with ``scenario =
"my_world.py"``, its section ``[my_world]`` (scenarios/text/scenario.py ``TextWorldConfig``: the model, the
horizon, the held-out and validation sizes; a module's own ``Config``, a subclass, adds keys of the world's
own, which the world reads as ``self.config``). Whatever a run's keys need that the world lacks is
refused when the config loads, naming the method and the key (explore births and skill edits need
``correct``).
"""

from __future__ import annotations

import numpy as np

from agents.llm.prompts import Prompts
from agents.llm.task import Role

__all__ = ["Prompts", "Role", "TextWorld"]


class TextWorld:
    """One LLM world: its roles, skill pool and problems, and how text moves its state.

    Subclass it, set ``roles`` and ``pool``, and write ``problem``, ``read``, ``act``, ``done`` and ``reward``; the
    other methods are optional (each says what needs it). A module holding one subclass is a scenario:
    ``scenario = "my_world.py"`` in a scenario file. The [LLM-world tutorial](../tutorials/llm_world.md) walks
    through one; the module ``scenarios.text.world``'s docstring lists every hook.
    """

    roles: tuple[Role, ...] = ()
    """The roles, in order: an LLM role (name, frozen system prompt, token cap) or a tool (``tool=function``)."""
    pool: dict[str, list] = {}
    """Each role's initial skills: groups ``(p, [lines])`` (a newcomer holds each line with probability p)
    or plain lines (held by every newcomer). ``example: <input> => <output>`` is a worked example."""
    stages: tuple[str, ...] = ("It is your turn.",)
    """Short summaries of the kinds of state there are: what the wake-up question reads (``stage``)."""
    horizon: int = 8
    """Steps an episode may take (a forfeit spends one); the config's ``horizon`` overrides it."""
    prompts: Prompts | None = None
    """The framework's rewrite and diagnosis prompts for this world (None: the generic ones)."""
    wrong: tuple[str, ...] = ()
    """Lines of ``pool`` planted wrong on purpose: the summary then also reports the curated complete agent
    (the same agent without them: the ceiling), beside the fair one holding the whole pool."""
    complete: tuple[str, ...] | None = None
    """The roles the complete agent combines, in the order it tries them (None: all of ``roles``); its token
    budget is the sum of theirs. A world whose pipeline some role only shortcuts leaves that role out."""
    single: tuple[str, ...] = ()
    """Roles whose live agents are also measured alone on the held-out problems (each plays every step of
    every problem by itself): the summary's ``single_agent_*``, the best of them. Empty: not measured (it
    costs a held-out run per agent)."""
    credit_signals: tuple[str, ...] = ()
    """The per-step signals (agents/credit/base.py ``Trajectory`` fields) :meth:`step_signals` gives the credit
    estimators, declared so the config loader refuses an estimator that reads others."""
    edit_roles: tuple[str, ...] = ()
    """Roles whose accepted move edits the context later prompts read (longlookup's ``compactor``): the world's
    ``context_edit`` signal, where the contextpilot objective branches (agents/objectives/contextpilot.py)."""
    value_bids: dict[str, float] = {}
    """The world's own defaults for learned value bids' ``[agents.value]`` keys (a run's keys override them), as a
    market scenario's ``SPEC.value_bids``: e.g. ``{"newcomer": 0.0}`` where a newborn's guessed value would outbid
    proven agents."""
    config = None
    """The scenario section's config (scenarios/text/scenario.py ``TextWorldConfig``, or the module's own
    ``Config`` subclass with the world's own keys), set by the framework before the first problem."""

    # --- what every world writes ------------------------------------------------------------------
    def problem(self, rng: np.random.Generator):
        """A fresh problem drawn with ``rng`` (the framework seeds it: the same seed, the same problem).

        Args:
            rng: The problem's generator, seeded by the framework (training, held-out and validation streams apart).

        Returns:
            The problem: any Python value ``start`` turns into a state.
        """
        raise NotImplementedError(f"{type(self).__name__}.problem(rng): a text world generates its problems")

    def read(self, state, role: str) -> str:
        """What an acting agent of ``role`` reads in ``state``.

        Args:
            state: The episode's state.
            role: The acting role's name.

        Returns:
            The text shown to the agent after its frozen prompt and skills (a tool role reads nothing).
        """
        raise NotImplementedError(f"{type(self).__name__}.read(state, role): what an acting role reads")

    def act(self, state, role: str, text: str) -> str | None:
        """Apply ``role``'s completion ``text`` to ``state`` (change it in place; the framework passes a
        copy). None: applied; a string: refused, and why ("illegal: ..." for a rule of the world broken,
        anything else for an output it cannot read).

        Args:
            state: The episode's state (a copy: change it in place).
            role: The acting role's name.
            text: The completion (or a tool's output), its stop string removed.

        Returns:
            None where the text was applied; else why it was refused (the step is a forfeit, the state unchanged).
        """
        raise NotImplementedError(f"{type(self).__name__}.act(state, role, text): how a completion changes the state")

    def done(self, state) -> bool:
        """Whether the episode has ended.

        Args:
            state: The episode's state.

        Returns:
            True once no further step is played (the horizon also ends an episode).
        """
        raise NotImplementedError(f"{type(self).__name__}.done(state): when an episode ends")

    def reward(self, state) -> float:
        """The episode's reward once it has ended (paid into the market, in units of ``market.reward_scale``).

        Args:
            state: The ended episode's state.

        Returns:
            The reward (a success is usually 1.0, a failure 0.0); the house pays it to the owner of the last step.
        """
        raise NotImplementedError(f"{type(self).__name__}.reward(state): what an ended episode is worth")

    # --- what a world may write -------------------------------------------------------------------
    def start(self, problem):
        """The state a problem begins in (ordinary Python; the framework copies it).

        Args:
            problem: What ``problem`` returned.

        Returns:
            The initial state; by default ``{"problem": problem, "history": []}``.
        """
        return {"problem": problem, "history": []}

    def may_act(self, state, role: str) -> bool:
        """Whether ``role`` may act in ``state`` (a role that may not neither bids nor costs a model call).

        Args:
            state: The episode's state.
            role: A role's name.

        Returns:
            True where agents of the role may bid for this step (default: always).
        """
        return True

    def stage(self, state) -> int:
        """Which of ``stages`` describes ``state``.

        Args:
            state: The episode's state.

        Returns:
            An index into ``stages`` (default 0).
        """
        return 0

    def solved(self, state) -> bool:
        """Whether an ended episode reached its goal (default: a positive reward)."""
        return self.reward(state) > 0

    def correct(self, state, role: str | None) -> str:
        """The correct output of ``role`` at ``state`` (``role`` None: the problem's correct outcome, shown
        to skill diagnosers). Optional: explore births and skill edits need it.

        Args:
            state: The state the role acted (or should have acted) in.
            role: The role's name, or None for the problem's correct outcome.

        Returns:
            The text a correct completion of the role would be.
        """
        raise NotImplementedError(f"{type(self).__name__}.correct(state, role)")

    def rubric(self, state, role: str) -> str:
        """What a good step of ``role`` at ``state`` does, as criteria (``quote the attribute each rule names, exactly
        as the record gives it``), never the output itself: a rewrite against it must still find the answer. Optional:
        the ``evidence_diagnosis`` objective needs it.

        That objective also reads each reply's *grounding*, which the framework measures and no world writes
        (agents/llm/privileged_pass.py ``grounding``): the share of the reply's content words and numbers (those not in
        its role's frozen prompt, the format and range it was told to write, nor a short list of function words)
        that occur in what the agent read; a reply with none claims nothing and is grounded (1). A measure of the
        text alone, the same on every world, so no world can flatter its agents' grounding, and cheap (no model
        call); its blind spot is a value a role computes rather than quotes (a sum), which it counts as
        ungrounded unless the role's frozen prompt names the output's range."""
        raise NotImplementedError(f"{type(self).__name__}.rubric(state, role)")

    def given(self, state, role: str) -> str:
        """The task a worked example of ``role`` at ``state`` shows beside :meth:`correct` (explore births,
        skill edits): by default what the role reads; a world whose reading spans lines shows a one-line form."""
        return self.read(state, role)

    def step_signals(self, before, after, role: str) -> dict:
        """One step's values of ``credit_signals`` (name -> value), from the state before and after it; a forfeit
        leaves ``after`` equal to ``before``.

        Args:
            before: The state the step acted on.
            after: The state after it.
            role: The acting role's name.

        Returns:
            Each of ``credit_signals`` (``agents.credit.Trajectory`` field names) with this step's value.
        """
        raise NotImplementedError(f"{type(self).__name__}.step_signals(before, after, role)")

    def episode_signals(self, states: list, roles: list[str]) -> dict:
        """Every step's values of ``credit_signals`` in one episode (name -> [T] values), from its states (``states``
        [T + 1]: the state each step acted on, then the last) and the role of each step (``roles`` [T]). By default
        :meth:`step_signals` of each step; a world whose signal a later step decides (a compaction citing earlier
        turns: scenarios/longlookup.py) overrides it."""
        rows = [self.step_signals(states[t], states[t + 1], role) for t, role in enumerate(roles)]
        return {name: [r[name] for r in rows] for name in self.credit_signals}

    def pair(self, problem, rng: np.random.Generator):
        """``problem`` with one private condition changed (what the agents never read: a floor price, a hidden
        fact), drawn with ``rng``; a new problem, ``problem`` left as it is. With :meth:`check`, optional: the
        ``paired`` credit signal (the ``pacpo`` estimator) needs both."""
        raise NotImplementedError(f"{type(self).__name__}.pair(problem, rng)")

    def check(self, state, problem) -> float:
        """The outcome checker: what the world would pay if the episode ended now on ``state``'s standing
        submission (the offer on the table, the answer so far), judged against ``problem`` (the state's own or
        its :meth:`pair`); 0 where nothing submitted would pay. Against the state's own problem at an ended
        episode it is :meth:`reward`."""
        raise NotImplementedError(f"{type(self).__name__}.check(state, problem)")

    def subgoals(self, state) -> frozenset[str]:
        """The order-free sub-goals ``state`` has achieved (the items fetched, the facts proved): two states with the
        same set are one canonical state, however the episode got there. Optional: the ``subgoals`` signal (the
        ``diamond_sd`` objective's state graph) needs it."""
        raise NotImplementedError(f"{type(self).__name__}.subgoals(state)")

    # --- read by the framework --------------------------------------------------------------------
    @classmethod
    def has_correct(cls) -> bool:
        """Whether the world defines :meth:`correct`."""
        return cls.correct is not TextWorld.correct

    @classmethod
    def has_rubric(cls) -> bool:
        """Whether the world defines :meth:`rubric`."""
        return cls.rubric is not TextWorld.rubric

    @classmethod
    def has_pair(cls) -> bool:
        """Whether the world defines :meth:`pair` and :meth:`check`: then it provides the ``paired`` signal."""
        return cls.pair is not TextWorld.pair and cls.check is not TextWorld.check

    @classmethod
    def has_subgoals(cls) -> bool:
        """Whether the world defines :meth:`subgoals`: then it provides the ``subgoals`` signal."""
        return cls.subgoals is not TextWorld.subgoals

    @classmethod
    def signals(cls) -> tuple[str, ...]:
        """Every credit signal the world provides: its ``credit_signals``, and ``paired`` where it pairs."""
        return tuple(cls.credit_signals) + (("paired",) if cls.has_pair() else ())

    def skill_pool(self) -> dict[str, list[tuple[float, list[str]]]]:
        """``pool`` with plain lines as groups held with probability 1 (read from the instance: a world may make its
        pool a property of its config, as desk's ``harmful`` and ``misleading`` keys do)."""
        out = {}
        for role, entries in self.pool.items():
            groups, plain = [], []
            for entry in entries:
                (plain.append(entry) if isinstance(entry, str) else groups.append((float(entry[0]), list(entry[1]))))
            out[role] = ([(1.0, plain)] if plain else []) + groups
        return out
