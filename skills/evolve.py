"""Which skills an edit pass changes: credit over the rollouts, then one diagnosis per blamed skill.

The one blame step every scenario with a skill library runs (recsys on rule clauses,
agents/llm/edit_pass.py on LLM agents' skill lines), by ``skills.credit``:

* ``grse``      group-relative credit (skills/credit.py): the joint contrast of what each agent
                did in the higher- and lower-advantage rollouts of the same question;
* ``presence``  the baseline: the mean reward of the rollouts a skill ran in, centred on the mean
                reward and divided by its std (so that the same diagnosis thresholds read it);
* ``memory_shapley`` each skill's Shapley value from subset replays (skills/shapley.py), given as ``utility``.

Only current skills can be blamed (a rollout may have run a version an accepted edit retired since).
The diagnoser (skills/editor.py) names each blamed skill's failure and edit; a diagnosis it cannot
give (None: an LLM's malformed verdict) goes to ``fallback`` when there is one, and each target is
edited at most once per pass. Given a reader of what failed outputs imitate (``read``, skills/imitation.py),
the blamed lines are read first: a blame the failed outputs do not bear out moves to the line they imitate.
``random`` and ``none`` have no blame step: the caller draws its random
edits (what the gate alone buys) or makes none.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from skills.config import SkillsConfig
from skills.credit import batch, group_relative_credit, presence_credit, relative
from skills.editor import Case, Diagnoser, Diagnosis, cases
from skills.imitation import Read, reattribute
from skills.library import SkillLibrary
from skills.shapley import Utility

BLAMING = ("grse", "presence", "memory_shapley")


@dataclass
class Blame:
    diagnoses: list[Diagnosis]
    cases: list[Case] = field(default_factory=list)  # the evidence of each diagnosis, aligned
    by_diagnoser: int = 0  # diagnoses the diagnoser gave
    by_fallback: int = 0  # diagnoses the fallback gave in its place
    moved: int = 0  # blamed lines whose blame moved to the line the failed outputs imitate (skills/imitation.py)
    unread: int = 0  # blamed lines the imitation reader had no failed step of


def blame(groups: list, credit: str, library: SkillLibrary, skills: SkillsConfig, diagnoser: Diagnoser,
          fallback: Diagnoser | None = None, utility: Utility | None = None, read: Read | None = None) -> Blame:
    """``groups``: (question, [Rollout] * G) pairs (skills/credit.py), G = agents.group, the same for every group
    (the world grouped them); at most ``skills.max_edits`` diagnoses, most negative credit first; ``utility``: the
    skills' Shapley values (``memory_shapley``, skills/shapley.py); ``read``: what failed outputs imitate
    (skills/imitation.py)."""
    if credit not in BLAMING:
        raise ValueError(f"skills.credit = {credit!r} has no blame step (expected one of {BLAMING})")
    if not groups:
        return Blame([])
    credit_cfg = skills.credit_config(group=len(groups[0][1]))
    b = batch(groups, credit_cfg)
    if not b.keys:
        return Blame([])
    gc = group_relative_credit(b.rewards, b.usage, b.questions, credit_cfg, b.acted)
    if credit == "presence":
        r = b.rewards
        centred = relative(presence_credit(r, b.usage), r, credit_cfg.eps)
        gc = replace(gc, credit=np.nan_to_num(centred))
    if credit == "memory_shapley":
        gc = replace(gc, credit=np.array([utility.values.get(name, 0.0) for _, name in b.keys]) / utility.scale,
                     support=np.full(len(b.keys), utility.questions))
    current = {s.name for s in library.current()}
    gc = replace(gc, credit=np.where([name in current for _, name in b.keys], gc.credit, 0.0))
    found = cases(b, gc, library, skills.diagnosis_config())
    out, targets = Blame([]), set()
    if read is not None and found:
        moved = reattribute(found, b, gc, library, read)
        found, out.moved, out.unread = moved.cases, moved.moved, moved.unread
    given = diagnoser.diagnose(found)
    for case, d in zip(found, given):
        if d is None and fallback is not None:
            d = fallback.diagnose([case])[0]
            out.by_fallback += d is not None
        else:
            out.by_diagnoser += d is not None
        if d is not None and d.target not in targets:
            targets.add(d.target)
            out.diagnoses.append(d)
            out.cases.append(case)
    out.diagnoses, out.cases = out.diagnoses[: skills.max_edits], out.cases[: skills.max_edits]
    return out
