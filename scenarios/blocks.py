"""Scenario ``blocks``: Baum's Hayek Blocks World, learned by an economy of rule agents.

The world (Baum 1999; Baum & Durdanovic 2000). Four stacks of coloured blocks.
Stack 0 is the goal, read-only: n blocks in ``colours`` colours. Stacks 1..3
hold the same multiset of blocks in random order. One step moves the top block
of one of stacks 1..3 onto another of them (6 actions, ``1to2`` ... ``3to2``);
moving from an empty stack is an *invalid action*: the world is unchanged, the
step is spent, and it is counted. The task is to make stack 1 equal the goal,
bottom to top. The world pays only then (no reward on the way): 1 credit
(``reward = "unit"``, the default) or n credits, one per goal block
(``reward = "size"``). An episode that has not finished after
``horizon_factor x n`` steps has failed.

Observation features (what a Hayek user hands its agents; small bounded
integers, so a rule's condition ``feature OP int`` means the same at every n):

==============  ======  ====================================================
feature         range   meaning
==============  ======  ====================================================
``wrong1``      0..3    blocks on stack 1 above its correct prefix (3: 3 or more)
``prefix``      0..3    length of stack 1's correct prefix (3: 3 or more)
``progress``    0..10   tenths of the goal in place: floor(10 x prefix / n)
``need_at``     0..3    stack holding the nearest copy of the next needed
                        block (goal[prefix]), looking at stacks 2, 3 and the
                        wrong part of stack 1; ties go to 2, then 3, then 1;
                        0: nothing needed (stack 1 is complete)
``need_depth``  0..3    blocks above that copy (0: it is on top; 3: 3 or more)
``next``        0..C    colour of the next needed block (0: none)
``top1..top3``  0..C    colour of each stack's top block (0: empty)
==============  ======  ====================================================

Six rules solve every instance (see ``SOLUTION``): clear stack 1 while it is
wrong; once it is a correct prefix, move the needed block onto it when it is
on top of stack 2 or 3, else dig it out onto the other stack. The economy is
not told them: it starts from random rules and must find them from the
reward at completion alone.

Agents are rules of the DSL (agents/rules.py) that bid what their turns have
earned them (``BlocksPolicy``): the bucket brigade then prices each state by
how near the goal it leads, so where several rules wake the one whose move
leads nearest wins. Births (market/births.py):
*exploit* mutates a rich agent's rule (a term, a threshold, an operator or
the move); *explore* revises a bankrupt agent's rule from the state where its
move preceded a failure (``revise`` below: a different legal move there, or
the condition narrowed to that state); *periodic* births add rules covering states of failed episodes where
some legal move had no bidder.
*Curriculum*: training sizes unlock one at a time as the success rate passes
a threshold. Held-out instances come from ``heldout_seed``, a seed stream that
training (the model's RNG) never draws from.
"""

from __future__ import annotations

from dataclasses import dataclass as plain_dataclass
from typing import Literal

import numpy as np
from pydantic import Field, field_validator
from pydantic.dataclasses import dataclass

from agents import RulePolicy, RuleSpace
from agents.rules import ALWAYS, FIELDS, OPS
from market.config import STRICT
from market.money import MICRO

MOVES = ((1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2))  # action index -> (from stack, to stack)
ACTIONS = tuple(f"{a}to{b}" for a, b in MOVES)
SOURCE = np.array([src for src, _ in MOVES])  # action index -> the stack it takes a block from
FEATURES = ("wrong1", "prefix", "progress", "need_at", "need_depth", "next", "top1", "top2", "top3")
MARKET_COLUMNS = ("h1", "h2", "h3")
"""Appended to every observation for the agents' machinery, never read by a rule's condition:
the stack heights (a rule wakes only where its move is legal)."""
PROGRESS = 10  # progress = floor(PROGRESS x prefix / n)
CLIP = 3  # counts and depths saturate here: "3 or more"
MEMORY = 512  # recent training observations a policy keeps for covering newcomers

