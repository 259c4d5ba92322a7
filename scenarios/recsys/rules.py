"""The rule format of a recsys skill: when it applies, which operator it runs, with which parameters.

A skill's ``rule`` is one clause per line::

    rule      := clause ("\\n" clause)*
    clause    := condition "->" operator "(" [param ("," param)*] ")"
    param     := NAME "=" NUMBER
    condition := "always" | FEATURE OP INTEGER ("and" FEATURE OP INTEGER)*     (agents/rules.py)

for example ``mainstream >= 40 -> popularity(weight=0.3)``. The condition is the
project's rule DSL, read by :mod:`agents.rules` over the request's features
(:data:`FEATURES`, integers computed per user by :func:`features`); the
operator and its parameters come from the role's catalogue
(:mod:`scenarios.recsys.ops`). A merged skill holds the clauses of both parents.

Every skill also has a ``body``, the natural-language instruction an LLM
reads; :func:`body` writes it from the clauses, so the rule and the body never
disagree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from agents.rules import RuleSpace, RuleSyntaxError, compile_into, empty_rules, evaluate
from agents.rules import parse as parse_condition
from scenarios.recsys import ops
from scenarios.recsys.data import Split

FEATURES = ("history", "genres", "mainstream", "novelty")
"""history: items in the user's history; genres: distinct genres in it; mainstream: percent of
its items among the catalogue's 10% most popular; novelty: percent of its last 10 items that were
at most ``fresh_days`` old when consumed."""
CALL = re.compile(r"^\s*([a-z_]+)\s*\(\s*(.*?)\s*\)\s*$")
PARAM = re.compile(r"^\s*([a-z_]+)\s*=\s*(-?\d+(?:\.\d+)?)\s*$")


@dataclass(frozen=True)
class Clause:
    condition: str  # "always" or DSL terms
    operator: str
    params: tuple[tuple[str, float], ...]  # every parameter of the operator, catalogue order

    def param(self, name: str) -> float:
        return dict(self.params)[name]

    def text(self) -> str:
        args = ", ".join(f"{k}={_number(v)}" for k, v in self.params)
        return f"{self.condition} -> {self.operator}({args})"


def space(role: str) -> RuleSpace:
    """The DSL space a clause's condition is read in (actions: the role's operators)."""
    return RuleSpace(features=FEATURES, low=(0, 0, 0, 0), high=(10_000, 64, 100, 100),
                     actions=tuple(ops.CATALOGUE[role]), max_terms=3)


def parse(rule: str, role: str) -> list[Clause]:
    """Rule text -> clauses, parameters filled with the catalogue's defaults and checked against its ranges."""
    if role not in ops.CATALOGUE:
        raise RuleSyntaxError(f"role {role!r}: expected one of {tuple(ops.CATALOGUE)}")
    clauses = []
    for line in (rule or "").strip().splitlines():
        if not line.strip():
            continue
        condition, arrow, call = line.partition("->")
        match = CALL.match(call)
        if not arrow or not match:
            raise RuleSyntaxError(f"clause {line.strip()!r}: expected CONDITION -> OPERATOR(NAME=NUMBER, ...)")
        name, args = match.groups()
        if name not in ops.CATALOGUE[role]:
            raise RuleSyntaxError(f"clause {line.strip()!r}: {name!r} is not a {role} operator "
                                  f"({', '.join(ops.CATALOGUE[role])})")
        parse_condition(f"{condition.strip()} -> {name}", space(role))  # raises on a bad condition
        spec = ops.CATALOGUE[role][name]
        given = {}
        for part in filter(str.strip, args.split(",")):
            p = PARAM.match(part)
            if not p or p.group(1) not in spec.params:
                raise RuleSyntaxError(f"clause {line.strip()!r}: cannot read parameter {part.strip()!r} "
                                      f"(known: {', '.join(spec.params) or 'none'})")
            given[p.group(1)] = float(p.group(2))
        params = []
        for key, (default, low, high, integer) in spec.params.items():
            value = given.get(key, default)
            if not low <= value <= high:
                raise RuleSyntaxError(f"clause {line.strip()!r}: {key}={_number(value)} outside [{low}, {high}]")
            params.append((key, float(round(value)) if integer else value))
        clauses.append(Clause(" ".join(condition.split()), name, tuple(params)))
    if not clauses:
        raise RuleSyntaxError(f"rule {rule!r}: no clause")
    return clauses


