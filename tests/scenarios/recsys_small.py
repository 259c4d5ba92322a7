"""A test-sized recsys world and run, shared by the recsys tests (the world is cached per process)."""

from pathlib import Path
from types import SimpleNamespace

from scenarios.recsys.config import Config
from scenarios.recsys.synthetic import WorldConfig
from scenarios.recsys.world import load

FIXTURE = Path(__file__).parents[1] / "fixtures" / "movielens"
WORLD = dict(users=500, items=150, genres=6)
SMALL = dict(validation_users=120, test_users=120, rank=16)
OVERRIDES = ([f"recsys.world.{k}={v}" for k, v in WORLD.items()] + [f"recsys.{k}={v}" for k, v in SMALL.items()]
             + ["market.batch=64", "run.episodes=192"])


def small_world(seed: int = 0, **changes):
    return load(Config(**{"world": WorldConfig(**WORLD), **SMALL, **changes}), seed)


def store(folder: Path, name: str):
    """What a recsys model's ``attach`` reads of a RunStore: an engine on a fresh SQLite file, and a run id."""
    from market.store import make_engine

    return SimpleNamespace(engine=make_engine(f"sqlite:///{folder / name}.db"), run_id=name)
