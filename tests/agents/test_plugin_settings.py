"""The plugins' settings, one kind of table for each kind of plugin (agents/named/ ``PluginSettings``): credit
estimators (``agents.credit_settings``), objectives (``agents.objective_settings``) and task samplers
(``agents.task_settings``), each setting a ``--set`` key listed in the config reference, the chosen plugin's table
stored in full and read back unchanged. (Bad keys and values: tests/agents/test_objectives.py,
tests/scenarios/test_bad_input.py.)"""

import dataclasses
import subprocess
import sys

from agents.config import PLUGIN_TABLES, AgentsConfig
from agents.objectives import for_agents
from docs import config_reference
from scenarios.run.config import from_dict, load

SETS = ['agents.actions="grpo"', "market.batch=8", "relay.stages=2", "agents.credit=delta_ttg",
        "agents.credit_settings.delta_ttg.rho=0.3", "agents.objective=eapo", "agents.objective_settings.eapo.boost=2.5",
        "agents.tasks=rods", "agents.task_settings.rods.capacity=3"]


def leaves(cls, prefix: str, fixed) -> list[str]:
    """The dotted settings of a ``Config``, nested tables' by their own keys, but for the fixed ones."""
    out = []
    for f in dataclasses.fields(cls):
        kind = cls.__pydantic_fields__[f.name].annotation
        if f.name in fixed:
            continue
        out += leaves(kind, f"{prefix}.{f.name}", fixed) if dataclasses.is_dataclass(kind) else [f"{prefix}.{f.name}"]
    return out


def test_every_setting_of_every_plugin_is_a_key_of_the_reference():
    listed = {k.dotted for k in config_reference.all_keys()}
    every = []
    for table in PLUGIN_TABLES:
        registry = AgentsConfig.__pydantic_fields__[table].annotation.registry
        for name in registry.names:
            every += leaves(registry.module(name).Config, f"agents.{table}.{name}", registry.fixed)
    assert {k for k in listed if k.startswith(tuple(f"agents.{t}." for t in PLUGIN_TABLES))} == set(every)
    assert "agents.objective_settings.tree_opsd.tau" in every and "agents.task_settings.scrl.advance" in every
    assert not any(k.endswith((".kl_coef", ".clip")) for k in every if ".objective_settings." in k)  # agents.kl, agents.clip


def test_a_setting_of_each_kind_reaches_its_plugin_and_the_stored_config_reads_back_the_same():
    exp = load("relay", SETS)
    agents = exp.agents
    assert agents.estimator().cfg.rho == 0.3
    assert (for_agents(agents).cfg.boost, for_agents(agents).cfg.penalty) == (2.5, 1.0)
    assert agents.sampler_settings().capacity == 3
    stored = exp.to_dict()["agents"]
    assert stored["credit_settings"] == {"delta_ttg": {"rho": 0.3, "cap": 5.0, "eps": 1e-06}}  # the chosen one's, in full
    assert stored["objective_settings"] == {"eapo": {"boost": 2.5, "penalty": 1.0}}
    assert stored["task_settings"]["rods"]["capacity"] == 3 and list(stored["task_settings"]) == ["rods"]
    assert from_dict(exp.to_dict(), source="stored").agents == agents
    assert load("relay").to_dict()["agents"]["credit_settings"] == {}  # grpo reads none


def test_reading_a_scenario_file_imports_no_objective():
    """An objective imports torch; a table is checked against its module only where a sub-table is given."""
    code = ("import sys; from scenarios.run.config import load; load('relay', ['agents.tasks=rods', 'agents.task_settings.rods.capacity=3']); "
            "assert 'torch' not in sys.modules and 'agents.objectives' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
