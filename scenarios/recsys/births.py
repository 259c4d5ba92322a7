"""Births: new skills bred from the library's own clauses, beyond what the catalogue's defaults would add.

The credit's edits change or remove what the library holds, and its ``add`` draws an operator at its default
parameters. Neither can reach a second copy of a good term at another weight, or a rerank step for only the
requests one segment makes. A birth does: each edit pass (``recsys.births`` of them, after the credit's edits and
the floor's, outside the credit's budget) writes a new skill whose one clause is

* a **mutation** of one current clause (:func:`scenarios.recsys.rules.mutate`: a parameter or the weight doubled or
  halved, a condition's threshold moved), and for a rerank step, half the time, narrowed to the requests on one
  side of a feature's median (the requests a clause applies to); or
* a **recombination** of two clauses of one role: the first's operator, each parameter from either parent (the
  weight included), and for a rerank step the condition of either.

A recall or rank birth weighs a small share of its role's summed weight (:data:`SHARES`), and is always unconditional: while a weighted role holds a conditional skill the floor waits
(scenarios/recsys/edits.py says why), so a conditional birth there would stop the floor for the rest of the run.
No birth copies an operator an edit may never draw (ops.HARM, ops.LEARNED). A birth is an ``add`` through the
same gate as every edit (it must improve validation NDCG with evidence), then the credit's to judge like any skill.

The diagnosis of a birth names its parents (``skill``, ``partner``), so :func:`lineage` draws an edge from each
parent version to the born skill's first version on top of the library's lineage (skills/lineage.py), and
:func:`carried` measures on the test users what each surviving born skill adds to the final library (the final
library against it without that skill, paired by user): which added skill carried which gain.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import networkx as nx
import numpy as np

from scenarios.recsys import ops, rules
from skills import Diagnosis, Edit, SkillLibrary
from skills.lineage import skill_graph

BIRTH = "birth"
"""The failure a birth's diagnosis names (the writer's own: nothing was blamed)."""
WEIGHTED = ("recall", "rank")
SHARES = (0.02, 0.05, 0.1, 0.2)
"""A born recall or rank term's weight, as a share of its role's summed weight. The weights are relative (the rank
sums z-scored terms, the recall merges weighted sources), and the start's tuned blend holds most of each role's
weight: a copy at its parent's weight is either lost beside the blend (a hand-made term's weight) or a second copy
of a tuned term. A small share asks the question a birth can answer: does a little of this term help the blend?"""
TRIES = 10
"""Draws per birth before it gives up (each must differ from every current rule and every refused birth)."""


def _breedable(skill) -> list[rules.Clause]:
    if skill.role not in ops.CATALOGUE or not skill.rule:
        return []
    banned = set(ops.HARM.get(skill.role, {})) | set(ops.LEARNED.get(skill.role, {}))
    return [c for c in rules.parse(skill.rule, skill.role) if c.operator not in banned]


def _clip(clause: rules.Clause, role: str) -> rules.Clause:
    spec = ops.CATALOGUE[role][clause.operator].params
    return rules.Clause(clause.condition, clause.operator,
                        tuple((k, float(np.clip(round(v) if spec[k][3] else v, spec[k][1], spec[k][2])))
                              for k, v in clause.params))


def child(pool: list[tuple], rng: np.random.Generator, medians: dict[str, int],
          totals: dict[str, float]) -> tuple[str, tuple, rules.Clause]:
    """One new clause from ``pool`` ([(skill, clause)]): (kind, parent skills, clause); ``totals``: each weighted
    role's summed weight (a born recall or rank term weighs one of :data:`SHARES` of it)."""
    a_skill, a = pool[int(rng.integers(len(pool)))]
    role = a_skill.role
    mates = [(s, c) for s, c in pool if s.role == role and (s.name, c) != (a_skill.name, a)]
    if mates and rng.random() < 0.5:
        b_skill, b = mates[int(rng.integers(len(mates)))]
        other = dict(b.params)
        params = tuple((k, other[k] if k in other and rng.random() < 0.5 else v) for k, v in a.params)
        condition = b.condition if role not in WEIGHTED and rng.random() < 0.5 else a.condition
        kind, parents, clause = "recombine", (a_skill, b_skill), rules.Clause(condition, a.operator, params)
    else:
        clause = rules.mutate([a], role, rng)[0]
        if role not in WEIGHTED and rng.random() < 0.5:
            feature = rules.FEATURES[int(rng.integers(len(rules.FEATURES)))]
            clause = rules.Clause(f"{feature} {'>=' if rng.random() < 0.5 else '<'} {medians[feature]}",
                                  clause.operator, clause.params)
        kind, parents = "mutate", (a_skill,)
    if role in WEIGHTED:
        share = SHARES[int(rng.integers(len(SHARES)))] * totals[role]
        clause = rules.Clause("always", clause.operator,
                              tuple((k, share if k == "weight" else v) for k, v in clause.params))
    return kind, parents, _clip(clause, role)


