"""The new text of an edit: what a diagnosis (or a random draw) turns into, for rule skills.

The diagnosis says which skill and which action (skills/editor.py); this
module writes the content, the part an LLM rewriter would write for text
skills:

* ``revise``  one random mutation of the rule (:func:`scenarios.recsys.rules.mutate`),
              body rewritten from it;
* ``add``     a new skill for the role: an operator of ``operators`` (:func:`scenarios.recsys.ops.addable`)
              the role does not use yet (else any of them), default parameters, applied always;
* ``prune``   nothing to write;
* ``merge``   the two rules' clauses together (the library joins the bodies).

Traces name skill versions (``name@version``); edits name skills.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from scenarios.recsys import ops, rules
from skills import Diagnosis, Edit, SkillLibrary, to_edit


def name_of(ref: str) -> str:
    return ref.partition("@")[0]


def propose(diagnosis: Diagnosis, library: SkillLibrary, rng: np.random.Generator,
            operators: dict[str, tuple[str, ...]]) -> Edit | None:
    """The edit a diagnosis asks for, or None when its target is not a current skill (or role) any more;
    ``operators``: what an add may draw, per role."""
    current = {s.name: s for s in library.current()}
    target = name_of(diagnosis.target)
    d = replace(diagnosis, target=target, partner=name_of(diagnosis.partner) if diagnosis.partner else None)
    if d.action == "add":
        return add(d, current, rng, operators[target]) if target in ops.CATALOGUE else None
    if target not in current:
        return None
    skill = current[target]
    if d.action == "prune":
        return to_edit(d)
    if d.action == "merge":
        if d.partner not in current or d.partner == target:
            return None
        return to_edit(d, rule=f"{skill.rule}\n{current[d.partner].rule}")
    clauses = rules.parse(skill.rule, skill.role)
    changed = rules.mutate(clauses, skill.role, rng)
    if changed == clauses:
        return None
    return to_edit(d, rule=rules.render(changed), body=rules.body(changed, skill.role))


def add(d: Diagnosis, current: dict, rng: np.random.Generator, operators: tuple[str, ...]) -> Edit:
    role = d.target
    used = {c.operator for s in current.values() if s.role == role and s.rule for c in rules.parse(s.rule, role)}
    fresh = [op for op in operators if op not in used]
    operator = fresh[int(rng.integers(len(fresh)))] if fresh else operators[int(rng.integers(len(operators)))]
    spec = ops.CATALOGUE[role][operator]
    clause = rules.Clause("always", operator, tuple((k, float(v[0])) for k, v in spec.params.items()))
    names = {v.name for v in current.values()}
    name, n = f"{role}-{operator.replace('_', '-')}", 2
    while name in names:
        name, n = f"{role}-{operator.replace('_', '-')}-{n}", n + 1
    return to_edit(d, name=name, description=f"Added for {role}: {operator}.", body=rules.body([clause], role),
                   rule=rules.render([clause]))


def random_diagnoses(library: SkillLibrary, n: int, agents: dict[str, str],
                     rng: np.random.Generator) -> list[Diagnosis]:
    """``n`` random (skill, action) pairs: revise 1/2, prune 1/4, add to the skill's role 1/4."""
    current = [s for s in library.current() if s.role in ops.CATALOGUE]
    out = []
    for i in rng.permutation(len(current))[:n]:
        s = current[i]
        action = ("revise", "revise", "prune", "add")[int(rng.integers(4))]
        out.append(Diagnosis(agents.get(s.role, s.role), s.name, "random", None, action,
                             s.role if action == "add" else s.name, None, "a random edit (baseline)"))
    return out
