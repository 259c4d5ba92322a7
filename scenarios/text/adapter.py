"""A text world (scenarios/text/world.py) as the market sees it: B states as an array world, and the text task
the LLM policy reads them through.

:class:`TextBatch` is a ``market.protocols.World`` over B Python states. Its observation row is
``(stage, seed stream, problem id, world index, episode serial, turn)``: the stage first (the one bounded
feature learned bids read), then what names the problem (a pure function of stream and id: held-out and
validation problems are their own streams), the episode (unique across the run's worlds, so an old
observation never matches a new episode) and how many actions the state has taken (an agent that
forfeited sleeps on an observation until the state changes). Training worlds draw problem ids from the
market's RNG, ``group`` consecutive worlds on one problem.

:class:`TextBoard` is the policy's ``TextTask`` (agents/llm/task.py): it applies a completion to a copy
of the state (``TextWorld.act``), keeps the copy as the pending move when it is accepted, and the batch
commits it when the market lets the agent act. Every applied (role, text) is logged per episode, so the
state at any observation the run still refers to (births and skill edits read past failures) is rebuilt
by replaying the log from the problem's start; the log travels in checkpoints.

A batch branches (``agents.branches``, market/branching.py): :meth:`TextBatch.snapshot` keeps each world's
problem, a deep copy of its state and its turn count; :meth:`TextBatch.restore` gives a branch all three and its
source's move log cut to that turn, so that the rows the branch observes replay to its own states.
"""

from __future__ import annotations

import collections
import copy

import numpy as np

from agents.rules import RuleSpace
from market.protocols import World

LOG_EPISODES = 4096
"""Episodes whose moves are kept for replay (the skill evolver looks back at most 16 rounds)."""