def render(clauses: list[Clause]) -> str:
    return "\n".join(c.text() for c in clauses)


def body(clauses: list[Clause], role: str) -> str:
    """The instruction an LLM reads: one sentence per clause, from the catalogue's templates."""
    lines = []
    for c in clauses:
        when = "For every request" if c.condition == "always" else f"When {_condition_words(c.condition)}"
        lines.append(f"{when}: {ops.CATALOGUE[role][c.operator].describe.format(**dict(c.params))}")
    return "\n".join(lines) + "\n"


def mutate(clauses: list[Clause], role: str, rng: np.random.Generator) -> list[Clause]:
    """One random change: scale a parameter by 2 or 1/2 (integers: at least +-1), or a condition's
    threshold by 1.5 or 1/1.5, or drop a condition; always a different rule."""
    for _ in range(20):
        i = int(rng.integers(len(clauses)))
        c = clauses[i]
        spec = ops.CATALOGUE[role][c.operator]
        terms = [] if c.condition == "always" else c.condition.split(" and ")
        if terms and rng.random() < 0.25:
            new = _mutate_condition(terms, rng)
            changed = Clause(new, c.operator, c.params)
        elif spec.params:
            key = list(spec.params)[int(rng.integers(len(spec.params)))]
            default, low, high, integer = spec.params[key]
            old = c.param(key)
            value = old * (2.0 if rng.random() < 0.5 else 0.5)
            if integer:
                value = round(value)
                if value == old:
                    value = old + (1 if rng.random() < 0.5 else -1)
            value = float(np.clip(value, low, high))
            changed = Clause(c.condition, c.operator, tuple((k, value if k == key else v) for k, v in c.params))
        else:
            continue
        if changed != c:
            return clauses[:i] + [changed] + clauses[i + 1:]
    return clauses


def _mutate_condition(terms: list[str], rng: np.random.Generator) -> str:
    j = int(rng.integers(len(terms)))
    if rng.random() < 0.3:
        rest = terms[:j] + terms[j + 1:]
        return " and ".join(rest) or "always"
    feature, op, value = terms[j].split()
    value = int(value)
    scaled = round(value * (1.5 if rng.random() < 0.5 else 1 / 1.5))
    terms = terms[:j] + [f"{feature} {op} {scaled if scaled != value else value + 1}"] + terms[j + 1:]
    return " and ".join(terms)


def holds(conditions: list[str], role: str, feats: np.ndarray) -> np.ndarray:
    """[B, C] bool: which of the C conditions hold for each of B requests ([B, F] features)."""
    sp = space(role)
    rules = empty_rules(len(conditions), sp.max_terms)
    first = sp.actions[0]
    for row, condition in enumerate(conditions):
        compile_into(rules, row, f"{condition} -> {first}", sp)
    return evaluate(rules, feats) if len(conditions) else np.zeros((feats.shape[0], 0), dtype=bool)


def features(data: Split, fresh_days: float) -> np.ndarray:
    """[U, F] integer request features (:data:`FEATURES`), from each user's history."""
    length = data.history_length
    owner = np.repeat(np.arange(data.n_users), length)
    genre = data.item_genre[data.hist_item]
    distinct = np.unique(owner * (data.n_genres + 1) + genre)
    genres = np.bincount(distinct // (data.n_genres + 1), minlength=data.n_users)
    pop = np.asarray(data.train.sum(0)).ravel()
    head = pop >= np.quantile(pop, 0.9)
    mainstream = np.bincount(owner, weights=head[data.hist_item], minlength=data.n_users) / np.maximum(length, 1)
    from_end = np.repeat(data.hist_ptr[1:], length) - 1 - np.arange(data.hist_item.size)
    last = from_end < 10
    fresh = (data.hist_time - data.item_release[data.hist_item]) <= fresh_days
    novelty = (np.bincount(owner, weights=last & fresh, minlength=data.n_users)
               / np.maximum(np.bincount(owner, weights=last, minlength=data.n_users), 1))
    return np.stack([length, genres, np.round(100 * mainstream), np.round(100 * novelty)], axis=1).astype(np.int64)


WORDS = {"history": "the user's history length", "genres": "the number of genres in the history",
         "mainstream": "the percent of mainstream items in the history",
         "novelty": "the percent of fresh items among the last ten"}


def _condition_words(condition: str) -> str:
    return " and ".join(f"{WORDS[f]} {op} {v}" for f, op, v in (t.split() for t in condition.split(" and ")))


def _number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"
