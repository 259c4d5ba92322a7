"""Scenarios: the worlds with their scenario files (*.toml): rule worlds (relay.py, blocks/, boltzmann.py), a
recommendation team (recsys/) and text worlds of LLM agents (wordmath.py, procurement.py, multihop.py,
plangrid.py, longlookup.py, errands.py, review.py); the scenario interface (registry.py, and spec/, a package of its own below text/ and every world, so none of
them imports back up into this one); and the front
end in rooms of its own: run/ (config, runner, sweep), report/ (figures, dashboard), cli/ (the ``catallax``
command).

The Python API, for notebooks and scripts (everything the CLI does, without it)::

    from scenarios import load, build_model, run_experiment, open_run

    exp = load("relay", {"market.batch": 8}, seed=1)   # a name, a .toml file or a plugin (.py / module path)
    model = build_model(exp)                           # a mesa.Model: step it, read model.datacollector
    model.step()
    summary = run_experiment(exp, "sqlite:///runs/catallax.db")   # the whole run, persisted, as the CLI does
    run = open_run("sqlite:///runs/catallax.db", summary["run_id"])  # summary, transfers, agents, balances
"""

# Where each public name lives; imported on first use, so ``import scenarios.relay`` (every run) does not
# load the run machinery, the database layer and the credit estimators it may not need.
API = {
    "Scenario": "scenarios.registry", "ScenarioError": "scenarios.registry", "available": "scenarios.registry",
    "get_scenario": "scenarios.registry", "ScenarioSpec": "scenarios.spec", "RunData": "scenarios.report.data", "open_run": "scenarios.report.data",
    "ConfigError": "scenarios.run.config", "Experiment": "scenarios.run.config", "load": "scenarios.run.config",
    "build_model": "scenarios.run.runner", "resume_experiment": "scenarios.run.runner",
    "run_experiment": "scenarios.run.runner",
}
__all__ = sorted(API)


def __getattr__(name):
    if name in API:
        import importlib

        return getattr(importlib.import_module(API[name]), name)
    raise AttributeError(f"module 'scenarios' has no attribute {name!r}")
