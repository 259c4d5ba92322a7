"""Scenario ``recsys``: evolving the skill library of a recommendation pipeline (recall -> rank -> rerank).

A team runs a recommendation workflow on user requests; each role follows the
skills of a versioned library (rules the pipeline runs, plus the text an LLM
would read). Group-relative skill evolution (GRSE; docs: concepts/skills.md) edits
the library: G rollouts per question with stochastic skill application, team
reward (NDCG) minus the workflow penalty, group-relative credit, diagnosis,
edit, validation gate. ``mode = "market"`` instead lets several agents per role
bid for each request, with bucket-brigade payments through the ledger.

Modules, one job each::

    config.py      the [recsys] section                  world.py      data + signals + pipeline of a run
    synthetic.py   the generated world (known truth)     movielens.py  u.data / ratings.csv loader
    data.py        per-user time-ordered split, groups   signals.py    popularity, co-visitation, kNN, PureSVD
    ops.py         the operators of each role            rules.py      the skill rule format, request features
    pipeline.py    the workflow, its checks and traces   ranking.py    NDCG@k, Recall@k, coverage
    seeds.py       initial and planted-harmful skills    edits.py      the text of an edit (rule mutations)
    evolve.py      one iteration of an arm               team.py       team mode (a Mesa model per run)
    market.py      market mode (a MarketModel per run)   llm_rerank.py the rerank role played by an LLM
    baselines.py   popularity, item-kNN, MF, tuned ones  report.py     the run summary
    tuned.py       EASE^R, item-kNN, PureSVD, trending, next-item, tuned on the validation users
    fixture.py     writes the MovieLens-format test fixture  (the comparison over seeds: experiments/recsys_compare.py)
    zoo.py         seeded worlds nobody tuned for, in MovieLens layouts (experiments/recsys_compare.py --zoo N)
    births.py      new skills bred from the library's clauses    harm.py   each planted skill's measured harm

The scenario interface (scenarios/registry.py): ``Config``, ``validate(exp)``, ``make_model(exp)`` and ``metrics(model, episodes, cfg)``;
the model's ``attach(store)`` puts the skill libraries into the run database.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from scenarios.recsys.config import Config
from scenarios.spec import ScenarioSpec

__all__ = ["Config", "defaults", "make_model", "metrics", "validate"]

SPEC = ScenarioSpec(bid_features=("numeric", "agent"), learned_actions="none", skill_library=True,
                    objective_signals=("item_logits", "target", "list_len"))
"""Market mode's learned bids read the request's stage (one-hot) or the agent; team mode has no auction. An
agent's "action" is the skills it holds, edited by credit, not by action logits. Its own learner gives an
agents.objective the learned recall source's item scores, each question's held-out item and the candidate count
(learned_recall.py; the ca_pg objective reads them). ``[skills]`` drives its arms (evolve.py), in team and market
mode."""


MARKET_MODE = {"market.bid_scheme": "policy", "market.base_bid": 0.01, "market.clearing": "softmax",
               "market.temperature": 0.005, "market.reward_scale": 1.0, "market.rent": 0.0002,
               "population.initial_wealth": 0.5, "population.p_exploit": 0.004, "population.p_explore": 0.004,
               "population.min_agents": 6, "population.max_agents": 24}
"""Market mode's auction and population (rent and births are per episode): each agent bids its own
base_bid x (1 + role), evolved (scenarios/recsys/market.py)."""
TEAM_READS = ("batch",)
"""What team mode reads of [market] (one round's rollouts); it has no auction and no population to set."""


def defaults(exp) -> dict:
    """Market mode's settings where the config leaves them (:data:`MARKET_MODE`), and its population: agents_per_role
    agents for each of the pipeline's roles (``catallax config show`` shows the count, derived)."""
    if exp.scenario.mode != "market":
        return {}
    from scenarios.recsys.ops import ROLES

    return {**MARKET_MODE, "population.initial_agents": exp.scenario.agents_per_role * len(ROLES)}


def validate(exp) -> None:
    """How the sections fit: each mode reads its keys; the data path and seed library exist and parse (a
    learned source only where agents.objective trains it); the diagnoser is the rule one (no language model is
    wired to recsys's edits)."""
    cfg = exp.scenario
    if cfg.mode == "team":
        _team_reads_only_the_batch(exp)
    elif exp.population.initial_agents != (fielded := defaults(exp)["population.initial_agents"]):
        raise ValueError(f"population.initial_agents = {exp.population.initial_agents}: market mode fields "
                         f"recsys.agents_per_role = {cfg.agents_per_role} agents per role ({fielded}); set that instead")
    if exp.skills.diagnoser != "rule":
        raise ValueError(f"skills.diagnoser = {exp.skills.diagnoser!r}: recsys has no LLM diagnoser wired to its "
                         f"edits yet (they use the rule diagnoser); set skills.diagnoser = \"rule\"")
    if cfg.data == "movielens":
        from scenarios.recsys.movielens import MovieLensError, find
        if not cfg.path:
            raise ValueError("recsys.path: give the MovieLens u.data or ratings.csv file (recsys.data = movielens)")
        try:
            find(cfg.path)
        except MovieLensError as err:
            raise ValueError(f"recsys.path = {cfg.path!r}: {err}") from None
    if cfg.start == "best_baseline" and cfg.seed_library:
        raise ValueError("recsys.start = 'best_baseline' would leave recsys.seed_library out: set recsys.start = "
                         "\"initial\" (the folder) or \"initial+best_baseline\" (the folder and the best baseline)")
    if cfg.rerank_backend != "rule":  # an LLM plays rerank: its engine must be installed before anything loads
        from agents.backends.factory import require_engine
        require_engine(cfg.rerank_backend, "recsys.rerank_backend")
    if cfg.seed_library:
        from scenarios.recsys import rules
        from skills import SkillError
        from skills.skillmd import read_folder
        from scenarios.recsys.learned_recall import trains_recall
        try:
            for parsed in read_folder(Path(cfg.seed_library)).values():
                if parsed.skill.rule and parsed.skill.role in rules.ops.CATALOGUE:
                    for clause in rules.parse(parsed.skill.rule, parsed.skill.role):
                        if clause.operator in rules.ops.LEARNED.get(parsed.skill.role, {}) \
                                and not trains_recall(exp.agents.objective):
                            raise ValueError(f"skill {parsed.skill.name!r} runs the learned source "
                                             f"{clause.operator!r}, which only agents.objective = \"ca_pg\" trains")
        except (SkillError, ValueError, OSError) as err:
            raise ValueError(f"recsys.seed_library = {cfg.seed_library!r}: {err}") from None


def _team_reads_only_the_batch(exp) -> None:
    """Team mode has no auction and no population: a changed [market] key but the batch, or [population] key, would
    do nothing."""
    for table in ("market", "population"):
        ours, default = getattr(exp, table), type(getattr(exp, table))()
        for f in dataclasses.fields(ours):
            derived = f"{table}.{f.name}" in exp.derived  # what a changed key brought along: that key is named
            if f.name not in TEAM_READS and not derived and getattr(ours, f.name) != getattr(default, f.name):
                raise ValueError(f"{table}.{f.name} = {getattr(ours, f.name)!r}: not read: team mode has no auction "
                                 f"and no population (it reads market.batch only); set recsys.mode = \"market\"")


def make_model(exp):
    """The runner's hook: a :class:`~scenarios.recsys.team.RecsysTeam` or, in market mode, a RecsysMarket."""
    if exp.scenario.mode == "market":
        from scenarios.recsys.market import RecsysMarket
        return RecsysMarket.from_experiment(exp)
    from scenarios.recsys.team import RecsysTeam
    return RecsysTeam(exp)


def metrics(model, episodes: list[dict], cfg: Config) -> dict:
    from scenarios.recsys.report import summary
    return summary(model, cfg)
