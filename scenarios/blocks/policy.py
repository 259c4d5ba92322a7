"""Blocks World's agents: rules that bid what their turns have earned them."""

from __future__ import annotations

import numpy as np

from agents import RulePolicy, RuleSpace
from agents.rules import ALWAYS, FIELDS, OPS
from scenarios.blocks import kernel
from scenarios.blocks.config import ACTIONS, MARKET_COLUMNS, MEMORY, MOVES, Config
from scenarios.blocks.world import legal_moves


class BlocksPolicy(RulePolicy):
    """Rule agents of Blocks World: a rule wakes where its condition holds and its move is legal.

    What they bid is the market's business: the scenario's default is the platform's value bids
    (agents/learners/policy.py, ``agents.bid_objective = "value"`` with ``agents.features = "numeric"``):
    each agent keeps a running estimate per state (one-hot features), from its own cash flows only,
    of what one turn from that state earns it (its successor's payment, or the world's reward, less
    fees), bids ``(1 - agents.value.margin) x value`` and keeps the margin as profit. Along a solving
    chain the bucket brigade then prices every state by how close to the goal it leads (each turn
    back from the goal is worth ``1 - value.margin`` less), so in each state the eligible rule whose
    move leads nearest the goal bids highest and wins, as in Hayek's economy; a rule whose move
    undoes progress in a state is paid less there by its successor, its value there falls, and it
    is outbid (below 0 it sits out there). A value per agent only (``agent`` features) averages the
    states a rule wakes in: a general rule that detours in a few of them keeps its high value there.

    This class adds what is Blocks World's own: newcomers are made from states the world has shown
    (covering), preferably where a failed episode found some legal move with no bidder; explore
    children are revised at the state where their parent's move preceded a failure.
    """

    def __init__(self, space: RuleSpace, cfg: Config, initial_rules: list[str] | None = None):
        super().__init__(space, initial_rules, newcomer=self.covering)
        self.cfg = cfg
        width = len(space.features) + len(MARKET_COLUMNS)
        self.memory = np.zeros((0, width), dtype=np.int64)  # recent training observations
        self.gaps = np.zeros((0, width), dtype=np.int64)  # recent states of failed episodes with a move nobody offered
        self.gap_moves = np.zeros((0, len(MOVES)), dtype=bool)  # [gap, move] which legal moves had no bidder there
        self.recording = True  # evaluate() turns it off: held-out states never seed newcomers

    # --- the market's Policy protocol -----------------------------------------------------------
    def eligible(self, obs: np.ndarray) -> np.ndarray:
        """[B, N] the rule's condition holds *and* its move is legal: an agent that could only make an
        illegal move would otherwise win a state, spend it, and own it again for free (no one else
        wakes there), until the horizon."""
        awake = super().eligible(obs)
        kernel.allowed(legal_moves(obs), self.rules.action, awake)  # (numpy's pick and & took 3.5 us a step)
        return awake

    def act(self, obs: np.ndarray, winners: np.ndarray) -> np.ndarray:
        if self.recording:
            self.memory = np.concatenate([self.memory, obs])[-MEMORY:]
        return super().act(obs, winners)

    def learn(self, model) -> None:
        """After each training round: keep the gaps of the round's failed episodes for covering."""
        self._record_gaps(model.trace, model.population.traders)

    def _record_gaps(self, trace, traders: np.ndarray) -> None:
        """States of failed episodes where a legal move had no live rule waking for it: a market with
        no supplier for a move there (XCS covers a match set short of actions the same way). A rule
        that sits out (a negative value) still counts as offering its move: its losses are the
        market's evidence that the move does not pay there, and a newcomer should not offer it again."""
        T, B = trace.path.shape
        obs = trace.obs.reshape(T * B, -1)[(trace.live & ~trace.solved[None, :]).reshape(-1)]  # failed episodes' states
        supplies = np.zeros((traders.size, len(MOVES)), dtype=np.float32)  # [N, move] 1 where a live rule offers it
        supplies[traders, self.rules.action[traders]] = 1.0
        offered = self.eligible(obs).astype(np.float32) @ supplies > 0  # counts of bidders, exact in float32
        gap = legal_moves(obs) & ~offered
        pick = gap.any(axis=1)
        self.gaps = np.concatenate([self.gaps, obs[pick]])[-MEMORY:]
        self.gap_moves = np.concatenate([self.gap_moves, gap[pick]])[-MEMORY:]

    def covering(self, rules, rows: np.ndarray, rng: np.random.Generator) -> None:
        """As in learning classifier systems (XCS covering): a newcomer wakes in a state the world
        has shown, preferably a gap (a failed episode's state where a legal move had no bidder,
        which it then offers), its condition 1..max_terms terms ``feature == value`` read off that
        state; from other states it makes a random legal move."""
        n, T, F = rows.size, self.space.max_terms, len(self.space.features)
        feature = np.argsort(rng.random((n, F)), axis=1)[:, :T]  # distinct features per rule
        if len(self.gaps) or len(self.memory):
            seen, moves = (self.gaps, self.gap_moves) if len(self.gaps) else (self.memory, legal_moves(self.memory))
            pick = rng.integers(len(seen), size=n)
            value = np.take_along_axis(seen[pick], feature, axis=1)
            rules.action[rows] = np.argmax(rng.random((n, len(MOVES))) * moves[pick], axis=1)
        else:  # the first population: nothing seen yet
            value = rng.integers(self.low[feature], self.high[feature] + 1)
            rules.action[rows] = rng.integers(len(ACTIONS), size=n)
        used = np.arange(T)[None, :] < rng.integers(1, min(T, F) + 1, size=n)[:, None]
        rules.feature[rows], rules.value[rows] = feature, value
        rules.op[rows] = np.where(used, OPS["=="], ALWAYS)

    def revise(self, rows, parents, obs, found, rng: np.random.Generator) -> np.ndarray:
        """Explore: a child of each parent, edited at ``obs``, the state its move preceded a failure.

        With p_revise_move the child makes another *legal* move there (same condition); otherwise
        it keeps the move but no longer wakes there (a term ``feature != obs[feature]`` is added).
        Parents with no failure this round are mutated as exploit children are. Every row is made
        here (-> all True); a revised rule is a new rule, and value bids give it a newcomer's guess.
        """
        r, made = self.rules, np.ones(rows.size, dtype=bool)
        self.inherit(rows[~found], parents[~found], rng)
        rows, parents, obs = rows[found], parents[found], obs[found]
        for name in FIELDS:
            getattr(r, name)[rows] = getattr(r, name)[parents]
        move = rng.random(rows.size) < self.cfg.p_revise_move
        for row, state, new_move in zip(rows.tolist(), obs, move.tolist()):
            if new_move:
                legal = np.flatnonzero(legal_moves(state[None])[0] & (np.arange(len(MOVES)) != r.action[row]))
                if legal.size:
                    r.action[row] = rng.choice(legal)
                    continue
            free = np.flatnonzero(r.op[row] == ALWAYS)
            slot = rng.choice(free) if free.size else rng.integers(self.space.max_terms)
            feature = rng.integers(len(self.space.features))
            r.feature[row, slot], r.op[row, slot], r.value[row, slot] = feature, OPS["!="], state[feature]
        return made

    # --- checkpoints ---------------------------------------------------------------------------
    STATE = ("memory", "gaps", "gap_moves")

    def state_dict(self) -> dict:
        return super().state_dict() | {name: getattr(self, name).copy() for name in self.STATE}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        for name in self.STATE:
            setattr(self, name, state[name].copy())
