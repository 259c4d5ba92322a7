"""The ``rule`` policy backend: every agent is one rule of the DSL (agents/rules.py).

Fast, deterministic and numpy-vectorized: the default backend for large
populations and sweeps. Births mutate rules: each child is its parent's rule
with one random edit (nudge a threshold, change an operator, change the action,
add or drop a term), clipped to the world's feature bounds.
"""

from __future__ import annotations

import numpy as np

from agents import rules as R
from market.protocols import Policy

EDITS = ("nudge", "operator", "action", "toggle_term")


class RulePolicy(Policy):
    """Agents that are rules of the DSL (agents/rules.py: ``need_at == 2 and wrong1 == 0 -> 2to3``), one per row.

    An agent is eligible where its condition holds on the observation and, if it wins, takes its rule's action.
    A birth mutates its parent's rule (a term's value, operator or action nudged; a term toggled); a newcomer gets
    random rules. The rule worlds' policy (relay, blocks, your own rule world).
    """

    def __init__(self, space: R.RuleSpace, initial_rules: list[str] | None = None, newcomer=None):
        """
        Args:
            space: The world's features, their ranges and its actions (``agents.RuleSpace``): what a rule may read and do.
            initial_rules: Rule texts given to the first newborns, in order (the rest are random newcomers).
            newcomer: ``newcomer(rules, rows, rng)`` writes random rules into ``rows`` (default: one random
                ``feature == value -> action`` term); worlds pass their own to set what "random" means.

        An initial rule that does not parse raises ``agents.RuleSyntaxError`` when the first newborns are made.
        """
        self.space = space
        self.newcomer = newcomer or self.random_term_rules
        self.rules = R.empty_rules(0, space.max_terms)
        self.low = np.asarray(space.low, dtype=np.int64)
        self.high = np.asarray(space.high, dtype=np.int64)
        self._seed_rules = list(initial_rules or [])  # texts given to the first newborns, in order

    # --- the market's Policy protocol -------------------------------------
    def eligible(self, obs: np.ndarray) -> np.ndarray:
        return R.evaluate(self.rules, np.asarray(obs, dtype=np.int64))

    def act(self, obs: np.ndarray, winners: np.ndarray) -> np.ndarray:
        return np.where(winners >= 0, self.rules.action[np.maximum(winners, 0)], -1)

    def resize(self, capacity: int) -> None:
        old = self.rules.action.size
        if capacity <= old:
            return
        grown = R.empty_rules(capacity, self.space.max_terms)
        for name in R.FIELDS:
            getattr(grown, name)[:old] = getattr(self.rules, name)
        self.rules = grown

    def spawn(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        """Seed rules first (in order), then the newcomer generator's random rules."""
        seeded, rows = rows[: len(self._seed_rules)], rows[len(self._seed_rules) :]
        for row in seeded.tolist():
            R.compile_into(self.rules, row, self._seed_rules.pop(0), self.space)
        self.rules.op[rows] = R.ALWAYS
        self.newcomer(self.rules, rows, rng)

    def random_term_rules(self, rules: R.CompiledRules, rows: np.ndarray, rng: np.random.Generator) -> None:
        self._random_terms(rules, (rows, np.zeros(rows.size, dtype=np.int64)), rng)
        rules.action[rows] = rng.integers(len(self.space.actions), size=rows.size)

    def _random_terms(self, rules: R.CompiledRules, at: tuple[np.ndarray, np.ndarray], rng: np.random.Generator) -> None:
        """Write a random term ``feature == value`` (value within the feature's bounds) at (rows, terms) ``at``."""
        feature = rng.integers(len(self.space.features), size=at[0].size)
        rules.feature[at] = feature
        rules.op[at] = R.OPS["=="]
        rules.value[at] = rng.integers(self.low[feature], self.high[feature] + 1)

    def inherit(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        r = self.rules
        for name in R.FIELDS:
            getattr(r, name)[rows] = getattr(r, name)[parents]
        n, T = rows.size, self.space.max_terms
        edit = rng.integers(len(EDITS), size=n)
        term = rng.integers(T, size=n)
        used = r.op[rows, term] != R.ALWAYS
        # a nudge or operator change needs a used term; on an unused one it becomes a toggle (adds a term)
        edit = np.where(((edit == 0) | (edit == 1)) & ~used, 3, edit)

        nudge = rows[edit == 0], term[edit == 0]
        f = r.feature[nudge]
        step = rng.choice(np.array([-1, 1]), size=f.size)
        r.value[nudge] = np.clip(r.value[nudge] + step, self.low[f], self.high[f])

        ops = np.array(list(R.OPS.values()))
        r.op[rows[edit == 1], term[edit == 1]] = rng.choice(ops, size=int((edit == 1).sum()))

        r.action[rows[edit == 2]] = rng.integers(len(self.space.actions), size=int((edit == 2).sum()))

        toggle = edit == 3
        drop = toggle & used
        r.op[rows[drop], term[drop]] = R.ALWAYS
        self._random_terms(r, (rows[toggle & ~used], term[toggle & ~used]), rng)

    def describe(self, rows: np.ndarray) -> list[str]:
        return [R.describe(self.rules, row, self.space) for row in np.asarray(rows).tolist()]

    # --- checkpointing -----------------------------------------------------
    def state_dict(self) -> dict:
        return {name: getattr(self.rules, name).copy() for name in R.FIELDS} | {
            "seed_rules": list(self._seed_rules)
        }

    def load_state_dict(self, state: dict) -> None:
        self.rules = R.CompiledRules(*(np.array(state[n], order="F") for n in R.FIELDS))  # empty_rules' layout
        self._seed_rules = list(state["seed_rules"])