SOLUTION = [  # Hayek's answer, written by hand: a test checks it solves held-out instances at every size
    "wrong1 > 0 and need_at != 2 -> 1to2",
    "wrong1 > 0 and need_at == 2 -> 1to3",
    "wrong1 == 0 and need_at == 2 and need_depth == 0 -> 2to1",
    "wrong1 == 0 and need_at == 3 and need_depth == 0 -> 3to1",
    "wrong1 == 0 and need_at == 2 and need_depth > 0 -> 2to3",
    "wrong1 == 0 and need_at == 3 and need_depth > 0 -> 3to2",
]


@dataclass(config=STRICT)
class Config:
    colours: int = Field(3, ge=1, le=9)
    """C: colours of blocks."""
    train_sizes: list[int] = Field(default_factory=lambda: [4, 8, 16])
    """Goal sizes n drawn for training (uniformly among those unlocked by the curriculum)."""
    heldout_sizes: list[int] = Field(default_factory=lambda: [4, 8, 16, 32])
    """Sizes of the held-out evaluation, run on the final population, frozen."""
    heldout_count: int = Field(100, ge=1)
    """Held-out instances per size."""
    heldout_seed: int = Field(20_000_917, ge=0)
    """Seed of the held-out instances; training draws from the model's RNG, never from this stream."""
    reward: Literal["size", "unit"] = "unit"
    """What a solved instance pays: n (one credit per goal block) or 1."""
    horizon_factor: int = Field(6, ge=1)
    """Steps allowed per episode = horizon_factor x n."""
    curriculum: bool = True
    """Unlock train_sizes one at a time (smallest first) as the success rate passes the threshold."""
    curriculum_threshold: float = Field(0.8, ge=0, le=1)
    """Success rate (moving average over about curriculum_window training episodes) that unlocks the next size."""
    curriculum_window: int = Field(200, ge=1)
    features: list[str] = Field(default_factory=lambda: ["wrong1", "need_at", "need_depth"])
    """The features rules may read (a subset of FEATURES; the others are hidden from the agents). The
    default leaves out ``progress`` and ``prefix``: a rule keyed on them learns a size, not a move."""
    max_terms: int = Field(3, ge=1, le=8)
    """Terms per rule condition."""
    p_revise_move: float = Field(0.5, ge=0, le=1)
    """Explore: chance that a revision changes the move at the failure state (else it narrows the condition)."""
    bid_margin: float = Field(0.02, ge=0, lt=1)
    """With market.bid_scheme = "policy" an agent bids (1 - bid_margin) x its value (what a turn has
    earned it): the margin is its profit on an average turn, and the discount per step from the goal."""
    value_rate: float = Field(0.2, gt=0, le=1)
    """How fast a value follows what the agent's turns earn (an exponential average per turn)."""
    newcomer_value: float = Field(0.5, ge=0)
    """A new rule's value (random newcomers, revised explore children) is drawn from [0, newcomer_value]."""
    child_value: float = Field(0.5, ge=0, le=1)
    """An exploit child's value starts at this share of its parent's."""

    @field_validator("features")
    @classmethod
    def _features(cls, names: list[str]) -> list[str]:
        unknown = sorted(set(names) - set(FEATURES))
        if unknown or not names:
            raise ValueError(f"unknown features {unknown}; expected a non-empty subset of {list(FEATURES)}")
        return [f for f in FEATURES if f in names]

    @field_validator("train_sizes", "heldout_sizes")
    @classmethod
    def _sizes(cls, sizes: list[int]) -> list[int]:
        if not sizes or min(sizes) < 1:
            raise ValueError("expected a non-empty list of sizes >= 1")
        return sorted(sizes)


# ------------------------------------------------------------------ instances
@plain_dataclass(frozen=True)
class Instance:
    """One task: the goal (bottom to top) and stacks 1..3 (bottom to top), colours 1..C."""

    goal: tuple[int, ...]
    stacks: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def generate(n: int, colours: int, rng: np.random.Generator) -> Instance:
    """A random goal of n blocks, and the same blocks shuffled and dealt onto stacks 1..3."""
    goal = rng.integers(1, colours + 1, size=n)
    while True:  # deal again if stack 1 happens to be the goal already: every instance needs work
        blocks = rng.permutation(goal)
        where = rng.integers(0, 3, size=n)
        stacks = tuple(tuple(blocks[where == s].tolist()) for s in range(3))
        if stacks[0] != tuple(goal.tolist()):
            return Instance(tuple(goal.tolist()), stacks)


