"""The data, fitted signals (the tuned baselines among them) and pipeline of a run, built once per (config, seed)
and cached per process.

The synthetic world and its split are seeded by the run's seed, so a seed is a
new world as well as new rollouts; a MovieLens file keeps its interactions
and the seed only deals the users into groups.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from scenarios.recsys import movielens, synthetic, tuned
from scenarios.recsys.config import Config
from scenarios.recsys.data import Split, split
from scenarios.recsys.pipeline import Pipeline, PipelineConfig
from scenarios.recsys.signals import Signals, fit

DATA_KEYS = ("data", "path", "min_rating", "holdout", "min_train", "validation_users", "test_users", "sponsored_share",
             "rank", "covis_window", "neighbours", "ease_items", "k")
PIPELINE_KEYS = ("candidates", "k", "reward_k", "diversity_floor", "fresh_days")


@dataclass
class World:
    data: Split
    signals: Signals
    pipeline: Pipeline


def load(cfg: Config, seed: int) -> World:
    """The run's world; the heavy part (data, signals) is shared by runs with the same data keys, world and seed."""
    world = tuple(dataclasses.asdict(cfg.world).items())
    data, signals = _data(tuple((k, getattr(cfg, k)) for k in DATA_KEYS) + (("world", world),), seed)
    reranker = None
    if cfg.rerank_backend != "rule":
        from agents.backends import BackendConfig
        from scenarios.recsys.llm_rerank import LLMRerank, backend
        reranker = LLMRerank(backend(BackendConfig(backend=cfg.rerank_backend, model=cfg.llm_model, seed=seed)),
                             k=cfg.k, depth=cfg.llm_depth, max_tokens=cfg.llm_max_tokens)
    pipe = Pipeline(data, signals, PipelineConfig(**{k: getattr(cfg, k) for k in PIPELINE_KEYS}), reranker)
    return World(data, signals, pipe)


@functools.lru_cache(maxsize=4)
def _data(keys: tuple, seed: int) -> tuple[Split, Signals]:
    c = dict(keys)
    if c["data"] == "synthetic":
        log, _ = synthetic.generate(synthetic.WorldConfig(**dict(c["world"])), seed)
    else:
        log = movielens.load(c["path"], min_rating=c["min_rating"])
    data = split(log, c["holdout"], c["min_train"], c["validation_users"], c["test_users"], c["sponsored_share"],
                 seed)
    signals = fit(data, c["rank"], c["covis_window"], c["neighbours"], seed)
    return data, dataclasses.replace(signals, tuned=tuned.fit(data, signals, c["k"], c["ease_items"], seed))
