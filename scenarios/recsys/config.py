"""The ``[recsys]`` section: data, pipeline, evolution, and the synthetic world as ``[recsys.world]``.

How the library evolves (credit, G, the edit budget, the gate, the workflow penalty) is the
``[skills]`` section every scenario with a library shares (skills/config.py); this one keeps what
only recsys has. Budget: one round of the runner is one evolution iteration over ``market.batch``
rollouts (``market.batch / agents.group`` questions, G rollouts each), so ``run.episodes`` counts
rollouts and ``run.episodes / market.batch`` is the number of iterations.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic.dataclasses import dataclass

from scenarios.recsys.synthetic import WorldConfig
from market.strict import STRICT


@dataclass(config=STRICT)
class Config:
    # ---------------------------------------------------------------- data
    data: Literal["synthetic", "movielens"] = "synthetic"
    """synthetic: the generated world below; movielens: the file or folder at ``path``."""
    path: str = ""
    """MovieLens ``u.data`` or ``ratings.csv`` (or a folder holding one), for data = movielens."""
    min_rating: float = Field(0.0, ge=0)
    """MovieLens: keep ratings at or above this as interactions (implicit feedback)."""
    world: WorldConfig = Field(default_factory=WorldConfig)
    """The synthetic world (data = synthetic), its own table: ``[recsys.world]``, ``--set recsys.world.users=300``
    (scenarios/recsys/synthetic.py declares its fields)."""
    holdout: int = Field(3, ge=1)
    """Items per user in each of the validation and test segments."""
    min_train: int = Field(5, ge=1)
    """Users with fewer train interactions than this are dropped."""
    validation_users: int = Field(300, ge=1)
    """Users the gate scores candidate libraries on."""
    test_users: int = Field(400, ge=1)
    """Users of the final report only."""
    sponsored_share: float = Field(0.03, gt=0, le=1)
    """Share of items the business promotes (the planted business rules push them)."""
    # ---------------------------------------------------------------- signals and pipeline
    rank: int = Field(32, ge=1)
    """PureSVD factors."""
    covis_window: int = Field(5, ge=1)
    """Co-visitation signal: items consumed within this many steps of each other in a user's history count as co-visited."""
    neighbours: int = Field(50, ge=1)
    """Item-item neighbours kept per item (co-visitation, item-kNN)."""
    ease_items: int = Field(2000, ge=2)
    """EASE^R (the tuned baselines, tuned.py) covers this many of the most popular items: an [n, n] inverse."""
    candidates: int = Field(100, ge=10)
    """Size of the recall's candidate set, which ranking and reranking order."""
    k: int = Field(10, ge=1)
    """Recommendation length: NDCG@k."""
    reward_k: int = Field(0, ge=0)
    """Rollout reward: NDCG@reward_k of the whole reranked list (0: all candidates), a dense surrogate of NDCG@k."""
    diversity_floor: int = Field(2, ge=0)
    """Rerank check: fewer distinct genres than this in the top k violates the constraint."""
    fresh_days: float = Field(60.0, gt=0)
    """An item at most this many days old when consumed counts as fresh (the ``novelty`` feature)."""
    # ---------------------------------------------------------------- evolution
    mode: Literal["team", "market"] = "team"
    """team: one agent per role runs the library; market: several agents per role bid for each request."""
    plant_harmful: int = Field(0, ge=0, le=3)
    """K harmful skills planted in the initial library; > 0 also runs the grse and presence arms on the same budget."""
    harm: Literal["business", "any_data"] = "business"
    """Which skills are planted: business (sponsored pins, old classics, blockbusters: they hurt through the
    synthetic world's sponsored flags, release dates and genres) or any_data (cut the list to 5 items, rank by
    noise, pin consumed items: they hurt by construction on any data, each whatever the others do, for
    users above a median of the data's own features; seeds.py)."""
    compare: bool = False
    """Also run the random-edit arms (random: as many edits as grse gated; random-capped: skills.max_edits
    each time)."""
    seed_library: str = ""
    """A folder of SKILL.md skills to start from instead of the built-in initial skills (``start`` may add the best
    baseline beside them), in team and market mode."""
    start: Literal["initial", "best_baseline", "initial+best_baseline"] = "initial+best_baseline"
    """The library a run starts from: initial (seeds.py's hand-made one), best_baseline (one recall and one rank
    skill running the tuned baseline best on validation), or both (the default; the best baseline beside a second
    tuned one where a blend of the two gains on validation with evidence (seeds.tuned_blend), their share of each
    role's weight and whether the initial rerank steps run are chosen on the validation users, so that the start is
    not far below the baselines it holds: seeds.combined); the planted harmful skills are added in each case."""
    catalogue: Literal["classic", "full"] = "classic"
    """Operators an edit that adds a skill may draw: classic, or full (also the tuned baselines: ease,
    itemknn_tuned, puresvd_tuned, trending, next). A rule may name any operator either way."""
    births: int = Field(2, ge=0, le=16)
    """New skills bred per edit pass from the library's own clauses (mutation of one, recombination of two: operator,
    parameters, weight, and for rerank the requests a clause applies to), each gated like any edit and then credited
    like any skill (scenarios/recsys/births.py); 0: the credit's edits and the floor alone. The default was chosen on
    the zoo's development worlds (experiments/recsys_compare.py --zoo-dev), never on its evaluation worlds."""
    births_confidence: float = Field(0.99, ge=0.5, lt=1)
    """The confidence a birth must show that it improves validation NDCG (the gate's one-sided test, as
    ``skills.confidence`` for the credit's edits). Stricter than the credit's: a run gates births x passes of them,
    and at the credit's 0.9 one in ten of those that change nothing would pass by chance."""
    # ---------------------------------------------------------------- market mode
    agents_per_role: int = Field(3, ge=1)
    """market: initial agents per role, each holding a random half of the role's skills."""
    rerank_backend: Literal["rule", "hf", "vllm", "openai"] = "rule"
    """Who plays rerank: the rule clauses, or an LLM (agents/backends) that reads the skills' bodies."""
    llm_model: str = "smollm2"
    """The LLM: ``smollm2`` (embedded) or a local model folder (for openai: the served model's name)."""
    llm_depth: int = Field(15, ge=2, le=100)
    """Candidates the LLM sees (numbered); the rest keep the rank order."""
    llm_max_tokens: int = Field(32, ge=1)
    """Tokens the LLM may write per answer."""
