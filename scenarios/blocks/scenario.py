"""The scenario interface of ``blocks``: build the world and its agents; held-out success and the summary."""

from __future__ import annotations

import numpy as np

from scenarios.blocks.config import Config
from scenarios.blocks.policy import BlocksPolicy
from scenarios.blocks.world import SOLVER_FEATURES, BlocksWorld, heldout


def build(cfg: Config, initial_rules: list[str] | None = None):
    world = BlocksWorld(cfg)
    return world, BlocksPolicy(world.space, cfg, initial_rules)


def validate(exp) -> None:
    """The sero objective's solver (SOLUTION) reads SOLVER_FEATURES: the run must observe them."""
    missing = [f for f in SOLVER_FEATURES if f not in exp.scenario.features]
    if exp.agents.objective == "sero" and missing:
        raise ValueError(f"blocks.features = {exp.scenario.features!r}: agents.objective = 'sero' runs the blocks "
                         f"solver, which reads {', '.join(SOLVER_FEATURES)}; add {', '.join(missing)}")


def evaluate(model, cfg: Config, sizes: list[int] | None = None) -> dict[str, float]:
    """Held-out success per size of the current population, frozen: no payments, no births."""
    result, model.policy.unwrapped.recording = {}, False
    try:
        for n in sizes or cfg.heldout_sizes:
            world = BlocksWorld(cfg, heldout(cfg, n))
            episodes = model.run_episodes(world=world, batch=cfg.heldout_count, settle=False)
            result[str(n)] = float(np.mean([e["success"] for e in episodes]))
    finally:
        model.policy.unwrapped.recording = True
    return result


def metrics(model, episodes: list[dict], cfg: Config) -> dict:
    """``heldout_success`` per size (final population, frozen), training success, and the richest rules."""
    tail = episodes[len(episodes) - max(1, len(episodes) // 10):]
    pop = model.population
    live = np.flatnonzero(pop.traders)
    richest = live[np.argsort(-pop.wealth[live], kind="stable")][:8]
    return {
        "heldout_success": evaluate(model, cfg),
        "train_success": float(np.mean([e["success"] for e in tail])) if tail else float("nan"),
        "unlocked_size": cfg.train_sizes[model.world.unlocked - 1],
        "population": pop.size,
        "episodes": model.episodes_done,
        "richest_rules": model.policy.describe(richest),
    }
