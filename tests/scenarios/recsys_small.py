"""A test-sized recsys world and run, shared by the recsys tests (the world is cached per process)."""

from pathlib import Path

from scenarios.recsys.config import Config
from scenarios.recsys.world import load

FIXTURE = Path(__file__).parents[1] / "fixtures" / "movielens"
SMALL = dict(users=500, items=150, genres=6, validation_users=120, test_users=120, rank=16)
OVERRIDES = [f"recsys.{k}={v}" for k, v in SMALL.items()] + ["market.batch=64", "run.episodes=192"]


def small_world(seed: int = 0, **changes):
    return load(Config(**{**SMALL, **changes}), seed)
