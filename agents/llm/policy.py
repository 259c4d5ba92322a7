"""LLM agents: prompts over one shared frozen model, driven by the market's Policy protocol.

After Economy of Minds: every agent is (role, skills, wake threshold). The role is the *frozen* part of its prompt
(what it is, its hard constraints, its yes/no wake-up question): births never touch it. The skills are the
*trainable* part: a list of skills of the run's library (skills/library.py; one skill per distinct role and line,
named as skills/catalogue.py says), whose bodies are text lines the prompt carries (a line ``example: <input> =>
<output>`` is shown to the model as a worked example). Tool agents (e.g. a calculator) have a role but no LLM: the
task computes their action exactly.

Wake-up: the LLM is asked the role's yes/no question about a short summary of the state, with the agent's skills
(its yes/no worked examples included) in the prompt; the score is log P(yes) - log P(no) of the first token, centred
on the agent's own mean over all of the task's summaries (a weak model's yes-bias differs from prompt to prompt far
more than between states), and the agent wakes where it exceeds its threshold. The threshold is inherited with
noise, so the market selects it along with the skills. ``wake = False`` (PolicyConfig) turns the question off: every
LLM agent wakes, unscored.

Lockstep: each market step makes at most two backend calls (agents/llm/calls.py), each one batch over all B worlds
and all agents that need it: the wake-up scoring pass (only the (agent, state-summary) pairs not seen before; scores
are cached until the model's weights change, since an agent's prompt changes only when it is reborn) and one
generation for all winners.

Robustness: a completion that is empty, over-long (hit its token cap), timed out,
an engine error, or that the task's parser refuses (unparsable or illegal) is an
*invalid action*: recorded with its raw text, and ``act`` returns -1 for that
world, which the market treats as a forfeit (the winner pays nothing and is paid
nothing). The forfeiting agent then sleeps on that same observation, so the next
bidder gets the state (greedy decoding would only repeat the failure).

Births rewrite skills with the same LLM (agents/llm/births.py), with the
rewrite prompts and worked demonstrations of the world (agents/llm/prompts.py).
The roles and the text task the policy reads states through are
agents/llm/task.py's (re-exported here).

The library (agents/llm/lines.py): the pool's lines are its first skills; :meth:`LLMPolicy.attach`
(called by the runner with the run's store) writes them to the run database,
under the run's id, and every birth writes its new skills there once the round's
births are done, never mid-round. Checkpoints carry the library's marks, and a
resumed run first drops the rows written after its checkpoint. A policy never
attached (tests, baselines) names its skills the same way and writes nothing.
"""

from __future__ import annotations

import collections
import contextlib
from dataclasses import asdict

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass as config_dataclass

from agents.backends.base import Backend, Completion, Prompt
from agents.backends.factory import label
from agents.llm.births import Births
from agents.llm.calls import ModelCalls
from agents.llm.lines import SkillLines
from agents.llm.prompts import Prompts
from agents.llm.task import Role, TextTask, status_of
from agents.wake_watch import WakeWatch
from market.protocols import Policy
from skills.catalogue import Catalogue
from market.strict import STRICT

__all__ = ["LLMPolicy", "PolicyConfig", "Role", "TextTask", "status_of"]


@config_dataclass(config=STRICT)
class PolicyConfig:
    lockstep: bool = True
    """False: one backend call per prompt (the benchmark's sequential baseline only)."""
    temperature: float = Field(0.0, ge=0)
    """Acting temperature (0: greedy, deterministic)."""
    rewrite_temperature: float = Field(0.7, ge=0)
    """Temperature of skill rewrites at births (seeded from the model's RNG)."""
    rewrite_tokens: int = Field(48, ge=8)
    """Most tokens a skill rewrite at a birth may generate."""
    max_skills: int = Field(10, ge=1)
    """Skill lines an agent keeps; an added line beyond this drops the oldest."""
    wake: bool = True
    """False: wake-up off. Every LLM agent bids wherever its role may act, and the yes-vs-no scoring pass is not run
    (its tokens, which the agents pay for, would buy a decision nobody reads); the thresholds below go unused."""
    theta_low: float = -1.0
    """Lower end of newcomers' wake thresholds (see ``theta_high``)."""
    theta_high: float = 0.3
    """Newcomers' wake thresholds are uniform in [theta_low, theta_high): an agent wakes where its
    yes-vs-no log-odds exceed its threshold."""
    theta_sigma: float = Field(0.1, ge=0)
    """Children's thresholds: the parent's plus Normal(0, theta_sigma)."""
    memo: int = Field(4096, ge=0)
    """Greedy completions remembered (identical prompt, identical answer: not asked twice)."""
    max_records: int = Field(10_000, ge=1)
    """Invalid actions and malformed rewrites kept (the oldest are dropped; counts are kept in full)."""


