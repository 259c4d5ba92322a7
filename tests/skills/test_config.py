"""The [skills] section's meaning, through recsys (the scenario with a skill library), at toy size:
``credit = "none"`` edits nothing, ``every`` spaces the edit passes. What it refuses: test_bad_input.py."""

import pytest

from market.store import RunStore
from scenarios.recsys import make_model
from scenarios.run.config import load
from scenarios.run.runner import run_experiment
from skills import SkillLibrary
from skills.loop import EditLoop
from tests.scenarios.recsys_small import OVERRIDES

MODES = ["team", "market"]


@pytest.mark.parametrize("mode", MODES)
def test_credit_none_leaves_the_library_as_it_is(tmp_path, mode):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    summary = run_experiment(load("recsys", OVERRIDES + [f"recsys.mode={mode}", "skills.credit=none"]), db,
                             progress=False)
    library = SkillLibrary.open(db, summary["run_id"])
    assert summary["credit"] == "none" and summary["edits_accepted"] == summary["edits_rejected"] == 0
    assert {e.gate for e in library.edits().values()} == {"ungated"}  # the seed library's adds only
    assert all(v.version == 1 for v in library.versions())
    if mode == "team":  # market mode's fielded team (each role's richest agent) still changes with births
        assert summary["validation_ndcg_final"] == summary["validation_ndcg_initial"]


@pytest.mark.parametrize("mode", MODES)
def test_every_2_halves_the_edit_passes(monkeypatch, mode):
    budgets = []  # the edit budget each round's diagnosis was given: 0 between passes
    diagnose = EditLoop.diagnoses
    monkeypatch.setattr(EditLoop, "diagnoses", lambda self, rng, budget: budgets.append(budget) or diagnose(self, rng, budget))

    def passes(every: int) -> list[bool]:
        budgets.clear()
        exp = load("recsys", OVERRIDES + [f"recsys.mode={mode}", f"skills.every={every}"])
        model = make_model(exp)
        model.attach(RunStore.create("sqlite://", "recsys", 0, exp.to_dict()))
        for _ in range(4):
            model.step()
        return [b > 0 for b in budgets]

    assert passes(1) == [True] * 4
    assert passes(2) == [False, True, False, True]  # rounds 1 and 3 only add their rollouts to the evidence
