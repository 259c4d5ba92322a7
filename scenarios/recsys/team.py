"""``RecsysTeam``: the team mode as a Mesa model; one ``step()`` is one evolution iteration.

One agent per role (recall, rank, rerank) runs the library. Each step samples
Q = ``market.batch / agents.group`` question users and every arm
(:mod:`scenarios.recsys.evolve`) runs the same G rollouts per question, then,
every ``skills.every`` steps, diagnoses, edits and gates its own library. No
money moves in this mode: the ledger stays empty (its hash is the empty log's),
and the episode rows of the run database hold the main arm's rollouts with
``reward`` = NDCG@k x 10^6.

Arms: ``skills.credit`` is the main arm (its library is named by the
run id); ``plant_harmful > 0`` adds the ``grse`` and ``presence`` arms, and
``compare`` adds ``random`` and ``random-capped``. Their libraries are
``<run id>-<arm>``. The budget is gated edits: beside a ``grse`` arm, the
``presence`` and ``random`` arms gate at most as many edits per iteration as
it did (the same number of validation runs and rewrites); ``random-capped``
gates ``skills.max_edits`` every pass, as does an arm without a grse arm beside it.

Skill libraries live in the run database, so the runner hands the model its
store (:meth:`attach`); a resumed run first removes the library rows written
after its checkpoint, so it ends as the uninterrupted run would.
"""

from __future__ import annotations

import mesa
import numpy as np

from market.agent import Trader
from market.ledger import Ledger
from market.model import RoundLog
from market.population import Population
from market.protocols import Economy
from scenarios.recsys import harm, learned_recall, seeds
from scenarios.recsys.data import QUESTION, TEST, VALIDATION
from scenarios.recsys.evolve import Arm, last_pass, rounds
from scenarios.recsys.ranking import coverage
from scenarios.recsys.pipeline import ROLES, Compiled
from scenarios.recsys.world import load
from skills import SkillLibrary
from skills.catalogue import marks as marks_of
from skills.catalogue import truncate

ARMS = ("grse", "presence", "random", "random-capped")
MATCHED = ("presence", "random")  # with a grse arm beside them, they gate as many edits as it did


def arm_names(exp) -> list[str]:
    """The main arm (``skills.credit``) first (a random main arm has no grse budget to match: it is random-capped)."""
    cfg, credit = exp.scenario, exp.skills.credit
    names = [credit if credit != "random" else "random-capped"]
    if cfg.plant_harmful:
        names += ["grse", "presence"]
    if cfg.compare:
        names += list(ARMS)
    return list(dict.fromkeys(names))


