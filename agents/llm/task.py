"""What a scenario gives LLM agents: its roles and the text task the policy reads states through.

A :class:`Role` is the frozen part of an agent's prompt (births never touch it) and its token cap; a
tool role has no LLM (the task computes its action). A :class:`TextTask` is the scenario side of
agents/llm/policy.py: what a state says to the wake-up question, what an acting role reads, whether an
action could be legal, how a completion parses, and the correct output at a state (births and
diagnoses). scenarios/text/adapter.py implements it for every world written as one class (scenarios/text/world.py:
the built-in wordmath and procurement too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from agents.backends.base import BackendConfig, Completion


@dataclass(frozen=True)
class Role:
    """A role of a text world: the agents that act in it share its frozen system prompt and token cap.

    Args:
        name: The role's name (``"buyer"``), used by ``TextWorld.read``, ``act``, ``may_act`` and the skill pool.
        frozen: The system prompt: what the agent is and its hard constraints. Never edited.
        wake: The yes/no wake-up question.
        max_tokens: Token cap of one action.
        stop: Strings that end an action.
        tool: A function of the state -> the text it writes, for a role that acts without a model.
        llm: This role's own model (``agents.backends.base.BackendConfig``), where not the world's shared one.
    """

    name: str
    """The role's name: what the world's methods receive as ``role``, and the key of its skill pool."""
    frozen: str
    """System prompt: what the agent is and its hard constraints. Never edited."""
    wake: str = "Should you act now?"
    """The yes/no wake-up question, asked about a short summary of the state."""
    max_tokens: int = 16
    """Token cap of one action (a constrained agent); hitting it makes the action invalid."""
    stop: tuple[str, ...] = ("\n",)
    """An action ends at the first of these (not included in its text): ``"."`` ends a one-sentence reply
    before a small model goes on to write the other side of a conversation."""
    tool: bool | Callable = False
    """A tool agent: acts by ``task.tool`` and wakes by ``task.tool_wake``; no LLM call. In a text world
    (scenarios/text/world.py) the tool itself: a function of the state -> the text it writes (None: nothing)."""
    llm: BackendConfig | None = None
    """The model this role's agents call, where it is not the world's shared one (``[<section>.llm]``); a
    ``[<section>.roles.NAME]`` section of the run's config overrides it. One market can so mix models (two
    sizes behind one server, a small model beside a larger one); the summary reports each one's usage."""


class TextTask(Protocol):
    """What a scenario provides so LLM agents can read its states and act on them."""

    all_summaries: tuple[str, ...]
    """Every state summary there is (few: wake-up scores are cached per agent and summary)."""

    def summaries(self, obs: np.ndarray) -> list[str]:
        """[B] the state summary the wake-up question is asked about; the observation must name
        its episode (an agent that forfeited sleeps on the same observation until it changes)."""

    def context(self, obs_row: np.ndarray, role: str) -> str:
        """What an acting agent of this role reads."""

    def illegal(self, role: str, obs_row: np.ndarray) -> str:
        """Why no action of this role could be legal in this state ("" if one could): checked before
        generating, so a forfeit that is certain costs no model call."""

    def parse(self, role: str, text: str, obs_row: np.ndarray) -> tuple[str | None, str]:
        """Raw completion -> (payload, "") or (None, reason) when it is unparsable or illegal."""

    def tool(self, role: str, obs_row: np.ndarray) -> tuple[str | None, str]:
        """A tool agent's action -> (payload, "") or (None, reason)."""

    def tool_wake(self, role: str, obs: np.ndarray) -> np.ndarray:
        """[B] bool: when a tool agent of this role wakes."""

    def deliver(self, payloads: list[str | None]) -> None:
        """This step's payloads, one per world (None where nobody acted validly)."""

    def lesson(self, obs_row: np.ndarray, role: str) -> tuple[str, str]:
        """(what the agent was given, the correct output) at a state: material for explore births."""

    def verify(self, role: str, text: str, obs_row: np.ndarray) -> bool:
        """Whether ``text`` by ``role`` at this state does what the correct output (:meth:`lesson`) does: the world's
        verifier of a teacher's sample and its fault locator (agents/llm/privileged_pass.py). Needed only where
        :meth:`lesson` is (a world that knows the correct output)."""

    def rubric(self, obs_row: np.ndarray, role: str) -> str:
        """What a good action of this role at this state does, as criteria, not the output (the ``evidence_diagnosis``
        objective's rewrites). Needed only where the world writes one (scenarios/text/world.py ``rubric``)."""

    def question(self, obs_row: np.ndarray) -> tuple[object, str]:
        """(the question a world's first observation poses, as a string id; its correct final answer):
        skill evolution (agents/llm/edit_pass.py) groups rollouts by question and shows diagnosers the answer.
        Needed only by scenarios with a skill library (``SPEC.skill_library``)."""


    prompts: object
    """Optional (agents/llm/prompts.py Prompts): the rewrite and diagnoser prompts of this task; absent, the
    generic defaults, their demonstrations made from the task's own pool and roles."""


def status_of(done: Completion, reason: str) -> str:
    """The trace status (skills/workflow.py) of an invalid action: an engine timeout or the token cap is
    ``timeout`` (the role ran out of its budget), nothing written ``empty_output``, a parsed output the
    task calls illegal ``constraint_violated``, anything else the parser refused ``invalid_output``."""
    if reason.startswith("illegal"):
        return "constraint_violated"
    if done.finish in ("timeout", "error", "length"):
        return "timeout"
    return "invalid_output" if done.text.strip() else "empty_output"