class Births:
    """Proposes a pass's births and writes their edits (the loop's ``propose`` hands a diagnosis back to ``write``)."""

    def __init__(self, library: SkillLibrary, count: int, medians: dict[str, int], agents: dict[str, str]):
        self.library, self.count, self.medians, self.agents = library, count, medians, agents
        self._pending: dict[Diagnosis, Edit] = {}

    def propose(self, rng: np.random.Generator) -> list[Diagnosis]:
        """Up to ``count`` birth diagnoses, each with its edit written and kept for :meth:`write`."""
        if self.count <= 0:
            return []
        versions = self.library.versions()
        current = self.library.current()
        pool = [(s, c) for s in current for c in _breedable(s)]
        if not pool:
            return []
        totals = {role: sum(c.param("weight") for s in current if s.role == role for c in _breedable(s))
                  for role in WEIGHTED}
        taken = {(s.role, s.rule) for s in current}
        taken |= {(v.role, v.rule) for v in versions if v.status == "rejected" and v.name in born_names(self.library)}
        names = {v.name for v in versions}
        out = []
        for _ in range(self.count):
            for _ in range(TRIES):
                kind, parents, clause = child(pool, rng, self.medians, totals)
                role = parents[0].role
                if (role, clause.text()) not in taken:
                    break
            else:
                continue
            taken.add((role, clause.text()))
            n = 1 + sum(name.startswith(f"{role}-born-") for name in names)
            name = f"{role}-born-{n}"
            names.add(name)
            labels = [p.label for p in parents]
            d = Diagnosis(self.agents.get(role, role), labels[0], BIRTH, None, "add", role,
                          labels[1] if len(labels) > 1 else None, f"{kind} of {' x '.join(labels)}")
            self._pending[d] = Edit("add", name, role=role, diagnosis=asdict(d), rule=clause.text(),
                                    description=f"Born by {kind} of {' and '.join(labels)}.",
                                    body=rules.body([clause], role))
            out.append(d)
        return out

    def write(self, d: Diagnosis) -> Edit | None:
        return self._pending.pop(d, None)


def _birth_edits(library: SkillLibrary) -> dict[int, dict]:
    """{edit id: its diagnosis} of the library's birth edits."""
    out = {}
    for i, e in library.edits().items():
        note = json.loads(e.diagnosis or "{}")
        if note.get("failure") == BIRTH:
            out[i] = note
    return out


def born_names(library: SkillLibrary) -> set[str]:
    """Names first written by a birth edit (accepted or not)."""
    births = _birth_edits(library)
    return {v.name for v in library.versions() if v.version == 1 and v.edit_id in births}


def lineage(library: SkillLibrary) -> nx.DiGraph:
    """The library's lineage (skills/lineage.py) with an edge, ``operator = "birth"``, from each parent version of a
    born skill to its first version (recombination: two parents)."""
    g = skill_graph(library)
    births = _birth_edits(library)
    for v in library.versions():
        if v.version == 1 and v.edit_id in births:
            note = births[v.edit_id]
            for parent in filter(None, (note.get("skill"), note.get("partner"))):
                if parent in g:
                    g.add_edge(parent, v.label, operator=BIRTH, merge=False, kind=note.get("rationale", ""))
    return g


def carried(library: SkillLibrary, score) -> list[dict]:
    """Each current skill descending from a birth: its rule, how it was born (parents), and what it adds to the final
    library on the held-out users: ``score(skills) -> [n]`` per user, paired (mean and standard error)."""
    g = lineage(library)
    current = library.current()
    full = np.asarray(score(current), dtype=float)
    out = []
    for s in current:
        first = f"{s.name}@1"
        if first not in g or not any(g.edges[p, first].get("operator") == BIRTH for p in g.predecessors(first)):
            continue
        d = full - np.asarray(score([x for x in current if x.name != s.name]), dtype=float)
        out.append({"skill": s.label, "rule": s.rule, "born": g.edges[next(iter(g.predecessors(first))), first]["kind"],
                    "gain": round(float(d.mean()), 6),
                    "se": round(float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0, 6)})
    return out