class RecsysTeam(mesa.Model, Economy):
    def __init__(self, exp):
        super().__init__(rng=exp.run.seed)
        self.exp, self.cfg, self.skills = exp, exp.scenario, exp.skills
        self.world_data = load(self.cfg, exp.run.seed)
        self.learned = learned_recall.for_run(exp, self.world_data)  # trained after each step (agents.objective = ca_pg)
        self.questions_per_step = exp.market.batch // exp.agents.group
        self.rounds = rounds(exp)  # the last one's edit pass is the run's last (evolve.last_pass)
        self.population = Population(capacity=len(ROLES) + 1)
        self.ledger = Ledger(self.population)
        rows = self.population.allocate(len(ROLES))
        self.population.ids[rows] = rows
        self.population.alive[rows] = True
        self.traders = {int(r): Trader(self, int(r), int(r)) for r in rows}
        self.role_agents = {role: f"{role}-agent" for role in ROLES}
        self._births = [{"agent_id": int(r), "parent_id": -1, "born_episode": 0, "skill": role}
                        for r, role in zip(rows, ROLES)]
        self.arm_names = arm_names(exp)
        self.arms: dict[str, Arm] = {}
        self.counts = {name: {"accepted": 0, "rejected": 0} for name in self.arm_names}
        self.initial: dict | None = None
        self.episodes_done = 0
        self.last_round: RoundLog | None = None
        self._marks: dict[str, tuple[int, int]] | None = None
        self._arm_states: dict[str, dict] = {}
        self.datacollector = mesa.DataCollector(model_reporters={
            "validation_ndcg": lambda m: m.score(m.main, VALIDATION) if m.arms else float("nan")})

    @property
    def main(self) -> str:
        return self.arm_names[0]

    # ------------------------------------------------------------ the runner's hook
    def attach(self, store) -> None:
        """Open (or seed) every arm's library in the run database; on resume, drop rows past the checkpoint."""
        for name in self.arm_names:
            library = SkillLibrary(store.engine, store.run_id if name == self.main else f"{store.run_id}-{name}")
            truncate(library, (self._marks or {}).get(name, (0, 0)))
            if not library.versions():
                seeds.write_start(library, self.cfg, self.world_data,
                                  (learned_recall.SKILL,) if self.learned is not None else ())
            credit = "random" if name.startswith("random") else name
            self.arms[name] = Arm(credit, library, self.world_data.pipeline, self.cfg, self.skills, self.exp.agents.group, self.role_agents)
            if name in self._arm_states:
                self.arms[name].load_state_dict(self._arm_states[name])
        if self.initial is None:
            skills = self.arms[self.main].library.current()
            self.initial = self.report(skills)
            if self.cfg.plant_harmful:  # each planted skill's cost on this world, before any edit (harm.py)
                self.initial["planted_harm"] = harm.measure(self.world_data, skills, seeds.planted(
                    self.cfg.plant_harmful, self.cfg.harm), self.skills.confidence)

    # ------------------------------------------------------------ one iteration
    def step(self) -> None:
        pool = self.world_data.data.users(QUESTION)
        questions = self.rng.choice(pool, size=self.questions_per_step, replace=self.questions_per_step > pool.size)
        seed = int(self.rng.integers(2**62))
        iterations = {}
        due = self.steps % self.skills.every == 0  # an edit pass this step (mesa counts steps from 1)
        final = last_pass(self.steps, self.skills.every, self.rounds)
        for name in sorted(self.arm_names, key=lambda n: n != "grse"):  # grse first: the others match its budget
            budget = self.skills.max_edits if due else 0
            if name in MATCHED and "grse" in iterations:
                budget = iterations["grse"].accepted + iterations["grse"].rejected
            iterations[name] = it = self.arms[name].iterate(questions, seed, budget, final)
            self.counts[name]["accepted"] += it.accepted
            self.counts[name]["rejected"] += it.rejected
        if self.learned is not None:  # every arm ran this step's recall; the next step's is trained on its questions
            self.learned.update(questions)
        main = iterations[self.main]
        ids = self.episodes_done + np.arange(main.users.size)
        episodes = [{"episode": int(e), "success": bool(n > 0), "steps": len(ROLES), "reward": int(round(n * 1e6)),
                     "population": len(ROLES)} for e, n in zip(ids, main.ndcg)]
        self.episodes_done += main.users.size
        self.last_round = RoundLog(self.ledger.flush(), episodes, self._births, [])
        self._births = []
        self.datacollector.collect(self)

    # ------------------------------------------------------------ scores
    def score(self, arm: str, group: int) -> float:
        users = self.world_data.data.users(group)
        return float(self.arms[arm].evaluate(self.arms[arm].library.current(), users).mean())

    def final(self, arm: str) -> dict:
        return self.report(self.arms[arm].library.current())

    def report(self, skills) -> dict:
        return report(self.world_data, skills)

    # ------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        marks = {name: marks_of(arm.library) for name, arm in self.arms.items()}
        return {"rng": self.rng.bit_generator.state, "random": self.random.getstate(),
                "episodes_done": self.episodes_done, "steps": self.steps, "counts": self.counts,
                "initial": self.initial, "marks": marks, "population": self.population.state_dict(),
                "arms": {name: arm.state_dict() for name, arm in self.arms.items()},
                "validation_ndcg": list(self.datacollector.model_vars["validation_ndcg"]),
                "learned": None if self.learned is None else self.learned.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore before :meth:`attach` (which then trims the libraries to the checkpoint's marks)."""
        self.rng.bit_generator.state = state["rng"]
        self.random.setstate(state["random"])
        self.episodes_done, self.steps = state["episodes_done"], state["steps"]
        self.counts, self.initial, self._marks = state["counts"], state["initial"], state["marks"]
        self.population.load_state_dict(state["population"])
        self._arm_states = state["arms"]
        self.datacollector.model_vars["validation_ndcg"] = list(state["validation_ndcg"])
        if self.learned is not None:
            self.learned.load_state_dict(state["learned"])
        self._births = []


def report(world_data, skills) -> dict:
    """NDCG@k, Recall@50 and coverage of a set of skills on the test users (and NDCG@k on validation)."""
    pipe, data = world_data.pipeline, world_data.data
    lib = Compiled.of(skills)
    out = pipe.run(lib, data.users(TEST))
    scores = {"ndcg": float(out.ndcg.mean()), "recall50": float(out.recall50.mean()),
              "coverage": coverage(out.final, data.n_items),
              "validation_ndcg": float(pipe.evaluate(lib, data.users(VALIDATION)).mean())}
    if pipe.learned is not None:  # the trained source on its own: test items among its top ``candidates``
        scores["learned_hit_rate"] = pipe.learned.hit_rate(data.users(TEST))
    return scores