class LLMPolicy(SkillLines, Births, ModelCalls, WakeWatch, Policy):
    def __init__(self, backend: Backend, task: TextTask, roles: list[Role], pool: dict[str, list[tuple[float, list[str]]]],
                 weights: list[float] | None = None, cfg: PolicyConfig = PolicyConfig(), seed_agents=(),
                 prompts: Prompts | None = None, engines: dict[str, Backend] | None = None):
        """``pool[role]``: groups (p, skill lines); a random newcomer of that role holds each line of a
        group with probability p, independently, in order; ``weights``: how often
        each role is drawn for newcomers; ``seed_agents``: (role, skills, theta) given to the first
        newborns, in order (None: drawn at random as for any newcomer); ``prompts``: the rewrite and
        diagnoser prompts (default: the task's ``prompts``, else the generic ones, agents/llm/prompts.py);
        ``engines``: role name -> the engine its agents call, where it is not ``backend`` (the shared one, which
        also serves the framework's own asks: diagnoses, skill edits)."""
        self.backend, self.task, self.roles, self.cfg = backend, task, list(roles), cfg
        self.prompts = (prompts or getattr(task, "prompts", None) or Prompts()).resolve(self.roles, pool)
        self.role_index = {r.name: i for i, r in enumerate(self.roles)}
        self.engines = {self.role_index[name]: e for name, e in (engines or {}).items() if name in self.role_index}
        self.pool = pool
        w = np.asarray(weights if weights is not None else np.ones(len(roles)), dtype=float)
        self.weights = w / w.sum()
        self.role = np.zeros(0, dtype=np.int64)  # -1: an empty row
        self.theta = np.zeros(0)
        self.version = np.zeros(0, dtype=np.int64)
        self.spent = np.zeros(0, dtype=np.int64)  # [N] tokens each row's calls used since the market last charged
        self.spent_by: dict[str, np.ndarray] = {}  # the same, per model (factory.label): what the market prices
        self.skills: list[tuple[str, ...]] = []  # [N] the names of each row's skills (catalogue.lines: their text)
        self.versions: list[dict] = []  # every skill set ever held: id, parent, role, skills (names), edit
        self.catalogue = Catalogue()
        """Every skill line as a skill of the run's library; the pool's lines first, in order."""
        for name, groups in pool.items():
            for _, group in groups:
                for line in group:
                    self._name(name, line, {"origin": "pool"})
        self._population = None  # the market's population once attached: agent ids for the births' edits
        self.memo: dict[Prompt, Completion] = {}  # greedy prompt -> its completion (bounded, oldest out)
        self.scores: dict[tuple[int, str, str], float] = {}  # (role, skill rules, summary) -> log-odds
        self.recent: dict[int, tuple[tuple, str]] = {}  # row -> (observation, raw text) of its last action
        self.records: collections.deque = collections.deque(maxlen=cfg.max_records)
        self.counts = collections.Counter()
        self.bench: dict[tuple, set[int]] = {}  # observation -> rows that forfeited on it
        self.only = None
        """Solo evaluation: world b is played by row only[b] alone at every step; [B, S]: by row only[b, s]
        in the states of the task's summary s (one agent's capabilities split by stage: a complete agent); a
        function of the observations -> [B] rows: by the row it names for each state."""
        self._seed_agents = list(seed_agents)
        self.sampling_seed = 0
        """The run's seed (set by the scenario registry): a sampled action's seed mixes it with the action count and
        world, so two seeds' runs sample independently (same seed, same samples)."""
        self.explore_temperature: float | None = None
        """Set by a learner of the LM's weights (agents/learners/policy.py): training rounds' completions are
        sampled at this temperature and kept in ``generations`` for the update; evaluation stays greedy."""
        self.generations: list[list[tuple[int, int, Prompt, Completion, str | None]]] = []
        """Per act() call while exploring: (world, row, prompt, completion, the action it parsed to or None)
        of every generation."""
        self._evaluating = False
        self.heldout_memo: dict | None = None
        """The last held-out measurement and the fingerprint of the state it read (agents/heldout.py)."""
        self.evolver = None
        """Skill evolution (agents/llm/edit_pass.py), when the run's ``[skills]`` edits the library: it reads each
        training round's ``steps`` and decides which of an acting row's skills its prompt carries."""
        self.steps: list[dict[int, tuple]] = []
        """Per act() call of a round the skill evolver reads (agents/llm/edit_pass.py ``contrasting``): world -> (row,
        status, output, skills used)."""
        self._step: dict[int, tuple] | None = None  # the act() call's entry of ``steps`` being filled
        self.base_weights = contextlib.nullcontext
        """A context in which the backend runs the untrained model (the baselines'); a learner of the
        LM's weights replaces it (agents/learners/lm_grpo.py)."""

    @property
    def space(self):
        """The task's bounded features for learned bids (a RuleSpace: its ``space``), None if it has none."""
        return getattr(self.task, "space", None)

    @property
    def state_text(self):
        """The task's state summaries, which text bid features embed (market/protocols.py Policy.state_text)."""
        return self.task.summaries

    @property
    def recording(self) -> bool:
        """Whether act() is playing a training round (not held-out, baseline or gate episodes): what learners
        record from it is this round's."""
        return not self._evaluating

    @contextlib.contextmanager
    def evaluating(self):
        """Held-out and baseline episodes: greedy completions at the configured temperature, none recorded."""
        self._evaluating, before = True, self._evaluating
        try:
            yield self
        finally:
            self._evaluating = before

    def _wake_prompt(self, role: int, skills: str, summary: str) -> Prompt:
        r = self.roles[role]
        return Prompt(f"{r.frozen} Answer yes or no.", skills, f"{summary} {r.wake}", max_tokens=1)

    def action_prompt(self, b: int, row: int, obs_row: np.ndarray, temperature: float = 0.0, seed: int = 0) -> Prompt:
        """What row's agent is asked when it acts in world b: its role's frozen part, the acting skills it
        carries there, the task's context of the state, its role's token cap."""
        role = self.roles[self.role[row]]
        read = self.task.context(obs_row, role.name)
        skills = "\n".join(self.catalogue.lines[n] for n in self._acting_skills(b, row, read))
        return Prompt(role.frozen, skills, read, max_tokens=role.max_tokens,
                      stop=role.stop, temperature=temperature, seed=seed)

    # --- the market's Policy protocol ----------------------------------------
    def eligible(self, obs: np.ndarray) -> np.ndarray:
        """[B, N] wake-up. LLM agents: one batched scoring pass over the (agent, state summary) pairs not scored
        before; an agent wakes where its yes-vs-no log-odds, centred on its own mean over all of the task's
        summaries (a weak model's yes-bias differs per prompt), exceed its threshold (under ``wake = False`` every
        LLM agent wakes, unscored). A score the backend could not give (NaN) is no opinion: no wake-up there, the
        mean is over the others, and it is not cached (asked again next step). Tool agents wake by the task's rule.
        An agent whose role could not act legally in a state (``task.illegal``: an extractor once an expression
        exists) does not wake there: winning it would only waste the world's step on a certain forfeit. An agent
        that forfeited on an observation stays asleep on that same observation."""
        B, N = len(obs), self.role.size
        wake = np.zeros((B, N), dtype=bool)
        if self.only is not None:  # alone, an agent acts at every step
            only = self.only(obs) if callable(self.only) else self.only
            if only.ndim == 2:
                stage = {summary: i for i, summary in enumerate(self.task.all_summaries)}
                only = only[np.arange(B), [stage[summary] for summary in self.task.summaries(obs)]]
            wake[np.arange(B), only] = True
        else:
            for i, role in enumerate(self.roles):
                rows = np.flatnonzero(self.role == i)
                if role.tool and rows.size:
                    wake[:, rows] = self.task.tool_wake(role.name, obs)[:, None]
            llm = [r for r in np.flatnonzero(self.role >= 0).tolist() if not self.roles[self.role[r]].tool]
            if llm and not self.cfg.wake:
                wake[:, llm] = True
            elif llm:
                summaries, every = self.task.summaries(obs), list(self.task.all_summaries)
                keys = {r: (int(self.role[r]), self._skills(r, wake=True)) for r in llm}
                missing = sorted({(*keys[r], s) for r in llm for s in every} - self.scores.keys())
                owner = {}  # each missing score's first row (it pays for the scoring)
                for r in llm:
                    for s in every:
                        owner.setdefault((*keys[r], s), r)
                scores = self._score([self._wake_prompt(*k) for k in missing], [owner[k] for k in missing])
                fresh = dict(zip(missing, scores.tolist()))
                self.scores.update((k, v) for k, v in fresh.items() if np.isfinite(v))  # a failed score: asked again
                table = np.array([[self.scores.get((*keys[r], s), fresh.get((*keys[r], s))) for s in every]
                                  for r in llm], dtype=float)  # [n, S], NaN: no opinion
                known = np.isfinite(table)
                count = np.maximum(known.sum(axis=1, keepdims=True), 1)
                mean = np.where(known, table, 0.0).sum(axis=1, keepdims=True) / count
                centred = np.where(known, table - mean, -np.inf)  # no opinion: no wake-up
                column = {s: i for i, s in enumerate(every)}
                wake[:, llm] = centred[:, [column[s] for s in summaries]].T > self.theta[llm][None, :]
        if self.only is None:  # a role that cannot act legally here does not bid for the world
            for i, role in enumerate(self.roles):
                rows = np.flatnonzero(self.role == i)
                if rows.size and not role.tool:
                    blocked = np.array([bool(self.task.illegal(role.name, row)) for row in obs])
                    wake[np.ix_(blocked, rows)] = False
                    if not blocked.all():
                        self._may_act(i)
        for b in range(B):
            for row in self.bench.get(tuple(obs[b].tolist()), ()):
                wake[b, row] = False
        self._saw_wake(wake)
        return wake

    def learn(self, model) -> None:
        """The round's end: roles that never woke in it (agents/wake_watch.py), then skill evolution's pass."""
        self._round_woke(model)
        SkillLines.learn(self, model)

    def act(self, obs: np.ndarray, winners: np.ndarray) -> np.ndarray:
        B = len(winners)
        actions = np.full(B, -1, dtype=np.int64)
        payloads: list[str | None] = [None] * B
        calls: list[tuple[int, int, Prompt]] = []
        exploring = self.explore_temperature is not None and not self._evaluating
        self._step = {} if self.evolver is not None and self.evolver.contrasting(self._evaluating) else None
        temperature = self.explore_temperature if exploring else self.cfg.temperature
        for b in np.flatnonzero(winners >= 0).tolist():
            row = int(winners[b])
            role = self.roles[self.role[row]]
            if role.tool:
                payload, reason = self.task.tool(role.name, obs[b])
                self._settle(b, row, obs[b], Completion(""), payload, reason, actions, payloads)
                continue
            illegal = self.task.illegal(role.name, obs[b])
            if illegal:  # no output could be legal here: forfeit without spending a generation
                self._settle(b, row, obs[b], Completion(""), None, illegal, actions, payloads)
                continue
            seed = np.random.SeedSequence([self.sampling_seed, self.counts["actions"], b]).generate_state(1)[0]
            calls.append((b, row, self.action_prompt(b, row, obs[b], temperature, seed=int(seed) >> 1)))
        completions = self.generate([p for _, _, p in calls], [row for _, row, _ in calls])
        for (b, row, _), done in zip(calls, completions):
            role = self.roles[self.role[row]]
            payload, reason = self._check(done)
            if payload is not None:
                payload, reason = self.task.parse(role.name, done.text, obs[b])
            self._settle(b, row, obs[b], done, payload, reason, actions, payloads)
        if exploring:
            self.generations.append([(b, row, p, done, payloads[b]) for (b, row, p), done in zip(calls, completions)])
        self.task.deliver(payloads)
        if self._step is not None:
            self.steps.append(self._step)
        return actions

    @staticmethod
    def _check(done: Completion) -> tuple[str | None, str]:
        """Engine-level failures, before the task's parser sees the text."""
        if done.finish in ("timeout", "error"):
            return None, done.finish + (f": {done.error}" if done.error else "")
        if done.finish == "length":
            return None, "over-long (hit the token cap)"
        if not done.text.strip():
            return None, "empty"
        return done.text, ""

    def _settle(self, b, row, obs_row, done, payload, reason, actions, payloads) -> None:
        self.counts["actions"] += 1
        self.recent[row] = (tuple(np.asarray(obs_row).tolist()), done.text)
        if self._step is not None:  # a node of world b's trace (skills/workflow.py)
            role = self.roles[self.role[row]]
            used = () if role.tool else tuple(self._acting_skills(b, row, self.task.context(obs_row, role.name)))
            self._step[b] = (row, "ok" if payload is not None else status_of(done, reason), done.text, used)
        if payload is None:
            self.bench.setdefault(self.recent[row][0], set()).add(row)
            if len(self.bench) > 100_000:  # keys name the episode, so old ones never match again
                self.bench.clear()
            self.counts["invalid"] += 1
            self.records.append({"kind": "invalid_action", "row": row, "role": self.roles[self.role[row]].name,
                                 "raw": done.text, "reason": reason, "logprob": done.logprob})
            return
        actions[b] = self.role[row]
        payloads[b] = payload

    # --- population -----------------------------------------------------------
    def resize(self, capacity: int) -> None:
        old = self.role.size
        if capacity <= old:
            return
        grow = capacity - old
        self.role = np.concatenate([self.role, np.full(grow, -1, dtype=np.int64)])
        self.theta = np.concatenate([self.theta, np.zeros(grow)])
        self.version = np.concatenate([self.version, np.full(grow, -1, dtype=np.int64)])
        self.spent = np.concatenate([self.spent, np.zeros(grow, dtype=np.int64)])
        self.spent_by = {m: np.concatenate([t, np.zeros(grow, dtype=np.int64)]) for m, t in self.spent_by.items()}
        self.skills += [()] * grow

    def new_version(self, row: int, skills: tuple[str, ...], parent: int, edit: str) -> None:
        """``skills``: names in the catalogue."""
        self.skills[row] = skills
        self.version[row] = len(self.versions)
        self.versions.append({"id": len(self.versions), "parent": parent, "role": self.roles[self.role[row]].name,
                              "skills": list(skills), "edit": edit})

    def spawn(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        """Seed agents first (in order), then random newcomers: a random role, a random draw from
        its skill pool, a random wake threshold."""
        for row in rows.tolist():
            name, skills, theta = self._seed_agents.pop(0) if self._seed_agents else (None, None, None)
            self.role[row] = self.role_index[name] if name else rng.choice(len(self.roles), p=self.weights)
            role = self.roles[self.role[row]].name
            if skills is None:
                skills = []
                for p, group in self.pool.get(role, []):
                    skills += [line for line, keep in zip(group, rng.random(len(group)) < p) if keep]
                skills = skills[: self.cfg.max_skills]
            self.theta[row] = rng.uniform(self.cfg.theta_low, self.cfg.theta_high) if theta is None else theta
            names = tuple(self._name(role, line, {"origin": "seed"}) for line in skills)
            self.new_version(row, names, -1, "newcomer")
        self.catalogue.flush()  # births end a round: its new skills go to the library now

    def describe(self, rows: np.ndarray) -> list[str]:
        out = []
        for row in np.asarray(rows).tolist():
            role = self.roles[self.role[row]].name if self.role[row] >= 0 else "-"
            skills = " | ".join(self.lines(row)) or "(no skills)"
            out.append(f"{role} v{self.version[row]} theta={self.theta[row]:.2f}: {skills}")
        return out

    # --- checkpointing ---------------------------------------------------------
    def state_dict(self) -> dict:
        return {"role": self.role.copy(), "theta": self.theta.copy(), "version": self.version.copy(),
                "skills": list(self.skills), "versions": [dict(v) for v in self.versions],
                "scores": dict(self.scores), "memo": [(asdict(p), asdict(c)) for p, c in self.memo.items()],
                "bench": {k: set(v) for k, v in self.bench.items()}, "recent": dict(self.recent),
                "counts": dict(self.counts), "seed_agents": list(self._seed_agents), "spent": self.spent.copy(),
                "spent_by": {m: t.copy() for m, t in self.spent_by.items()},
                "catalogue": self.catalogue.state_dict(),
                "evolver": None if self.evolver is None else self.evolver.state_dict()}  # data only: market/checkpoint.py

    def load_state_dict(self, state: dict) -> None:
        self.role, self.theta, self.version = state["role"].copy(), state["theta"].copy(), state["version"].copy()
        self.skills, self.versions = list(state["skills"]), [dict(v) for v in state["versions"]]
        self.scores, self.recent = dict(state["scores"]), dict(state["recent"])
        self.memo = {Prompt(**p): Completion(**c) for p, c in state["memo"]}
        self.bench = {k: set(v) for k, v in state["bench"].items()}
        self.counts = collections.Counter(state["counts"])
        self._seed_agents = list(state["seed_agents"])
        self.spent = state["spent"].copy() if "spent" in state else np.zeros(self.role.size, dtype=np.int64)
        self.spent_by = ({m: t.copy() for m, t in state["spent_by"].items()} if "spent_by" in state else
                         {label(self.backend): self.spent.copy()} if self.spent.any() else {})  # one model before
        if self.evolver is not None:
            self.evolver.load_state_dict(state["evolver"])
        if "catalogue" in state:
            self.catalogue.load_state_dict(state["catalogue"])
        else:  # a checkpoint from before the library: its skills are lines; name them (the pool's are named)
            self.skills = [tuple(self._name(self.roles[r].name, line, {"origin": "checkpoint"}) for line in lines)
                           if r >= 0 else () for r, lines in zip(self.role.tolist(), self.skills)]
