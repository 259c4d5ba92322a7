"""The rule DSL and its vectorized interpreter (the ``rule`` policy backend).

A rule is one line::

    rule      := condition "->" action
    condition := "always" | term ("and" term)*
    term      := FEATURE OP INTEGER          OP in  ==  !=  <  <=  >  >=

for example ``stage == 2 -> advance`` or ``prefix >= 3 and top_wrong == 1 -> unstack``.
Feature and action names come from the world (:class:`RuleSpace`).

Every agent's rule is compiled into rows of small integer arrays (feature,
operator, value per term; one action), so evaluating the conditions of all N
agents on B observations is a handful of numpy operations on [B, N, T]:
``sign(obs[feature] - value)`` indexes a 3-bit mask per operator (bit 0: below,
bit 1: equal, bit 2: above). Unused terms carry the all-true mask.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

import numpy as np

from market.kernels import kernel

OPS = {"<": 0b001, "<=": 0b011, "==": 0b010, "!=": 0b101, ">": 0b100, ">=": 0b110}
"""The comparison operators a rule's term may use, each a bit mask over (less, equal, greater): a term
``feature op value`` holds where the bit of how the observed feature compares to ``value`` is set."""
OP_NAMES = {mask: op for op, mask in OPS.items()}
ALWAYS = 0b111
FEATURE_DTYPE = np.int16
TERM = re.compile(r"^\s*([A-Za-z_]\w*)\s*(==|!=|<=|>=|<|>)\s*(-?\d{1,18})\s*$")  # 18 digits: fits int64


class RuleSyntaxError(ValueError):
    """A rule text that does not parse; the message names the offending part."""


@dataclass(frozen=True)
class RuleSpace:
    """What rules may talk about: the world's features (with inclusive bounds) and actions.

    Args:
        features: The observation's columns a rule may read, by name, in column order.
        low: Each feature's smallest value.
        high: Each feature's largest value.
        actions: The world's actions, by name, in index order (what ``-> action`` names).
        max_terms: The most terms (``feature op value``) one rule's condition may hold.
    """

    features: tuple[str, ...]
    low: tuple[int, ...]
    high: tuple[int, ...]
    actions: tuple[str, ...]
    max_terms: int = 3

    def __post_init__(self):
        if len(self.features) > np.iinfo(FEATURE_DTYPE).max:
            raise ValueError(f"{len(self.features)} features: a rule's feature index is an {FEATURE_DTYPE.__name__}")


@dataclass
class CompiledRules:
    """Struct-of-arrays rules, one row per agent."""

    feature: np.ndarray  # [N, T] int16: the feature's index (2 bytes a term: a million rules are held at once)
    op: np.ndarray  # [N, T] 3-bit operator mask (ALWAYS: unused term)
    value: np.ndarray  # [N, T] int
    action: np.ndarray  # [N] int


FIELDS = tuple(f.name for f in fields(CompiledRules))
"""The arrays a rule is made of: copying a rule copies these rows."""


def empty_rules(n: int, max_terms: int) -> CompiledRules:
    """``n`` unused rules. The [N, T] arrays are column-major: the compiled interpreter reads a term's column
    over every rule (agents/rules_kernel.py), and a rule's row is written only at its birth."""
    return CompiledRules(
        feature=np.zeros((n, max_terms), dtype=FEATURE_DTYPE, order="F"),
        op=np.full((n, max_terms), ALWAYS, dtype=np.uint8, order="F"),
        value=np.zeros((n, max_terms), dtype=np.int64, order="F"),
        action=np.zeros(n, dtype=np.int64),
    )


