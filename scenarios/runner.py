"""Run an experiment: build the world and the market, step it, persist, summarise."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from market import MarketModel, replay
from market.population import HOUSE_ROW
from market.store import RunStore, load_transfers
from scenarios.config import Experiment
from scenarios.registry import get_scenario


def default_db(out: Path) -> str:
    return f"sqlite:///{out / 'catallax.db'}"


def conservation_ok(model: MarketModel, transfers: np.ndarray) -> bool:
    """All accounts sum to zero, and the stored log replayed from zero gives every balance."""
    pop = model.population
    if int(pop.wealth.sum()) != 0:
        return False
    replayed = replay(transfers)
    live = np.flatnonzero(pop.alive)
    expected = dict(zip(pop.ids[live].tolist(), pop.wealth[live].tolist()))
    return all(replayed.get(i, 0) == w for i, w in expected.items()) and all(
        v == 0 for i, v in replayed.items() if i not in expected
    )


def run_experiment(exp: Experiment, db_url: str, progress: bool = True) -> dict:
    module = get_scenario(exp.run.scenario)
    world, policy = module.build(exp.scenario)
    model = MarketModel(world, policy, exp.market, exp.population, seed=exp.run.seed)
    store = RunStore(db_url, exp.run.scenario, exp.run.seed, exp.to_dict())

    episodes: list[dict] = []
    rounds = math.ceil(exp.run.episodes / exp.market.batch)
    for _ in tqdm(range(rounds), desc=exp.run.scenario, unit="round", disable=not progress, file=sys.stderr):
        model.step()
        store.write_round(model.last_round)
        episodes += model.last_round.episodes

    pop = model.population
    live = np.flatnonzero(pop.traders)
    summary = {
        "run_id": store.run_id,
        "scenario": exp.run.scenario,
        "seed": exp.run.seed,
        "episodes": model.episodes_done,
        "ledger_hash": model.ledger.hash,
        "conservation_ok": conservation_ok(model, load_transfers(store.engine, store.run_id)),
        "transfers": model.ledger.count,
        "house": int(pop.wealth[HOUSE_ROW]),
        **module.metrics(model, episodes, exp.scenario),
    }
    store.finish(summary, dict(zip(pop.ids[live].tolist(), pop.wealth[live].tolist())))
    return summary
