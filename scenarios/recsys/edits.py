"""The new text of an edit: what a diagnosis (or a random draw) turns into, for rule skills.

The diagnosis says which skill and which action (skills/editor.py); this
module writes the content, the part an LLM rewriter would write for text
skills:

* ``revise``  one random mutation of the rule (:func:`scenarios.recsys.rules.mutate`),
              body rewritten from it;
* ``add``     a new skill for the role: an operator of ``operators`` (:func:`scenarios.recsys.ops.addable`)
              the role does not use yet (else any of them), default parameters, applied always;
* ``prune``   nothing to write;
* ``merge``   the two rules' clauses together (the library joins the bodies);
* ``reweight`` (the floor) the weight of a role's unconditional terms moved one step of :data:`SHARES` towards
              the tuned baseline's skill of that role (revises that rescale every term, the role's total kept), or
              the baseline alone (the role's other unconditional terms pruned).

Why the reweight: a library that holds a tuned baseline should be able to become it. Edits that double or halve
one weight at a time rarely get there, and a run's prunes (each allowed one standard error by the gate's rule)
can drift below it. The writer proposes the share step of each role in a pass whose credit edits changed nothing,
and the baseline alone in the run's last edit pass (:func:`floor`; scenarios/recsys/evolve.py says why), and they face the same gate as every edit: a share step must
improve validation NDCG with evidence; the baseline alone is a prune, so it may cost up to one standard error
(between two libraries the validation users cannot tell apart, the one that is the tuned baseline). A conditional skill (a rule for a
segment: blame's business) is never touched, and while a weighted role holds one every reweight waits (floor):
a rank term's weight against the z-scored sum depends on how the rest is mixed (one strong term spreads more
than a blend of weak ones), so a reweight would be judged on how much it drowns the conditional skill, not on
the baseline, and any reweight changes the credit's contrast on a skill that is still the credit's to judge (on
the zoo's development worlds the rank's steps passed the gate by drowning a planted noise term that GRSE then
kept). A candidate the gate refused is not proposed again
until the library changes (its rejected versions are in the library, so a resumed run skips it as well).

Traces name skill versions (``name@version``); edits name skills.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import numpy as np

from scenarios.recsys import ops, rules
from skills import Diagnosis, Edit, SkillLibrary, to_edit
from skills.library import current_of

SHARES = (0.5, 0.7, 0.85, 0.95, 0.99)
"""A tuned baseline's shares of its role's summed weight: the start's choices (seeds.combined) and the steps of
the reweight edit's steps (its other candidate is the baseline alone)."""
REWEIGHT = "reweight"
"""The failure a floor diagnosis names (the edit writer's own, not the diagnoser's: nothing was blamed)."""
WEIGHTED = ("recall", "rank")


def name_of(ref: str) -> str:
    return ref.partition("@")[0]


def propose(diagnosis: Diagnosis, library: SkillLibrary, rng: np.random.Generator,
            operators: dict[str, tuple[str, ...]], baseline: frozenset = frozenset()) -> Edit | list[Edit] | None:
    """The edit a diagnosis asks for (a reweight: its edits, gated as one), or None when its target is not a current
    skill (or role) any more; ``operators``: what an add may draw, per role; ``baseline``: the tuned baseline's
    skill names (a reweight's target)."""
    current = {s.name: s for s in library.current()}
    if diagnosis.failure == REWEIGHT:
        return reweight(diagnosis, current, baseline)
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


def weight(skill) -> float:
    return sum(c.param("weight") for c in rules.parse(skill.rule, skill.role))