def parse(text: str, space: RuleSpace) -> tuple[list[tuple[int, int, int]], int]:
    """Rule text -> ([(feature, op mask, value)], action index)."""
    if "->" not in text:
        raise RuleSyntaxError(f"rule {text!r}: missing '->' between condition and action")
    condition, action = (part.strip() for part in text.split("->", 1))
    if action not in space.actions:
        raise RuleSyntaxError(f"rule {text!r}: unknown action {action!r}; expected one of {space.actions}")
    terms = []
    if condition != "always":
        for part in condition.split(" and "):
            match = TERM.match(part)
            if not match:
                raise RuleSyntaxError(f"rule {text!r}: cannot read term {part.strip()!r} (FEATURE OP INTEGER)")
            name, op, value = match.groups()
            if name not in space.features:
                raise RuleSyntaxError(f"rule {text!r}: unknown feature {name!r}; expected one of {space.features}")
            terms.append((space.features.index(name), OPS[op], int(value)))
    if len(terms) > space.max_terms:
        raise RuleSyntaxError(f"rule {text!r}: {len(terms)} terms, at most {space.max_terms}")
    return terms, space.actions.index(action)


def compile_into(rules: CompiledRules, row: int, text: str, space: RuleSpace) -> None:
    terms, action = parse(text, space)
    rules.op[row] = ALWAYS
    for t, (feature, op, value) in enumerate(terms):
        rules.feature[row, t], rules.op[row, t], rules.value[row, t] = feature, op, value
    rules.action[row] = action


def describe(rules: CompiledRules, row: int, space: RuleSpace) -> str:
    """Compiled row -> canonical rule text (``parse`` of it gives the same row back)."""
    terms = [
        f"{space.features[f]} {OP_NAMES[o]} {v}"
        for f, o, v in zip(rules.feature[row], rules.op[row], rules.value[row])
        if o != ALWAYS
    ]
    return f"{' and '.join(terms) or 'always'} -> {space.actions[rules.action[row]]}"


_SMALL = 1 << 10
"""(world, row) cells up to which :func:`evaluate` stays on numpy, every term of every world at once: there the
cost is numpy's per-call overhead, not the cells, and an economy this small never loads numba."""

_DISTINCT = 1 << 11
"""Rules from which the compiled path evaluates each distinct observation once. Finding the distinct rows costs
about as much as evaluating a world's row at a few hundred rules, so below this the search does not pay; at
thousands of rules one repeated state among the lockstep worlds pays for it."""


def evaluate(rules: CompiledRules, obs: np.ndarray) -> np.ndarray:
    """[B, F] observations -> [B, N] bool: which rules' conditions hold.

    A small economy evaluates all terms at once, on [B, N, T] arrays. A larger one takes one compiled
    pass (agents/rules_kernel.py), from ``_DISTINCT`` rules over each distinct observation once
    (lockstep worlds often share states).
    """
    if obs.shape[0] * rules.action.size <= _SMALL:
        x = obs[:, rules.feature]  # [B, N, T]
        sign = (x > rules.value).view(np.uint8) + (x >= rules.value).view(np.uint8)
        return (np.bitwise_and.reduce(rules.op >> sign, axis=2) & 1).view(bool)
    distinct, inverse = distinct_rows(obs) if rules.action.size >= _DISTINCT else (np.ascontiguousarray(obs), None)
    holds = np.empty((distinct.shape[0], rules.action.size), dtype=bool)
    kernel("agents.rules_kernel").evaluate(rules.feature, rules.op, rules.value, distinct, holds)
    return holds if distinct.shape[0] == obs.shape[0] else holds[inverse]  # all distinct: inverse is 0..B-1


def distinct_rows(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([U, F] each distinct row of ``obs`` once, in first-seen order; [B] each row's index among them).

    A dict over the rows' bytes: for the few worlds of a round it costs far less than ``np.unique(axis=0)``,
    which sorts, even for one world. Rows whose bytes
    differ but whose values compare equal (-0.0 and 0.0) are merely evaluated twice.
    """
    rows = np.ascontiguousarray(obs)
    if rows.shape[0] == 1:  # one world's row is the distinct set (0.5 us; the loop below takes 3.8)
        return rows, np.zeros(1, dtype=np.intp)
    buf, width = rows.tobytes(), rows.dtype.itemsize * rows.shape[1]  # slices of one buffer: no view per row
    index: dict[bytes, int] = {}  # a row's bytes -> its index among the distinct rows
    first, inverse = [], []
    for i in range(rows.shape[0]):
        k = index.setdefault(buf[i * width : (i + 1) * width], len(first))
        if k == len(first):
            first.append(i)
        inverse.append(k)
    return rows[first], np.array(inverse, dtype=np.intp)
