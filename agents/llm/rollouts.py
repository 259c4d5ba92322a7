"""The rollouts skill evolution reads from LLM agents (agents/llm/edit_pass.py): B worlds played in lockstep, as
(question, G rollouts) groups of traces (skills/workflow.py), from a training round or from a frozen probe.

A training round leaves the market's trace (market/model.py ``RoundTrace``: what each step observed, what was
solved); a frozen run keeps none, so a probe plays a :class:`Watched` world that keeps its observations. Either
way the policy recorded, per step, each acting world's row, status, output and the skills its prompt carried.
"""

from __future__ import annotations

import numpy as np

from skills import Rollout, Trace


class Watched:
    """A world whose observations are kept: a frozen run keeps no trace, and a probe's rollouts read what each step
    observed."""

    def __init__(self, world):
        self.world, self.seen = world, []

    def observe(self) -> np.ndarray:
        obs = self.world.observe()
        self.seen.append(obs)
        return obs

    def __getattr__(self, name):
        return getattr(self.world, name)


class StepTrace(Trace):
    """A rollout's trace plus the observation each step acted on (``states``: what an edit's rewrite reads)."""

    def __init__(self, reference: str = ""):
        super().__init__(reference)
        self.states: list[np.ndarray] = []


def groups(policy, steps: list[dict], obs: np.ndarray, solved: np.ndarray, ids: np.ndarray, G: int) -> list[tuple]:
    """(question, G rollouts) groups of B worlds played in lockstep: ``steps`` the policy's record per step (world ->
    row, status, output, skills used), ``obs`` [T, B, F] what each step observed, ``solved`` [B], ``ids`` the rows'
    agent ids; G consecutive worlds on one question make a group (others are left out)."""
    B = solved.size
    questions, answers = zip(*(policy.task.question(obs[0, b]) for b in range(B)))
    traces = [StepTrace(reference=answers[b]) for b in range(B)]
    for t, step in enumerate(steps):
        for b, (row, status, output, used) in sorted(step.items()):
            last = [len(traces[b].states) - 1] if traces[b].states else []
            traces[b].invoke(policy.roles[policy.role[row]].name, status, str(int(ids[row])), used, last, output)
            traces[b].states.append(obs[t, b])
    out = []
    for start in range(0, B - G + 1, G):
        if len(set(questions[start:start + G])) == 1:
            out.append((questions[start], [Rollout(float(solved[b]), traces[b]) for b in range(start, start + G)]))
    return out


def decode(reward: float, trace_state: dict, states: list) -> Rollout:
    """A checkpointed rollout (the evolver's ``state_dict`` encodes reward, trace state and states)."""
    trace = StepTrace()
    trace.load_state_dict(trace_state)
    trace.states = [np.asarray(s) for s in states]
    return Rollout(reward, trace)
