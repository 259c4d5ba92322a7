"""Which line a failed output imitates: blame that group-relative credit cannot split, moved to the line it belongs to.

Group-relative credit (skills/credit.py) is linear in each line's presence. Where a failure needs two lines
together (a small model misreads only when a correct worked example stands before a wrong one), a rollout that
lacked either line succeeds, so both get the same kind of negative credit and which is worse in a run is the
draws'. The gate cannot tell them apart either: pruning either one fixes the library's behaviour. What tells
them apart is what the failed outputs look like, so a scenario whose model can score text supplies a reader
(``read``, skills/loop.py ``World.imitation``) that says, per failed step and per line its prompt carried::

    margin(lines) = log P(failed output | lines) - log P(correct output | lines)
    imitation_l   = margin({l}) - margin({})

the pull of line l, shown alone, towards the output the step wrote rather than the one it should have written,
against no line at all. A wrong worked example pulls its way, a correct one away: on the planted-line world
(tests/skills/planted_world.py, SmolLM2-135M, 8 misread messages) the off-by-one example pulls +4.9 to +6.7 nats
on every one, the two correct examples -2.6 to +0.9 (mean -1.2) and -2.9 to -0.9 (mean -1.9); the mean over a
line's failed steps is what counts. A step whose output was right, or that the reader cannot score, reads as no step.

:func:`reattribute` reads up to ``STEPS`` failed steps of each blamed line (the lowest-advantage rollouts of its
agent that carried it, below their group's mean) and keeps the blame where the failed outputs imitate the blamed
line (mean imitation > 0), or where they imitate no line it was carried with; otherwise the blame moves to the line
they imitate most (the case becomes that column's, with the lower of the two credits: the failure it carries is
the same). Every moved blame is counted; so are lines the reader could not read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from skills.credit import Batch, GroupCredit
from skills.editor import Case, case_of
from skills.library import SkillLibrary
from skills.workflow import Trace

Read = Callable[[list[tuple[Trace, int]]], list[dict[str, float]]]
"""[(trace, step)] -> per step, {line carried at the step: imitation} ({} where the step's output was right or
could not be scored)."""
STEPS = 4
"""Failed steps read per blamed line (each costs one scoring pass per line its prompt carried, plus one)."""


@dataclass
class Reattributed:
    cases: list[Case]
    moved: int = 0  # blamed lines whose blame moved to the line the failed outputs imitate
    unread: int = 0  # blamed lines without a failed step the reader could score: their blame stays


def failed_steps(batch: Batch, credit: GroupCredit, k: int) -> list[tuple[Trace, int]]:
    """Up to STEPS steps of column k's agent that carried its line, in rollouts below their group's mean advantage,
    lowest advantage first."""
    agent, name = batch.keys[k]
    below = (batch.usage[:, :, k] > 0) & (credit.advantage < 0)
    out = []
    for flat in np.argsort(np.where(below, credit.advantage, np.inf), axis=None, kind="stable")[: below.sum()]:
        trace = batch.traces[flat // below.shape[1]][flat % below.shape[1]]
        if trace is None:
            continue
        nodes = trace.graph.nodes
        out += [(trace, n) for n in nodes
                if name in nodes[n]["skills"] and (nodes[n]["agent"] or nodes[n]["role"]) == agent]
        if len(out) >= STEPS:
            break
    return out[:STEPS]


def reattribute(found: list[Case], batch: Batch, credit: GroupCredit, library: SkillLibrary,
                read: Read) -> Reattributed:
    """The blamed cases, each kept or moved to the line its failed outputs imitate (the module's docstring); a line
    blamed twice is diagnosed once, at its first place."""
    column = {key: k for k, key in enumerate(batch.keys)}
    current = {s.name for s in library.current()}
    steps = [failed_steps(batch, credit, column[(c.agent, c.skill.name)]) for c in found]
    flat = [s for per in steps for s in per]
    scores = iter(read(flat) if flat else [])
    out = Reattributed([])
    for case, per in zip(found, steps):
        pulls: dict[str, list[float]] = {}
        for _ in per:
            for line, pull in next(scores).items():
                pulls.setdefault(line, []).append(pull)
        mean = {line: float(np.mean(v)) for line, v in pulls.items()}
        if case.skill.name not in mean:
            out.unread += 1
        else:
            top = max(mean, key=mean.get)
            if mean[case.skill.name] <= 0 < mean[top] and top in current and (case.agent, top) in column:
                moved = case_of(batch, credit, library, column[(case.agent, top)])
                case = replace(moved, credit=min(moved.credit, case.credit))
                out.moved += 1
        if all(c.skill.name != case.skill.name or c.agent != case.agent for c in out.cases):
            out.cases.append(case)
    return out
