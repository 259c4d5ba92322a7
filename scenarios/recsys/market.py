"""Market mode: several agents per role bid for each request; payments flow upstream; skills evolve twice.

The workflow is an episode of :class:`market.MarketModel` with three steps,
one per role. At step s the live agents of role s bid (the market's bid
scheme), the auction clears (``softmax`` by default, so the G rollouts of a
question meet different agents), and the winner runs *its* skills: each agent
holds a subset of its role's skills in the shared library. Bucket brigade: the
rank winner pays its price to the recall winner, the rerank winner to the rank
winner, the recall winner to the house; the world's reward (NDCG@k of the
list, times ``market.reward_scale``) goes to the rerank winner, the final
owner. Every credit moves through :mod:`market.ledger`, so the run's money is
exact and replayable. Rent, bankruptcy and births are the market's own.

Skills evolve in two ways:

* **births**: a child inherits its parent's role and skills with one change (a
  skill of the role added or dropped); a random newcomer holds a random half
  of its role's skills;
* **group-relative edits**: every ``skills.every`` rounds the arm of
  ``skills.credit`` (GRSE by default; scenarios/recsys/evolve.py) fits credit on
  the rounds' rollouts, with (agent, skill) columns, and edits the shared
  library through the same diagnosis and gate as team mode. The gate scores a
  library with the team the market would field: each role's highest bidder.
"""

from __future__ import annotations


import numpy as np

from agents.rules import RuleSpace
from market import MarketModel
from market.protocols import Policy
from market.protocols import World as MarketWorld
from market.population import HOUSE_ROW
from scenarios.recsys import learned_recall, seeds
from scenarios.recsys import pipeline as P
from scenarios.recsys.data import QUESTION
from scenarios.recsys.evolve import Arm, last_pass, rounds
from scenarios.recsys.team import arm_names, report
from skills.catalogue import marks as marks_of
from skills.catalogue import truncate
from scenarios.recsys.world import World, load
from skills import Rollout, SkillLibrary

ROLES = P.ROLES


