"""Scenario names -> the modules that build them.

A scenario module provides ``Config`` (its config dataclass, the ``[name]``
section of its TOML), ``build(cfg) -> (world, policy)`` and
``metrics(model, episodes, cfg) -> dict``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

SCENARIO_DIR = Path(__file__).parent
SCENARIOS = {"blocks": "scenarios.blocks", "relay": "scenarios.relay", "boltzmann": "scenarios.boltzmann", "recsys": "scenarios.recsys", "wordmath": "scenarios.wordmath"}


def get_scenario(name: str):
    if name not in SCENARIOS:
        raise KeyError(f"unknown scenario (known: {', '.join(sorted(SCENARIOS))})")
    return importlib.import_module(SCENARIOS[name])