def heldout(cfg: Config, n: int) -> list[Instance]:
    """The held-out instances of size n: a fixed function of (heldout_seed, n, colours)."""
    rng = np.random.default_rng([cfg.heldout_seed, n, cfg.colours])
    return [generate(n, cfg.colours, rng) for _ in range(cfg.heldout_count)]


# ---------------------------------------------------------------------- world
class BlocksWorld:
    """B instances in lockstep, as arrays: ``stack[b, s, i]`` is the colour of block i
    (from the bottom) of stack s (0 = the goal), 0 above the stack's height."""

    def __init__(self, cfg: Config, instances: list[Instance] | None = None):
        self.cfg = cfg
        self.columns = [FEATURES.index(f) for f in cfg.features]
        self.fixed = instances  # held-out mode: reset() loads these, in order
        self.unlocked = 1 if cfg.curriculum else len(cfg.train_sizes)
        self.recent = 0.0  # moving average of training success at the largest unlocked size
        self.horizon = 1
        self._seen = False  # whether the current batch was trained on and not yet counted
        self.load([generate(1, cfg.colours, np.random.default_rng(0))])

    @property
    def space(self) -> RuleSpace:
        C = self.cfg.colours
        high = dict(zip(FEATURES, (CLIP, CLIP, PROGRESS, 3, CLIP, C, C, C, C)))
        names = tuple(self.cfg.features)
        return RuleSpace(names, (0,) * len(names), tuple(high[f] for f in names), ACTIONS, max_terms=self.cfg.max_terms)

    # --- instances -------------------------------------------------------
    def load(self, instances: list[Instance]) -> None:
        B, H = len(instances), max(len(i.goal) for i in instances)
        self.stack = np.zeros((B, 4, H), dtype=np.int64)
        self.height = np.zeros((B, 4), dtype=np.int64)
        for b, inst in enumerate(instances):
            for s, blocks in enumerate((inst.goal, *inst.stacks)):
                self.stack[b, s, : len(blocks)] = blocks
                self.height[b, s] = len(blocks)
        self.n = self.height[:, 0].copy()
        self.limit = self.cfg.horizon_factor * self.n
        self.horizon = int(self.limit.max())
        self.t = np.zeros(B, dtype=np.int64)
        self.invalid = np.zeros(B, dtype=np.int64)  # invalid actions per episode
        self.over = np.zeros(B, dtype=bool)
        self._solved = self._complete()

    def reset(self, batch: int, rng: np.random.Generator) -> None:
        if self.fixed is not None:
            if batch != len(self.fixed):
                raise ValueError(f"held-out world holds {len(self.fixed)} instances, asked for {batch}")
            return self.load(self.fixed)
        self._update_curriculum()
        sizes = rng.choice(self.cfg.train_sizes[: self.unlocked], size=batch)
        self.load([generate(int(n), self.cfg.colours, rng) for n in sizes])
        self._seen = True

    def _update_curriculum(self) -> None:
        """Count the last training batch at the largest unlocked size; unlock the next size when it is mastered."""
        if not self._seen:
            return
        at_top = self.n == self.cfg.train_sizes[self.unlocked - 1]
        if at_top.any():
            w = min(1.0, at_top.sum() / self.cfg.curriculum_window)
            self.recent = (1 - w) * self.recent + w * float(self._solved[at_top].mean())
        if self.recent >= self.cfg.curriculum_threshold and self.unlocked < len(self.cfg.train_sizes):
            self.unlocked += 1
            self.recent = 0.0

    # --- dynamics --------------------------------------------------------
    def _prefix(self) -> np.ndarray:
        """[B] length of stack 1's correct prefix."""
        H = self.stack.shape[2]
        match = (self.stack[:, 1] == self.stack[:, 0]) & (np.arange(H) < self.height[:, 1:2])
        return np.cumprod(match, axis=1).sum(axis=1)

    def _complete(self) -> np.ndarray:
        return (self.height[:, 1] == self.n) & (self._prefix() == self.n)

    def observe(self) -> np.ndarray:
        """[B, F + 3]: the rules' features, then MARKET_COLUMNS (no rule reads those)."""
        B, H = self.stack.shape[0], self.stack.shape[2]
        rows = np.arange(B)
        prefix = self._prefix()
        need = np.where(prefix < self.n, self.stack[rows, 0, np.minimum(prefix, H - 1)], 0)
        # depth of the topmost copy of the needed colour in stacks 1 (above the prefix), 2, 3
        idx = np.arange(H)
        copy = (self.stack[:, 1:] == need[:, None, None]) & (idx < self.height[:, 1:, None]) & (need[:, None, None] > 0)
        copy[:, 0] &= idx >= prefix[:, None]
        top = np.where(copy, idx, -1).max(axis=2)  # [B, 3] index of the topmost copy, -1: none
        depth = np.where(top >= 0, self.height[:, 1:] - 1 - top, 10**9)
        order = depth[:, [1, 2, 0]]  # ties: stack 2, then 3, then 1
        best = order.argmin(axis=1)
        found = order[rows, best] < 10**9
        need_at = np.where(found, np.array([2, 3, 1])[best], 0)
        need_depth = np.where(found, np.minimum(order[rows, best], CLIP), 0)
        tops = np.where(self.height > 0, self.stack[rows[:, None], np.arange(4), np.maximum(self.height - 1, 0)], 0)
        features = np.stack([
            np.minimum(self.height[:, 1] - prefix, CLIP), np.minimum(prefix, CLIP), PROGRESS * prefix // self.n,
            need_at, need_depth, need,
            tops[:, 1], tops[:, 2], tops[:, 3],
        ], axis=1)[:, self.columns]
        return np.concatenate([features, self.height[:, 1:]], axis=1)

    def step(self, actions: np.ndarray, acting: np.ndarray):
        B = self.stack.shape[0]
        rows = np.arange(B)
        live = ~self.over
        actions = np.asarray(actions)
        move = np.asarray(MOVES)[np.clip(actions, 0, len(MOVES) - 1)]
        src, dst = move[:, 0], move[:, 1]
        acting = np.asarray(acting) & live & (actions >= 0) & (actions < len(MOVES))
        legal = acting & (self.height[rows, src] > 0)
        self.invalid += acting & ~legal
        b, s, d = rows[legal], src[legal], dst[legal]
        block = self.stack[b, s, self.height[b, s] - 1]
        self.stack[b, s, self.height[b, s] - 1] = 0
        self.height[b, s] -= 1
        self.stack[b, d, self.height[b, d]] = block
        self.height[b, d] += 1

        self.t += live
        solved = self._complete() & live
        self._solved |= solved
        done = live & (solved | (self.t >= self.limit))
        self.over |= done
        pay = self.n if self.cfg.reward == "size" else 1
        return (solved * pay).astype(np.float64), done

    @property
    def solved(self) -> np.ndarray:
        return self._solved

    # --- checkpoints (the curriculum is the world's only state across rounds) ----
    def state_dict(self) -> dict:
        return {"unlocked": self.unlocked, "recent": self.recent, "seen": self._seen,
                "n": self.n.copy(), "solved": self._solved.copy()}

    def load_state_dict(self, state: dict) -> None:
        self.unlocked, self.recent, self._seen = state["unlocked"], state["recent"], state["seen"]
        self.n, self._solved = state["n"].copy(), state["solved"].copy()