class TextBoard:
    """The text task over whichever :class:`TextBatch` was observed last (``current``)."""

    def __init__(self, world):
        self.world = world
        self.roles = {r.name: r for r in world.roles}
        self.all_summaries = tuple(world.stages)
        self.prompts = world.prompts
        self.space = RuleSpace(features=("stage",), low=(0,), high=(max(len(world.stages) - 1, 1),),
                               actions=tuple(r.name for r in world.roles))
        self.episodes = 0  # episodes begun by any batch of the run (TextBatch.serial)
        self.current: TextBatch | None = None
        self.pending: dict[int, tuple] = {}  # world b -> (role, its state after this step's accepted move)
        self.moves: collections.OrderedDict = collections.OrderedDict()  # (serial, b) -> [(role, text)] applied

    # --- states ------------------------------------------------------------------------------------
    def problem(self, seed: int, pid: int):
        return self.world.problem(np.random.default_rng([seed, pid]))

    def paired(self, seed: int, pid: int):
        """The problem's pair (``TextWorld.pair``), drawn on the problem's own stream after the problem: the
        same problem, the same pair."""
        rng = np.random.default_rng([seed, pid])
        return self.world.pair(self.world.problem(rng), rng)

    def state_at(self, obs_row: np.ndarray):
        """The state an observation row saw: the current batch's, or replayed from the move log."""
        stage, seed, pid, b, serial, turn = (int(x) for x in obs_row)
        now = self.current
        if now is not None and now.serial == serial and b < len(now.states) and now.turn[b] == turn:
            return now.states[b]
        state = copy.deepcopy(self.world.start(self.problem(seed, pid)))
        for role, text in self.moves.get((serial, b), [])[:turn]:
            self.world.act(state, role, text)
        return state

    def record(self, serial: int, b: int, role: str, text: str) -> None:
        self.moves.setdefault((serial, b), []).append((role, text))
        self._keep(serial, b)

    def copy_log(self, serial: int, src: int, dst: int, turns: int) -> None:
        """World ``dst``'s log becomes the first ``turns`` moves of ``src``'s (a branch restored at that turn)."""
        self.moves[(serial, dst)] = list(self.moves.get((serial, src), [])[:turns])
        self._keep(serial, dst)

    def _keep(self, serial: int, b: int) -> None:
        self.moves.move_to_end((serial, b))
        while len(self.moves) > LOG_EPISODES:
            self.moves.popitem(last=False)

    def _try(self, b: int, role: str, text: str | None, obs_row: np.ndarray) -> tuple[str | None, str]:
        if text is None:
            return None, "illegal: the tool has nothing to do here"
        trial = copy.deepcopy(self.state_at(obs_row))
        reason = self.world.act(trial, role, text)
        if reason:
            return None, str(reason)
        self.pending[b] = role, trial
        return text, ""

    # --- the TextTask protocol (agents/llm/task.py) ----------------------------------------------
    def summaries(self, obs: np.ndarray) -> list[str]:
        return [self.all_summaries[int(s)] for s in obs[:, 0]]

    def context(self, obs_row: np.ndarray, role: str) -> str:
        return self.world.read(self.state_at(obs_row), role)

    def illegal(self, role: str, obs_row: np.ndarray) -> str:
        return "" if self.world.may_act(self.state_at(obs_row), role) else f"illegal: {role} may not act here"

    def parse(self, role: str, text: str, obs_row: np.ndarray) -> tuple[str | None, str]:
        return self._try(int(obs_row[3]), role, text.strip(), obs_row)

    def tool(self, role: str, obs_row: np.ndarray) -> tuple[str | None, str]:
        state = self.state_at(obs_row)
        if not self.world.may_act(state, role):
            return None, f"illegal: {role} may not act here"
        return self._try(int(obs_row[3]), role, self.roles[role].tool(state), obs_row)

    def tool_wake(self, role: str, obs: np.ndarray) -> np.ndarray:
        return np.array([self.world.may_act(self.state_at(row), role) for row in obs], dtype=bool)

    def deliver(self, payloads: list[str | None]) -> None:
        self.payloads = payloads

    def lesson(self, obs_row: np.ndarray, role: str) -> tuple[str, str]:
        state = self.state_at(obs_row)
        return self.world.given(state, role), self.world.correct(state, role)

    def rubric(self, obs_row: np.ndarray, role: str) -> str:
        return self.world.rubric(self.state_at(obs_row), role)

    def verify(self, role: str, text: str, obs_row: np.ndarray) -> bool:
        """The world as verifier: ``text`` written by ``role`` at this state does what the correct output does (each
        acted on its own copy of the state, accepted, and the two next states equal, ``==``)."""
        state = self.state_at(obs_row)
        written, right = copy.deepcopy(state), copy.deepcopy(state)
        if self.world.act(written, role, text.strip()) or self.world.act(right, role, self.world.correct(state, role)):
            return False
        return bool(written == right)

    def canonical(self, obs_row: np.ndarray, role: str, text: str | None) -> tuple[str, frozenset, frozenset]:
        """(the problem, "stream:id"; the sub-goals achieved at this state; those achieved once ``role``'s accepted
        ``text`` is applied, the same for None: a refused reply) from the world's ``subgoals`` (diamond_sd)."""
        state = self.state_at(obs_row)
        after = copy.deepcopy(state)
        if text is not None:
            self.world.act(after, role, text)
        problem = f"{int(obs_row[1])}:{int(obs_row[2])}"
        return problem, frozenset(self.world.subgoals(state)), frozenset(self.world.subgoals(after))

    def question(self, obs_row: np.ndarray) -> tuple[str, str]:
        """The problem a world plays ("stream:id": the G rollouts of a group share it) and its correct outcome."""
        seed, pid = int(obs_row[1]), int(obs_row[2])
        reference = ""
        if self.world.has_correct():
            reference = self.world.correct(copy.deepcopy(self.world.start(self.problem(seed, pid))), None)
        return f"{seed}:{pid}", reference


