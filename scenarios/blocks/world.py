"""The Blocks World as arrays: B instances in lockstep, their features, moves and curriculum."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agents import RuleSpace
from agents.tasks import Draw
from market.protocols import World
from scenarios.blocks import kernel
from scenarios.blocks.config import ACTIONS, CLIP, FEATURES, MOVES, PROGRESS, SOLUTION, SOURCE, Config
from scenarios.spec import ScenarioSpec

SPEC = ScenarioSpec(task_signals=("tasks", "variant", "subproblems", "progress"), oracle=True, branches=True)
"""What the world offers the config loader's checks. A task sampler (agents.tasks) gets ``task_pool`` instances
per training size, recoloured variants, goal-prefix sub-problems, progress = the goal's share in place.
BlocksWorld.oracle: Hayek's hand-written solution (SOLUTION) as the sero objective's solver; it reads
SOLVER_FEATURES, which the run's ``blocks.features`` must include (scenarios/blocks/scenario.py validate).
BlocksWorld.snapshot / restore: an instance is its arrays' rows, so a branch starts from any state a rollout
reached."""
SOLVER_FEATURES = ("wrong1", "need_at", "need_depth")
STATE = ("stack", "height", "n", "limit", "t", "invalid", "over", "_solved")
"""The per-instance arrays (first axis B) that are an instance's whole state."""
_MOVES = np.array(MOVES, dtype=np.int64)  # action index -> (from stack, to stack), as the move kernel reads it
_SOURCE_COLUMN = SOURCE - 4  # action index -> its source stack's height, among an observation's last three columns


@dataclass(frozen=True)
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