# --------------------------------------------------------------------- agents
class BlocksPolicy(RulePolicy):
    """Rule agents that bid what a turn has earned them (the ``policy`` bid scheme).

    Each agent keeps ``value``: a running estimate, from its own cash flows only, of what one turn
    earns it (its successor's payment, or the world's reward, less fees). It bids
    ``(1 - bid_margin) x value`` and keeps the margin as profit. Along a solving chain the bucket
    brigade then prices every state by how close to the goal it leads (each turn back from the goal
    is worth ``1 - bid_margin`` less), so in each state the eligible rule whose move leads nearest
    the goal bids highest and wins, as in Hayek's economy; a rule whose move undoes progress is
    paid less by its successor, its value falls, and it is outbid.

    Newcomers are made from states the world has shown (covering), preferably where a failed
    episode found some legal move with no bidder; explore children are revised at the state where
    their parent's move preceded a failure.
    """

    def __init__(self, space: RuleSpace, cfg: Config, initial_rules: list[str] | None = None):
        super().__init__(space, initial_rules, newcomer=self.covering)
        self.cfg = cfg
        self.value = np.zeros(0)  # [N] credits: what a turn has earned the agent (its running estimate)
        self.turns = np.zeros(0, dtype=np.int64)  # [N] turns it has been paid for
        width = len(space.features) + len(MARKET_COLUMNS)
        self.memory = np.zeros((0, width), dtype=np.int64)  # recent training observations
        self.gaps = np.zeros((0, width), dtype=np.int64)  # recent states of failed episodes with a move nobody offered
        self.gap_moves = np.zeros((0, len(MOVES)), dtype=bool)  # [gap, move] which legal moves had no bidder there
        self.recording = True  # evaluate() turns it off: held-out states never seed newcomers

    # --- the market's Policy protocol, plus bids --------------------------------------------
    def eligible(self, obs: np.ndarray) -> np.ndarray:
        """A rule wakes where its condition holds *and* its move is legal: an agent that could only
        make an illegal move would otherwise win a state, spend it, and own it again for free
        (no one else wakes there), until the horizon. An agent whose turns have lost money on
        average (value < 0) sits out: any bid would cost it more than it expects to earn."""
        return self.wakes(obs) & (self.value >= 0)

    def wakes(self, obs: np.ndarray) -> np.ndarray:
        """[B, N] the rule's condition holds and its move is legal, whatever its value."""
        return super().eligible(obs) & legal_moves(obs)[:, self.rules.action]

    def act(self, obs: np.ndarray, winners: np.ndarray) -> np.ndarray:
        if self.recording:
            self.memory = np.concatenate([self.memory, obs])[-MEMORY:]
        return super().act(obs, winners)

    def bids(self, obs: np.ndarray) -> np.ndarray:
        """[N] credits: the same in every state; an agent's conditions choose the states it bids for."""
        return (1 - self.cfg.bid_margin) * self.value

    def learn(self, model) -> None:
        """After each training round: move each agent's value toward what its turns earned, and
        keep the gaps of the round's failed episodes for covering.

        The value is the plain mean of a young agent's first 1/value_rate turns, then an
        exponential average with rate value_rate per turn (the XCS update), so a newcomer's first
        turns set its value at once and an old agent's follows the market.
        """
        m = model._money
        rows, earned = model.trace.turns(model.cfg.payment == "bucket_brigade", m["fee"], m["reward"])
        N = self.value.size
        k = np.bincount(rows, minlength=N)
        mean = np.bincount(rows, weights=earned / MICRO, minlength=N) / np.maximum(k, 1)
        young = self.turns + k <= 1 / self.cfg.value_rate
        averaged = (self.turns * self.value + k * mean) / np.maximum(self.turns + k, 1)
        tracked = self.value + (1 - (1 - self.cfg.value_rate) ** k) * (mean - self.value)
        self.value = np.where(k > 0, np.where(young, averaged, tracked), self.value)
        self.turns += k
        self._record_gaps(model.trace, model.population.traders)

    def _record_gaps(self, trace, traders: np.ndarray) -> None:
        """States of failed episodes where a legal move had no live rule waking for it: a market with
        no supplier for a move there (XCS covers a match set short of actions the same way). A rule
        that sits out (value < 0) still counts as offering its move: its losses are the market's
        evidence that the move does not pay there, and a newcomer should not offer it again."""
        T, B = trace.path.shape
        obs = trace.obs.reshape(T * B, -1)
        offered = np.zeros((T * B, len(MOVES)), dtype=bool)
        state, row = np.nonzero(self.wakes(obs) & traders[None, :])
        offered[state, self.rules.action[row]] = True
        live = np.cumsum(trace.done, axis=0) - trace.done == 0  # [T, B] the episode had not ended before
        gap = legal_moves(obs) & ~offered
        pick = (live & ~trace.solved[None, :]).reshape(-1) & gap.any(axis=1)
        self.gaps = np.concatenate([self.gaps, obs[pick]])[-MEMORY:]
        self.gap_moves = np.concatenate([self.gap_moves, gap[pick]])[-MEMORY:]

    def resize(self, capacity: int) -> None:
        super().resize(capacity)
        grow = max(capacity - self.value.size, 0)
        self.value = np.r_[self.value, np.zeros(grow)]
        self.turns = np.r_[self.turns, np.zeros(grow, dtype=np.int64)]

    def spawn(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        super().spawn(rows, rng)
        self._untried(rows, rng)

    def _untried(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        """A new rule's value is a guess from [0, newcomer_value]: its first turns replace it."""
        self.value[rows] = rng.uniform(0, self.cfg.newcomer_value, size=rows.size)
        self.turns[rows] = 0

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

    def inherit(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        """An exploit child starts at child_value x its parent's value: untried, it wins only where
        its parent does not wake or bids low, until its own turns set its value."""
        super().inherit(rows, parents, rng)
        self.value[rows] = self.cfg.child_value * self.value[parents]
        self.turns[rows] = 0

    def revise(self, rows, parents, obs, found, rng: np.random.Generator) -> None:
        """Explore: a child of each parent, edited at ``obs``, the state its move preceded a failure.

        With p_revise_move the child makes another *legal* move there (same condition); otherwise
        it keeps the move but no longer wakes there (a term ``feature != obs[feature]`` is added).
        Parents with no failure this round are mutated as exploit children are. A revised rule is
        a new rule: its value is a newcomer's guess.
        """
        r = self.rules
        self.inherit(rows[~found], parents[~found], rng)
        rows, parents, obs = rows[found], parents[found], obs[found]
        self._untried(rows, rng)
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

    # --- checkpoints ---------------------------------------------------------------------------
    STATE = ("value", "turns", "memory", "gaps", "gap_moves")

    def state_dict(self) -> dict:
        return super().state_dict() | {name: getattr(self, name).copy() for name in self.STATE}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        for name in self.STATE:
            setattr(self, name, state[name].copy())


def legal_moves(obs: np.ndarray) -> np.ndarray:
    """[B, 6] bool: which moves are legal (their source stack is not empty), from MARKET_COLUMNS."""
    heights = obs[:, -3:]  # h1, h2, h3
    return heights[:, SOURCE - 1] > 0


def build(cfg: Config, initial_rules: list[str] | None = None):
    world = BlocksWorld(cfg)
    return world, BlocksPolicy(world.space, cfg, initial_rules)


# -------------------------------------------------------------------- metrics
def evaluate(model, cfg: Config, sizes: list[int] | None = None) -> dict[str, float]:
    """Held-out success per size of the current population, frozen: no payments, no births."""
    result, model.policy.recording = {}, False
    try:
        for n in sizes or cfg.heldout_sizes:
            world = BlocksWorld(cfg, heldout(cfg, n))
            episodes = model.run_episodes(world=world, batch=cfg.heldout_count, settle=False)
            result[str(n)] = float(np.mean([e["success"] for e in episodes]))
    finally:
        model.policy.recording = True
    return result


def metrics(model, episodes: list[dict], cfg: Config) -> dict:
    """``heldout_success`` per size (final population, frozen), training success, and the richest rules."""
    tail = episodes[len(episodes) - max(1, len(episodes) // 10):]
    pop = model.population
    live = np.flatnonzero(pop.traders)
    richest = live[np.argsort(-pop.wealth[live], kind="stable")][:8]
    return {
        "heldout_success": evaluate(model, cfg),
        "train_success": float(np.mean([e["success"] for e in tail])) if tail else float("nan"),
        "unlocked_size": cfg.train_sizes[model.world.unlocked - 1],
        "population": pop.size,
        "episodes": model.episodes_done,
        "richest_rules": model.policy.describe(richest),
    }
