"""Scenario names -> the modules that build them, and the interface a scenario module offers.

A scenario module provides

* ``Config``: its config dataclass, the ``[name]`` section of its TOML;
* ``metrics(model, episodes, cfg) -> dict``: its part of the run's summary;
* ``build(cfg) -> (world, policy)`` (the market runs them), or ``make_model(exp)`` for a model of
  its own (boltzmann has no auction; recsys runs a team or a market of its own);

and optionally

* ``validate(exp)``: how the sections fit together (raise ``ValueError`` naming the key);
* ``CREDIT_SIGNALS``: the Trajectory fields its world's ``credit_signals`` fills, checked against
  ``agents.credit`` when the config is loaded.

:func:`get_scenario` reads a module once into a :class:`Scenario`, with the defaults filled in, so
the rest of the code calls every hook without asking whether it exists.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from market import MarketModel

SCENARIO_DIR = Path(__file__).parent
SCENARIOS = {"blocks": "scenarios.blocks", "relay": "scenarios.relay", "boltzmann": "scenarios.boltzmann", "recsys": "scenarios.recsys", "wordmath": "scenarios.wordmath"}


def _fits(exp) -> None:
    """The default ``validate``: the sections' own checks are all there is."""


@dataclass(frozen=True)
class Scenario:
    name: str
    Config: type
    metrics: Callable
    build: Callable | None = None
    own_model: Callable | None = None  # the module's make_model, when it has a model of its own
    validate: Callable = _fits
    credit_signals: tuple[str, ...] = ()

    @classmethod
    def of(cls, name: str, module) -> Scenario:
        return cls(name, module.Config, module.metrics, getattr(module, "build", None),
                   getattr(module, "make_model", None), getattr(module, "validate", _fits),
                   tuple(getattr(module, "CREDIT_SIGNALS", ())))

    def make_model(self, exp):
        """The model an experiment runs: the scenario's own, or the market over its world and policy
        (wrapped in a trained bid head / action logits when the run learns them)."""
        if self.own_model is not None:
            return self.own_model(exp)
        world, policy = self.build(exp.scenario)
        if exp.market.bid_scheme == "learned" or exp.agents.actions == "grpo":
            from agents.learned import LearnedPolicy  # imports torch: only runs that learn pay for it

            policy = LearnedPolicy(policy, exp.agents, seed=exp.run.seed)
        return MarketModel(world, policy, exp.market, exp.population, seed=exp.run.seed)


def get_scenario(name: str) -> Scenario:
    if name not in SCENARIOS:
        raise KeyError(f"unknown scenario (known: {', '.join(sorted(SCENARIOS))})")
    return Scenario.of(name, importlib.import_module(SCENARIOS[name]))