def prefixes(task: tuple) -> list[tuple]:
    """scrl's sub-problems of a task, easiest first: stack 1 must equal the goal's first quarter, half, three
    quarters (every shorter prefix below 8 blocks), every block still in play; those already done are left out."""
    goal, stacks = task
    step = max(1, len(goal) // 4)
    return [(goal[:k], stacks) for k in range(step, len(goal), step) if stacks[0] != goal[:k]]


def heldout(cfg: Config, n: int) -> list[Instance]:
    """The held-out instances of size n: a fixed function of (heldout_seed, n, colours)."""
    rng = np.random.default_rng([cfg.heldout_seed, n, cfg.colours])
    return [generate(n, cfg.colours, rng) for _ in range(cfg.heldout_count)]


class BlocksWorld(World):
    """B instances in lockstep, as arrays: ``stack[b, s, i]`` is the colour of block i
    (from the bottom) of stack s (0 = the goal), 0 above the stack's height."""

    def __init__(self, cfg: Config, instances: list[Instance] | None = None):
        self.cfg = cfg
        self.columns = np.array([FEATURES.index(f) for f in cfg.features], dtype=np.int64)
        self.fixed = instances  # held-out mode: reset() loads these, in order
        self.unlocked = 1 if cfg.curriculum else len(cfg.train_sizes)
        self.recent = 0.0  # moving average of training success at the largest unlocked size
        self.horizon = 1
        self._seen = False  # whether the current batch was trained on and not yet counted
        self.draws = None  # agents.tasks: one sampler's Draw per training size (draw_tasks)
        self.load([generate(1, cfg.colours, np.random.default_rng(0))])

    @property
    def space(self) -> RuleSpace:
        C = self.cfg.colours
        high = dict(zip(FEATURES, (CLIP, CLIP, PROGRESS, 3, CLIP, C, C, C, C)))
        names = tuple(self.cfg.features)
        return RuleSpace(names, (0,) * len(names), tuple(high[f] for f in names), ACTIONS, max_terms=self.cfg.max_terms)

    # --- instances -------------------------------------------------------
    def load(self, instances: list[Instance]) -> None:
        B, H = len(instances), max(max(len(i.goal), sum(map(len, i.stacks))) for i in instances)  # all on one stack
        self.stack = np.zeros((B, 4, H), dtype=np.int64)
        self.height = np.zeros((B, 4), dtype=np.int64)
        for b, inst in enumerate(instances):
            for s, blocks in enumerate((inst.goal, *inst.stacks)):
                self.stack[b, s, : len(blocks)] = blocks
                self.height[b, s] = len(blocks)
        self.n = self.height[:, 0].copy()
        self.limit = self.cfg.horizon_factor * self.height[:, 1:].sum(axis=1)  # per block: a sub-problem keeps its budget
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
        if self.draws is None:
            sizes = rng.choice(self.cfg.train_sizes[: self.unlocked], size=batch)
            self.load([generate(int(n), self.cfg.colours, rng) for n in sizes])
        else:  # the curriculum draws each group's size, that size's sampler its task
            sizes = np.repeat(rng.choice(self.cfg.train_sizes[: self.unlocked], size=-(-batch // self.group)),
                              self.group)[:batch]
            drawn = {n: iter(self.draws[n].draw(rng, int((sizes == n).sum()), self.group))
                     for n in np.unique(sizes).tolist()}
            self.task_ids = [next(drawn[n]) for n in sizes.tolist()]
            self.sizes, self.pending = sizes, True
            self.load([Instance(*task) for task in self.task_ids])
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

    def oracle(self, obs: np.ndarray) -> np.ndarray:
        """SOLUTION's move in each observed state (its six rules are exclusive: at most one wakes), -1 where none
        does (the goal is built)."""
        if getattr(self, "_solver", None) is None:
            from agents import RulePolicy

            self._solver = RulePolicy(self.space, initial_rules=list(SOLUTION))
            self._solver.resize(len(SOLUTION))
            self._solver.spawn(np.arange(len(SOLUTION)), np.random.default_rng(0))
        wake = self._solver.eligible(obs)
        return np.where(wake.any(1), self._solver.rules.action[wake.argmax(1)], -1)

    # --- branches (agents.branches) --------------------------------------
    def snapshot(self) -> tuple[np.ndarray, ...]:
        return tuple(getattr(self, name).copy() for name in STATE)

    def restore(self, state: tuple[np.ndarray, ...], src: np.ndarray, dst: np.ndarray) -> None:
        for name, saved in zip(STATE, state):
            getattr(self, name)[dst] = saved[src]

    # --- dynamics --------------------------------------------------------
    def _prefix(self) -> np.ndarray:
        """[B] length of stack 1's correct prefix."""
        out = np.empty(self.stack.shape[0], dtype=np.int64)
        kernel.prefixes(self.stack, self.height, out)
        return out

    def _complete(self) -> np.ndarray:
        return (self.height[:, 1] == self.n) & (self._prefix() == self.n)

    def observe(self) -> np.ndarray:
        """[B, F + 3]: the rules' features, then MARKET_COLUMNS (no rule reads those)."""
        B = self.stack.shape[0]
        out = np.empty((B, self.columns.size + 3), dtype=np.int64)
        kernel.observe(self.stack, self.height, self.n, self.columns, np.empty((B, len(FEATURES)), np.int64), out)
        return out

    def step(self, actions: np.ndarray, acting: np.ndarray):
        B = self.stack.shape[0]
        reward, done = np.empty(B, dtype=np.float64), np.empty(B, dtype=bool)
        over = kernel.step(self.stack, self.height, _MOVES, np.asarray(actions, dtype=np.int64),
                           np.asarray(acting, dtype=bool), self.n, self.limit, self.cfg.reward == "size", self.t,
                           self.over, self._solved, self.invalid, reward, done)
        if self.draws is not None and self.pending and over:  # the round is over: report it
            self._report()
        return reward, done

    @property
    def solved(self) -> np.ndarray:
        return self._solved

    # --- task samplers (agents.tasks) ------------------------------------
    def draw_tasks(self, name: str, rng: np.random.Generator, settings=None) -> None:
        """Each training size's sampler draws from ``task_pool`` instances of that size, drawn once from ``rng``."""
        self.draws = {}
        for n in self.cfg.train_sizes:
            pool = [generate(n, self.cfg.colours, rng) for _ in range(self.cfg.task_pool)]
            self.draws[n] = Draw(name, [(i.goal, i.stacks) for i in pool], variant=self.recolour, subproblems=prefixes,
                                 settings=settings)

    def recolour(self, task: tuple, rng: np.random.Generator) -> tuple:
        """rods's isomorphic variant of a task (an ``Instance`` as a tuple): the same stacks, the colours permuted."""
        perm = np.r_[0, 1 + rng.permutation(self.cfg.colours)]  # colour c -> perm[c]
        goal, stacks = task
        return tuple(perm[list(goal)].tolist()), tuple(tuple(perm[list(st)].tolist()) for st in stacks)

    def _report(self) -> None:
        """One reward per rollout to the sampler that drew it: progress = the goal's share in place at the end."""
        progress = self._prefix() / self.n
        for n, draw in self.draws.items():
            mine = self.sizes == n
            if mine.any():
                draw.update([t for t, m in zip(self.task_ids, mine.tolist()) if m], progress[mine], self._solved[mine])
        self.pending = False

    # --- checkpoints (the curriculum, and the samplers' state, carry from round to round) ----
    def state_dict(self) -> dict:
        tasks = {} if self.draws is None else {"tasks": {n: d.sampler.state_dict() for n, d in self.draws.items()}}
        return {"unlocked": self.unlocked, "recent": self.recent, "seen": self._seen,
                "n": self.n.copy(), "solved": self._solved.copy()} | tasks

    def load_state_dict(self, state: dict) -> None:
        self.unlocked, self.recent, self._seen = state["unlocked"], state["recent"], state["seen"]
        self.n, self._solved = state["n"].copy(), state["solved"].copy()
        for n, sampler_state in state.get("tasks", {}).items():
            self.draws[n].sampler.load_state_dict(sampler_state)


def legal_moves(obs: np.ndarray) -> np.ndarray:
    """[B, 6] bool: which moves are legal (their source stack is not empty), from MARKET_COLUMNS."""
    return obs[:, _SOURCE_COLUMN] > 0
