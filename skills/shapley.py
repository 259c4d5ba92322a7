r"""Memory-Shapley skill credit: each skill's utility is its Shapley contribution to correctness, by replays.

A library's skills (an LLM agent's lines, worked examples among them; a recsys rule's clauses) are a
*memory*: items a team consults. Group-relative credit (skills/credit.py) reads which rollouts used an item;
this method instead asks the world what each item is worth, by replaying the fixed validation problems with
subsets of the library (the evaluator the edit loop already gates with, skills/loop.py ``World.evaluate``)
and sharing the gain of the whole library among its items as a coalition game::

    v(S)    = mean_i evaluate(S, questions, seeds)_i                    correctness of the library subset S
    phi_k   = sum_{S subset N \ k} |S|! (n - |S| - 1)! / n!  (v(S + k) - v(S))        Shapley value of item k
    credit_k = phi_k / (std of every replayed score + eps)             in the advantage units blame reads

The values sum to v(N) - v(empty) (efficiency), an item that changes no outcome gets 0 (null player), and an
item that lowers correctness in the coalitions it joins gets a negative value even when it always rides along
with helpful ones (what presence-based credit misses). Up to ``exact_upto`` items every subset is replayed
(2^n coalitions); above it the values are estimated from ``samples`` random orders, each item credited with its
marginal gain over the items before it (Castro et al. 2009), coalitions cached so a subset is replayed once.
No gradients: the utilities choose which skills an edit pass blames (skills/evolve.py, ``skills.credit =
"memory_shapley"``), worst first, and the gate (skills/gate.py) decides as for every credit; and, with
``skills.shapley.retrieve`` = k, which k of its lines an LLM agent's prompt carries for the task at hand, the
memory's retrieval (:func:`retrieve`)::

    score(line) = |words(read) & words(line)| / |words(read) | words(line)| + weight x phi(line)

Each replay is a full evaluation of the validation problems, so a pass costs at most 2^n (exact) or
samples x n + 1 (sampled) evaluations; ``replays`` in the result counts them.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Callable, Hashable, Sequence

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass as config_dataclass

from market.strict import STRICT


@config_dataclass(config=STRICT)
class ShapleyConfig:
    samples: int = Field(8, ge=1)
    """Random orders of the items the Shapley values are estimated from when there are more than ``exact_upto``
    items (each order replays at most one new coalition per item)."""
    exact_upto: int = Field(4, ge=0, le=12)
    """Up to this many items every subset is replayed and the values are exact (2^n evaluations of the library)."""
    eps: float = Field(1e-6, gt=0)
    """Added to the replayed scores' std when the values are scaled to advantage units."""
    retrieve: int = Field(0, ge=0)
    """Most skill lines an LLM agent's acting prompt carries, retrieved by similarity to what it reads plus
    ``weight`` x the line's utility from the last pass (:func:`retrieve`); 0: every line it holds."""
    weight: float = Field(1.0, ge=0)
    """The utility's weight beside the similarity (word overlap, in [0, 1]) when lines are retrieved."""


@dataclass
class Utility:
    values: dict[Hashable, float]
    """Item -> its Shapley value, in units of the mean score."""
    empty: float  # v(empty)
    full: float  # v(all items)
    scale: float  # std of the per-question scores of every replayed coalition, pooled, + eps (a full library that
    # solves every question has no spread of its own: the coalitions' is what the values are differences of)
    replays: int  # distinct coalitions evaluated
    questions: int  # validation questions each replay scored: the evidence (``support``) behind every value


def shapley(items: Sequence[Hashable], value: Callable[[frozenset], float], cfg: ShapleyConfig,
            rng: np.random.Generator) -> tuple[dict[Hashable, float], int]:
    """Shapley values of ``items`` under the coalition value ``value`` (called once per distinct coalition), exact
    up to ``cfg.exact_upto`` items, else from ``cfg.samples`` random orders; and the number of coalitions valued."""
    cache: dict[frozenset, float] = {}

    def v(s: frozenset) -> float:
        if s not in cache:
            cache[s] = float(value(s))
        return cache[s]

    n, phi = len(items), {item: 0.0 for item in items}
    if n <= cfg.exact_upto:
        for item in items:
            others = [x for x in items if x != item]
            for size in range(n):
                weight = math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n)
                for s in itertools.combinations(others, size):
                    phi[item] += weight * (v(frozenset(s) | {item}) - v(frozenset(s)))
        return phi, len(cache)
    for _ in range(cfg.samples):
        before = frozenset()
        for i in rng.permutation(n):
            after = before | {items[i]}
            phi[items[i]] += (v(after) - v(before)) / cfg.samples
            before = after
    return phi, len(cache)


def library_utility(skills: list, evaluate: Callable, questions: np.ndarray, seeds: np.ndarray, cfg: ShapleyConfig,
                    rng: np.random.Generator) -> Utility:
    """Shapley utility of each skill (by name) of the library ``skills``, replaying ``evaluate(subset, questions,
    seeds) -> [n]`` scores (the edit loop's evaluator) on every coalition the estimate needs."""
    by_name = {s.name: s for s in skills}
    names = sorted(by_name)
    scores: dict[frozenset, np.ndarray] = {}

    def value(s: frozenset) -> float:
        scores[s] = np.asarray(evaluate([by_name[n] for n in names if n in s], questions, seeds), dtype=np.float64)
        return float(scores[s].mean())

    values, replays = shapley(names, value, cfg, rng)
    if not names:  # no coalition was needed: the empty library is the whole one
        value(frozenset())
    full, empty = scores[frozenset(names)], scores[frozenset()]  # every order starts at one and ends at the other
    spread = float(np.concatenate(list(scores.values())).std())
    return Utility(values, float(empty.mean()), float(full.mean()), spread + cfg.eps, max(replays, 1), int(full.size))


def retrieve(query: str, lines: dict[str, str], utility: dict[str, float], k: int, weight: float) -> list[str]:
    """The ``k`` names of ``lines`` (name -> text) scoring highest by word overlap with ``query`` plus ``weight`` x
    their utility (0 for a line the last pass did not value), in their given order; all of them where k = 0."""
    if not k or len(lines) <= k:
        return list(lines)
    words = set(re.findall(r"\w+", query.lower()))

    def score(name: str) -> float:
        own = set(re.findall(r"\w+", lines[name].lower()))
        return len(words & own) / max(len(words | own), 1) + weight * utility.get(name, 0.0)

    keep = set(sorted(lines, key=lambda n: -score(n))[:k])  # a stable sort: ties keep the given order
    return [name for name in lines if name in keep]