class RolePolicy(Policy):
    """The market's Policy: per row a role (-1: none), the names of the skills it holds, and its bid.

    Bids (``market.bid_scheme = "policy"``) are the agents' own, in credits: a newcomer of role r
    bids ``base_bid * (1 + r)`` times a log-normal factor (downstream roles pay more, so value flows
    back up the chain), a child its parent's bid times exp(N(0, 0.1)).
    """

    def __init__(self, base_bid: float):
        self.base_bid = base_bid
        self.role = np.full(0, -1, dtype=np.int64)
        self.bid = np.zeros(0)
        self.held: list[frozenset[str]] = []
        self.catalogue: dict[str, list[str]] = {r: [] for r in ROLES}  # current skill names per role
        self.next_role = 0  # newcomers take the roles in turn

    @property
    def space(self) -> RuleSpace:
        """What a learned bid head may read: the request's stage (which is the role that bids)."""
        return RuleSpace(features=("stage",), low=(0,), high=(len(ROLES) - 1,), actions=())

    def set_library(self, skills) -> None:
        """The current library; agents forget skills that left it (pruned, merged away)."""
        self.catalogue = {r: [s.name for s in skills if s.role == r] for r in ROLES}
        names = {n for ns in self.catalogue.values() for n in ns}
        self.held = [h & names for h in self.held]

    # --- market.protocols.Policy
    def armed(self) -> np.ndarray:
        """[rows]: holds at least one current skill. An agent whose skills all left the library (pruned, merged
        away) has nothing to do in its role: it does not bid, and it is never fielded."""
        return np.fromiter(map(bool, self.held), dtype=bool, count=len(self.held))

    def eligible(self, obs: np.ndarray) -> np.ndarray:
        return (self.role[None, :] == obs[:, :1]) & self.armed()[None, :]

    def act(self, obs: np.ndarray, winners: np.ndarray) -> np.ndarray:
        return winners

    def bids(self, obs: np.ndarray) -> np.ndarray:
        return self.bid

    def resize(self, capacity: int) -> None:
        old = self.role.size
        if capacity > old:
            self.role = np.r_[self.role, np.full(capacity - old, -1, dtype=np.int64)]
            self.bid = np.r_[self.bid, np.zeros(capacity - old)]
            self.held += [frozenset()] * (capacity - old)

    def spawn(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        for row in rows.tolist():
            role = self.next_role
            self.next_role = (self.next_role + 1) % len(ROLES)
            names = self.catalogue[ROLES[role]]
            keep = [n for n in names if rng.random() < 0.5] or ([names[int(rng.integers(len(names)))]] if names else [])
            self.role[row], self.held[row] = role, frozenset(keep)
            self.bid[row] = self.base_bid * (1 + role) * float(np.exp(rng.normal(0, 0.2)))

    def inherit(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        for row, parent in zip(rows.tolist(), parents.tolist()):
            role, held = self.role[parent], set(self.held[parent])
            missing = [n for n in self.catalogue[ROLES[role]] if n not in held]
            if missing and (len(held) <= 1 or rng.random() < 0.5):
                held.add(missing[int(rng.integers(len(missing)))])
            elif len(held) > 1:
                held.discard(sorted(held)[int(rng.integers(len(held)))])
            self.role[row], self.held[row] = role, frozenset(held)
            self.bid[row] = self.bid[parent] * float(np.exp(rng.normal(0, 0.1)))

    def describe(self, rows: np.ndarray) -> list[str]:
        return [f"{ROLES[self.role[r]]} bid {self.bid[r]:.4f}: {', '.join(sorted(self.held[r]))}"
                for r in np.asarray(rows).tolist()]

    def state_dict(self) -> dict:
        return {"role": self.role.copy(), "bid": self.bid.copy(), "held": [sorted(h) for h in self.held],
                "catalogue": self.catalogue, "next_role": self.next_role}

    def load_state_dict(self, state: dict) -> None:
        self.role, self.bid = state["role"].copy(), state["bid"].copy()
        self.held = [frozenset(h) for h in state["held"]]
        self.catalogue, self.next_role = dict(state["catalogue"]), state["next_role"]


class RecsysWorld(MarketWorld):
    """B = Q x G requests in lockstep: step s is role s; the pipeline runs once all three have acted."""

    horizon = len(ROLES)

    def __init__(self, world: World, policy: RolePolicy, group_size: int, p_use: float):
        self.world, self.policy, self.G, self.p_use = world, policy, group_size, p_use
        self.lib: P.Compiled | None = None
        self.stage = 0
        self.users = np.zeros(0, dtype=np.int64)

    def reset(self, batch: int, rng: np.random.Generator) -> None:
        pool = self.world.data.users(QUESTION)
        questions = rng.choice(pool, size=batch // self.G, replace=batch // self.G > pool.size)
        self.users = np.repeat(questions, self.G)
        self.draws = rng.random((batch, max(len(self.lib.names), 1)))
        self.winner = np.full((batch, len(ROLES)), -1, dtype=np.int64)
        self.stage = 0
        self.outcome: P.Outcome | None = None

    def observe(self) -> np.ndarray:
        return np.full((self.users.size, 1), self.stage, dtype=np.int64)

    def step(self, actions: np.ndarray, acting: np.ndarray):
        self.winner[:, self.stage] = np.where(acting, actions, -1)
        self.stage += 1
        B = self.users.size
        if self.stage < len(ROLES):
            return np.zeros(B), np.zeros(B, dtype=bool)
        used = self.usage()
        self.outcome = self.world.pipeline.run(self.lib, self.users, used)
        return self.outcome.ndcg.copy(), np.ones(B, dtype=bool)

    def usage(self) -> np.ndarray:
        """[B, K]: a skill runs if the role's winner holds it, it applies, and its draw is under p_use."""
        lib = self.lib
        held = np.array([[name in h for name in lib.names] for h in self.policy.held], dtype=bool)  # [rows, K]
        held = held.reshape(len(self.policy.held), len(lib.names))
        winner = self.winner[:, [ROLES.index(role) for role in lib.roles]]  # [B, K] the winner of each skill's role
        holds = (winner >= 0) & held[np.maximum(winner, 0), np.arange(len(lib.names))]
        applicable = self.world.pipeline.applicable(lib, self.users)
        return holds & applicable & (self.draws[:, : len(lib.names)] < self.p_use)

    @property
    def solved(self) -> np.ndarray:
        return self.outcome.ndcg > 0 if self.outcome is not None else np.zeros(self.users.size, dtype=bool)


class FieldedTeam:
    """The gate's evaluation in market mode: each role played by its richest agent that holds a skill."""

    def __init__(self, model: "RecsysMarket"):
        self.model = model

    def team(self) -> dict[str, frozenset[str]]:
        m = self.model
        wealth, live = m.population.wealth, m.population.traders
        out = {}
        for r, role in enumerate(ROLES):
            rows = np.flatnonzero(live & (m.policy.unwrapped.role == r) & m.policy.unwrapped.armed())
            out[role] = m.policy.unwrapped.held[rows[np.argmax(wealth[rows])]] if rows.size else frozenset()
        return out

    def key(self):
        return tuple(sorted((r, tuple(sorted(h))) for r, h in self.team().items()))

    def chosen(self, skills) -> list:
        """The skills the fielded team holds."""
        team = self.team()
        return [s for s in skills if s.role in team and s.name in team[s.role]]

    def __call__(self, skills, users: np.ndarray) -> np.ndarray:
        return self.model.world_data.pipeline.evaluate(P.Compiled.of(self.chosen(skills)), users)


class RecsysMarket(MarketModel):
    """A MarketModel whose episodes are requests; its one arm (``skills.credit``'s) edits the library."""

    @classmethod
    def from_experiment(cls, exp) -> "RecsysMarket":
        cfg = exp.scenario
        world = load(cfg, exp.run.seed)
        roles = RolePolicy(exp.market.base_bid)
        env = RecsysWorld(world, roles, exp.agents.group, exp.skills.p_use)
        policy = roles
        if exp.market.bid_scheme == "learned":  # value heads bid for the agents (agents/learners/policy.py)
            from agents.learners.policy import LearnedPolicy

            policy = LearnedPolicy(roles, exp.agents, seed=exp.run.seed, learned_bids=True)
        model = cls(env, policy, exp.market, exp.population, seed=exp.run.seed)  # agents_per_role x roles (defaults)
        model.world_data, model.cfg_recsys, model.skills, model.group = world, cfg, exp.skills, exp.agents.group
        model.rounds = rounds(exp)  # the last one's edit pass is the run's last (evolve.last_pass)
        model.learned = learned_recall.for_run(exp, world)  # trained after each round (agents.objective = ca_pg)
        model.main = arm_names(exp)[0]  # the comparison arms (plant_harmful, compare) are team mode's
        model.arm_names = (model.main,)
        model.counts = {model.main: {"accepted": 0, "rejected": 0}}
        return model

    def __init__(self, *args, **kwargs):
        self.arms: dict[str, Arm] = {}
        self.learned = None
        self.initial: dict | None = None
        self._marks = None
        self._arm_state = None
        super().__init__(*args, **kwargs)

    # ------------------------------------------------------------ the runner's hook
    def attach(self, store) -> None:
        cfg = self.cfg_recsys
        library = SkillLibrary(store.engine, store.run_id)
        truncate(library, tuple(self._marks or (0, 0)))
        fresh = not library.versions()
        if fresh:
            seeds.write_start(library, cfg, self.world_data, (learned_recall.SKILL,) if self.learned else ())
        self.fielded = FieldedTeam(self)
        agents = {r: r for r in ROLES}
        self.arms[self.main] = arm = Arm(self.skills.credit, library, self.world_data.pipeline, cfg, self.skills, self.group, agents,
                                         evaluate=self.fielded)
        if self._arm_state is not None:
            arm.load_state_dict(self._arm_state)
        self._sync()
        if fresh and self.episodes_done == 0:
            first = np.flatnonzero(self.population.traders)
            self.policy.spawn(first, self.rng)  # the initial agents' skills: the library exists only now
            self._pending_births = [dict(b, skill=s) for b, s in zip(self._pending_births, self.policy.describe(first))]
        if self.initial is None:
            self.initial = self.final(self.main)

    def _sync(self) -> None:
        current = self.arms[self.main].library.current()
        self.policy.unwrapped.set_library(current)
        self.world.lib = P.Compiled.of(current)

    # ------------------------------------------------------------ one round
    def step(self) -> None:
        super().step()
        env, G = self.world, self.group
        out, lib = env.outcome, env.lib
        ids = self.population.ids
        groups = []
        for i in range(env.users.size // G):
            rollouts = []
            for b in range(i * G, (i + 1) * G):
                agents = {role: (f"agent-{ids[w]}" if w >= 0 else f"{role}-nobody")
                          for role, w in zip(ROLES, env.winner[b])}
                rollouts.append(Rollout(float(out.reward[b]), P.trace(out, lib, b, agents)))
            groups.append((int(env.users[i * G]), rollouts))
        due = self.steps % self.skills.every == 0  # an edit pass this round (mesa counts steps from 1)
        final = last_pass(self.steps, self.skills.every, self.rounds)
        it = self.arms[self.main].learn(groups, int(self.rng.integers(2**62)), None if due else 0, final=final)
        self.counts[self.main]["accepted"] += it.accepted
        self.counts[self.main]["rejected"] += it.rejected
        if self.learned is not None:  # the next round's recall, trained on this round's questions
            self.learned.update(env.users)
        self._sync()

    # ------------------------------------------------------------ scores
    def final(self, arm: str) -> dict:
        return report(self.world_data, self.fielded.chosen(self.arms[arm].library.current()))

    def extra_metrics(self) -> dict:
        pop = self.population
        live = np.flatnonzero(pop.traders)
        return {"population": int(live.size),
                "agents_per_role": {role: int((self.policy.unwrapped.role[live] == r).sum())
                                    for r, role in enumerate(ROLES)},
                "fielded_team": {r: sorted(h) for r, h in self.fielded.team().items()},
                "house_wealth": int(pop.wealth[HOUSE_ROW])}

    # ------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        return super().state_dict() | {"recsys": {"counts": self.counts, "initial": self.initial,
                                                  "marks": marks_of(self.arms[self.main].library),
                                                  "arm": self.arms[self.main].state_dict(),
                                                  "learned": None if self.learned is None else self.learned.state_dict()}}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        extra = state["recsys"]
        self.counts, self.initial, self._marks, self._arm_state = (extra["counts"], extra["initial"], extra["marks"],
                                                                    extra["arm"])
        if self.learned is not None:
            self.learned.load_state_dict(extra["learned"])