def reshare(skills: list, baseline, share: float) -> dict[str, str]:
    """{name: rule} of one role's ``skills`` (each with name, role, rule) with every weight scaled so that those named
    in ``baseline`` hold ``share`` of the summed weight, the sum kept; {} where either side weighs nothing."""
    total = {s.name: weight(s) for s in skills}
    mine = sum(w for n, w in total.items() if n in baseline)
    rest = sum(total.values()) - mine
    if rest <= 0 or mine <= 0:
        return {}
    out = {}
    for s in skills:
        scale = share * (mine + rest) / mine if s.name in baseline else (1 - share) * (mine + rest) / rest
        clauses = [rules.Clause(c.condition, c.operator, tuple((k, round(v * scale, 4) if k == "weight" else v)
                                                               for k, v in c.params)) for c in rules.parse(s.rule, s.role)]
        out[s.name] = rules.render(clauses)
    return out


def _terms(current: dict, role: str) -> list:
    """The role's unconditional weighted skills: what a reweight moves weight among."""
    return [s for s in current.values() if s.role == role and s.rule
            and all(c.condition == "always" for c in rules.parse(s.rule, role))]


def reweight(d: Diagnosis, current: dict, baseline) -> list[Edit] | None:
    """The reweight ``d`` asks for in role ``d.target``: a revise diagnosis, the next step of the baseline's share
    (:data:`SHARES`); a prune diagnosis, the baseline alone (the role's other unconditional terms pruned). None where
    the role holds no baseline skill beside other unconditional terms, or a conditional skill (its weight against
    the rest would change with them), or no step is left. One diagnosis for all its
    edits, so that the library records them as one candidate."""
    role, terms = d.target, _terms(current, d.target)
    mine = [s for s in terms if s.name in baseline]
    rest = [s for s in terms if s.name not in baseline]
    unconditional = {s.name for s in terms}
    if not mine or not rest or any(s.role == role and s.rule and s.name not in unconditional for s in current.values()):
        return None
    total = sum(weight(s) for s in terms)
    share = sum(weight(s) for s in mine) / total if total > 0 else 0.0
    if d.action == "prune":
        note = asdict(replace(d, rationale=f"{role}: the tuned baseline alone (its share {share:.3g})"))
        return [Edit("prune", s.name, diagnosis=note) for s in rest]
    step = next((x for x in SHARES if x > share + 1e-3), None)
    if step is None:
        return None
    note = asdict(replace(d, rationale=f"{role}: the tuned baseline's share {share:.3g} -> {step:g}"))
    rules_ = reshare(terms, baseline, step)
    return [Edit("revise", s.name, diagnosis=note, rule=r, body=rules.body(rules.parse(r, role), role))
            for s in terms if (r := rules_.get(s.name, s.rule)) != s.rule] or None


def floor(library: SkillLibrary, baseline, agents: dict[str, str], step: bool = True,
          alone: bool = True) -> list[Diagnosis]:
    """Per weighted role, the reweights asked for (``step``: the next share step; ``alone``: the baseline alone) that
    can be written and that the gate has not refused on this library already (a refused candidate left a rejected
    version, written by a reweight of the same kind, of the current version of its first target, with the same rule). None at all while a weighted
    role holds a conditional skill: moving any weight changes which requests the rollouts serve well, and so the
    credit's contrast on that skill, which is still the credit's to judge (at toy size, a recall reweight beside
    planted rank rules turned one GRSE prune into a revise)."""
    versions = library.versions()
    current = {s.name: s for s in current_of(versions)}
    if any(s.role in WEIGHTED and s.rule and not _terms({s.name: s}, s.role) for s in current.values()):
        return []
    edits = library.edits()
    refused = {(v.parent_id, v.rule, edits[v.edit_id].operator) for v in versions if v.status == "rejected"
               and v.edit_id in edits and json.loads(edits[v.edit_id].diagnosis or "{}").get("failure") == REWEIGHT}
    out = []
    for role in WEIGHTED:
        for action in ("revise",) * step + ("prune",) * alone:
            d = Diagnosis(agents.get(role, role), role, REWEIGHT, None, action, role, None, "")
            first = (reweight(d, current, baseline) or [None])[0]
            if first is not None and (current[first.target].id, first.rule or current[first.target].rule,
                                      first.operator) not in refused:
                out.append(d)
    return out


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
