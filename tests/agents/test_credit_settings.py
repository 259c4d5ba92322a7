"""Each credit estimator's settings: strict config dataclasses, one table per registry name under
``[agents.credit_settings]``, set from a scenario file or ``--set`` and reaching the estimator the
learner builds. (Bad keys and values, end to end: tests/scenarios/test_bad_input.py.)"""

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from agents import credit as C
from agents.config import CreditSettings
from agents.credit.step_advantages import step_advantages
from scenarios.run.config import ConfigError, load
from tests.agents import inside

GRPO_ACTIONS = ['agents.actions="grpo"', "market.batch=8", "agents.group=4"]


def test_every_estimator_file_is_registered_with_its_settings_table():
    """The registry is read off the package's files; here the files are read another way (their source, for an
    ``estimate`` function), so a module the registry missed, or a table it built wrong, fails."""
    folder = Path(C.__file__).parent
    files = sorted(p.stem for p in folder.glob("*.py")
                   if any(isinstance(n, ast.FunctionDef) and n.name == "estimate" for n in ast.parse(p.read_text()).body))
    assert sorted(C.REGISTRY.files.get(name, name) for name in C.NAMES) == files
    assert C.NAMES[0] == "grpo" and len(files) == 25
    for name in C.NAMES:  # each sub-table is its module's strict Config, defaults as written there
        cls = C.module(name).Config
        assert isinstance(getattr(CreditSettings(), name), cls) and getattr(CreditSettings(), name) == cls()
        assert cls.__pydantic_config__["extra"] == "forbid"


def test_bounds_and_unknown_settings_are_refused():
    with pytest.raises(ValueError, match="rho"):
        C.make("delta_ttg", rho=1.5)
    with pytest.raises(KeyError, match="no setting rhoo"):
        C.make("delta_ttg", rhoo=0.3)
    with pytest.raises(ValueError, match="prog"):
        C.make("triage", bonus={"prog": 1.0})


def test_a_setting_from_the_command_line_reaches_the_estimator():
    exp = load("relay", GRPO_ACTIONS + ["agents.credit=delta_ttg", "agents.credit_settings.delta_ttg.rho=0.3"])
    est = exp.agents.estimator()
    assert (est.name, est.cfg.rho, est.cfg.cap) == ("delta_ttg", 0.3, 5.0)


def test_a_setting_from_a_scenario_file_reaches_the_estimator(tmp_path):
    path = tmp_path / "credit.toml"
    path.write_text('[run]\nscenario = "relay"\n[market]\nbatch = 8\n[agents]\nactions = "grpo"\ngroup = 4\n'
                    'credit = "triage"\n[agents.credit_settings.triage.bonus]\nprogress = 0.7\n')
    est = load(str(path)).agents.estimator()
    assert dataclasses.asdict(est.cfg.bonus) == {"progress": 0.7, "exploration": 0.2, "noop": 0.0, "regression": -0.5}


def test_settings_of_an_estimator_the_learner_does_not_read_are_refused():
    for sets in (["agents.credit=draco", "agents.credit_settings.delta_ttg.rho=0.3"],
                 ["agents.credit_settings.grpo.eps=0.1"]):
        with pytest.raises(ConfigError, match=r"agents\.credit_settings\.\w+ = .*: not read"):
            load("relay", GRPO_ACTIONS + sets)


def test_the_settings_are_stored_with_the_run_and_read_back():
    from scenarios.run.config import from_dict

    exp = load("relay", GRPO_ACTIONS + ["agents.credit=cast", "agents.credit_settings.cast.scale=2.0"])
    assert from_dict(exp.to_dict(), source="stored").agents.estimator().cfg.scale == 2.0


def test_step_advantages_use_the_estimators_settings():
    """Inside the learning hook: cast with scale 2 (from --set) gives twice cast's advantages by name."""
    exp = load("relay", GRPO_ACTIONS + ["agents.credit=cast", "agents.credit_settings.cast.scale=2.0"], seed=1)
    estimator, seen = exp.agents.estimator(), []

    def compare(model, actions, logp):
        seen.append((step_advantages(model, estimator, 4, actions, logp), step_advantages(model, "cast", 4, actions, logp)))

    model = inside.relay_model(compare, ["agents.credit=cast", "agents.credit_settings.cast.scale=2.0"], seed=1)
    for _ in range(2):
        model.step()
    assert len(seen) == 2
    for scaled, by_name in seen:
        assert np.abs(by_name).sum() > 0
        np.testing.assert_allclose(scaled, 2 * by_name)


def test_a_setting_changes_what_the_learner_learns():
    from scenarios.run.runner import build_model

    theta = {}
    for rho in (0.0, 1.0):  # the meter's drop alone, or uniform over the steps (Adam would hide a mere scale)
        model = build_model(load("relay", GRPO_ACTIONS + ["agents.credit=delta_ttg",
                                                          f"agents.credit_settings.delta_ttg.rho={rho}"], seed=3))
        for _ in range(3):
            model.step()
        theta[rho] = model.policy.action_learner.theta.detach().cpu().numpy().copy()
    assert not np.allclose(theta[0.0], theta[1.0])
