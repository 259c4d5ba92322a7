"""Scenarios: the worlds (relay.py, blocks/, boltzmann.py, recsys/, wordmath.py) with their scenario files
(*.toml) and credit signals, the Scenario interface (registry.py), and the front end in rooms of its own:
run/ (config, runner, sweep), report/ (figures, dashboard), cli/ (the ``catallax`` command).

The Python API, for notebooks and scripts (everything the CLI does, without it)::

    from scenarios import load, build_model, run_experiment, open_run

    exp = load("relay", {"market.batch": 8}, seed=1)   # a name, a .toml file or a plugin (.py / module path)
    model = build_model(exp)                           # a mesa.Model: step it, read model.datacollector
    model.step()
    summary = run_experiment(exp, "sqlite:///runs/catallax.db")   # the whole run, persisted, as the CLI does
    run = open_run("sqlite:///runs/catallax.db", summary["run_id"])  # summary, transfers, agents, balances
"""

from scenarios.registry import Scenario, ScenarioError, available, get_scenario
from scenarios.report.data import RunData, open_run
from scenarios.run.config import ConfigError, Experiment, load
from scenarios.run.runner import build_model, resume_experiment, run_experiment

__all__ = [
    "ConfigError", "Experiment", "RunData", "Scenario", "ScenarioError", "available", "build_model", "get_scenario",
    "load", "open_run", "resume_experiment", "run_experiment",
]