class TextBatch(World):
    """B states of a text world in lockstep (module docstring); ``fixed``: held-out or validation problem ids."""

    def __init__(self, board: TextBoard, seed: int, horizon: int, fixed: np.ndarray | None = None):
        self.board, self.seed, self.horizon, self.fixed = board, seed, horizon, fixed
        self.serial = 0
        self.reset(1, np.random.default_rng(0))

    def with_problems(self, problems: np.ndarray) -> "TextBatch":
        """A batch that plays ``problems`` (ids of this batch's stream) in order: a skill evolver's probe of the
        training stream (agents/llm/edit_pass.py)."""
        return TextBatch(self.board, self.seed, self.horizon, fixed=np.asarray(problems))

    def reset(self, batch: int, rng: np.random.Generator) -> None:
        if self.fixed is not None:
            self.pid = np.resize(self.fixed, batch)
        else:  # G consecutive worlds on one problem (group-relative learning)
            self.pid = np.repeat(rng.integers(2**31, size=-(-batch // self.group)), self.group)[:batch]
        world = self.board.world
        self.states = [copy.deepcopy(world.start(self.board.problem(self.seed, int(p)))) for p in self.pid]
        self.turn = np.zeros(batch, dtype=np.int64)
        self.board.episodes += 1  # one count for training, held-out and validation batches
        self.serial = self.board.episodes

    def observe(self) -> np.ndarray:
        self.board.current, self.board.pending = self, {}
        B = len(self.states)
        stage = [self.board.world.stage(s) for s in self.states]
        return np.stack([np.asarray(stage, dtype=np.int64), np.full(B, self.seed), self.pid, np.arange(B),
                         np.full(B, self.serial), self.turn], axis=1)

    def step(self, actions: np.ndarray, acting: np.ndarray):
        world, board = self.board.world, self.board
        for b in np.flatnonzero(acting & (actions >= 0)).tolist():
            role, self.states[b] = board.pending.pop(b)  # the role that wrote it (a policy may hold a subset of roles)
            board.record(self.serial, b, role, board.payloads[b])
            self.turn[b] += 1
        done = np.array([world.done(s) for s in self.states], dtype=bool)
        reward = np.array([float(world.reward(s)) if d else 0.0 for s, d in zip(self.states, done)])
        return reward, done

    def credit_signals(self, obs: np.ndarray, actions: np.ndarray, b: int, steps: np.ndarray) -> dict:
        """The world's ``credit_signals``, one value per step, from the states its observations saw (replayed
        from the move log) and the role that moved each (the log's entry at the step's turn); where the world
        pairs (``TextWorld.pair``), ``paired`` [T+1, 2]: each state's standing submission checked against its
        own problem and against the pair."""
        world = self.board.world
        if not world.signals():
            return {}
        states = [self.board.state_at(row) for row in obs]
        out = {}
        if world.credit_signals:
            moves = self.board.moves.get((int(obs[0][4]), b), [])
            roles = [moves[int(row[5])][0] if int(row[5]) < len(moves) else "" for row in obs[:-1]]
            out = world.episode_signals(states, roles)
        if world.has_pair():
            seed, pid = int(obs[0][1]), int(obs[0][2])
            own, other = self.board.problem(seed, pid), self.board.paired(seed, pid)
            out["paired"] = np.array([[world.check(s, own), world.check(s, other)] for s in states],
                                     dtype=np.float64).reshape(len(states), 2)
        return out

    def snapshot(self) -> list[tuple[int, object, int]]:
        """Each world's (problem id, a deep copy of its state, its turn count) now."""
        return [(int(p), copy.deepcopy(s), int(n)) for p, s, n in zip(self.pid, self.states, self.turn)]

    def restore(self, state: list, src: np.ndarray, dst: np.ndarray) -> None:
        """Worlds ``dst`` take the problem, state (a copy each) and turn count ``src`` had in ``state``, and src's
        moves up to that turn as their own log: :meth:`TextBoard.state_at` replays a branch's rows to its states."""
        for s, d in zip(np.asarray(src).tolist(), np.asarray(dst).tolist()):
            pid, kept, turns = state[s]
            self.pid[d], self.states[d], self.turn[d] = pid, copy.deepcopy(kept), turns
            self.board.copy_log(self.serial, s, d, turns)

    @property
    def solved(self) -> np.ndarray:
        world = self.board.world
        return np.array([world.done(s) and bool(world.solved(s)) for s in self.states], dtype=bool)

    def state_dict(self) -> dict:
        return {"serial": self.board.episodes, "moves": [(k, list(v)) for k, v in self.board.moves.items()]}

    def load_state_dict(self, state: dict) -> None:
        self.board.episodes = state["serial"]
        self.board.moves = collections.OrderedDict((tuple(k), list(v)) for k, v in state["moves"])
