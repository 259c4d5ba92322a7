"""The validation gate: paired evaluation on fixed questions and seeds; rejected candidates are kept."""

import numpy as np
import pytest

from skills import (CreditConfig, DiagnosisConfig, Edit, GateConfig, RuleDiagnoser, batch, cases, compare,
                    group_relative_credit, to_edit, validate)
from tests.skills.team import SKILLS, evaluate, groups, seed_library

QUESTIONS = np.arange(60)
SEEDS = np.full(60, 7)


def test_pruning_the_planted_harmful_skill_passes(library):
    seed_library(library)
    result, (v,) = validate(library, [Edit("prune", "rank-harmful")], evaluate, QUESTIONS, SEEDS)
    assert result.accepted and result.after > result.before
    assert v.label == "rank-harmful@2" and v.status == "pruned"
    assert "rank-harmful" not in {s.name for s in library.current()}
    edit = library.edits()[v.edit_id]
    assert (edit.gate, edit.score_before, edit.score_after) == ("accepted", result.before, result.after)


def test_a_regression_is_rejected_and_kept_with_its_scores(library):
    seed_library(library)
    current = library.current()
    result, (v,) = validate(library, [Edit("prune", "rank-strong")], evaluate, QUESTIONS, SEEDS)
    assert not result.accepted and result.delta < 0
    assert v.status == "rejected" and library.current() == current
    edit = library.edits()[v.edit_id]
    assert (edit.gate, edit.score_before, edit.score_after) == ("rejected", result.before, result.after)
    # paired: both libraries saw the same questions with the same seeds
    without = [s for s in current if s.name != "rank-strong"]
    paired = evaluate(without, QUESTIONS, SEEDS) - evaluate(current, QUESTIONS, SEEDS)
    np.testing.assert_array_equal(result.diffs, paired)


def test_delta_is_the_drop_the_gate_tolerates(library):
    seed_library(library)
    current = library.current()
    candidate = [s for s in current if s.name != "recall-broad"]  # worth +0.1 on half the rollouts
    strict = compare(evaluate, current, candidate, QUESTIONS, SEEDS, GateConfig())
    assert not strict.accepted and -0.2 < strict.delta < 0
    assert compare(evaluate, current, candidate, QUESTIONS, SEEDS, GateConfig(delta=0.2)).accepted
    assert compare(evaluate, current, current, QUESTIONS, SEEDS, GateConfig()).accepted  # no change passes delta 0
    with pytest.raises(ValueError, match="two \\[n\\] arrays"):
        compare(evaluate, current, candidate, QUESTIONS, SEEDS[:3], GateConfig())


def test_a_prune_within_one_standard_error_passes_and_a_costlier_one_does_not():
    """The one-standard-error rule: a prune may cost up to prune_se x sd(d) / sqrt(n); other edits may not."""
    d = np.tile([0.1, -0.1], 30) - 0.01  # mean -0.01, sd 0.1008 (ddof 1), n 60: one standard error 0.0130
    scores = {"current": np.zeros(60), "near": d, "costly": d - 0.02}

    def by_name(skills, questions, seeds):
        return scores[skills[0]]

    se1 = GateConfig(prune_se=1.0)
    assert np.isclose(d.std(ddof=1) / np.sqrt(60), 0.01301, atol=1e-5)
    assert compare(by_name, ["current"], ["near"], QUESTIONS, SEEDS, se1, smaller=True).accepted
    assert not compare(by_name, ["current"], ["near"], QUESTIONS, SEEDS, se1).accepted  # not a prune: strict
    assert not compare(by_name, ["current"], ["near"], QUESTIONS, SEEDS, GateConfig(), smaller=True).accepted
    assert not compare(by_name, ["current"], ["costly"], QUESTIONS, SEEDS, se1, smaller=True).accepted  # -0.03
    assert compare(by_name, ["current"], ["costly"], QUESTIONS, SEEDS, GateConfig(prune_se=2.5), smaller=True).accepted


def test_validate_marks_a_prune_as_smaller(library):
    """validate marks a candidate that only prunes as smaller: pruning recall-broad (worth +0.1 on half the
    rollouts) is refused strictly and passes at a tolerance of just enough standard errors."""
    seed_library(library)
    strict, _ = validate(library, [Edit("prune", "recall-broad")], evaluate, QUESTIONS, SEEDS)
    assert not strict.accepted
    se = strict.diffs.std(ddof=1) / np.sqrt(strict.diffs.size)
    k = -strict.delta / se + 0.01  # just enough standard errors
    loose, _ = validate(library, [Edit("prune", "recall-broad")], evaluate, QUESTIONS, SEEDS, GateConfig(prune_se=k))
    assert loose.accepted and "recall-broad" not in {s.name for s in library.current()}


def test_one_round_of_evolution_end_to_end(library):
    """rollouts -> group-relative credit -> diagnosis -> edit -> gate: the planted skill goes, the library improves."""
    seed_library(library)
    cfg = CreditConfig()
    available = {s.name for s in library.current()}
    b = batch(groups(available, questions=200, seed=3), cfg)
    credit = group_relative_credit(b.rewards, b.usage, b.questions, cfg)
    blamed = cases(b, credit, library, DiagnosisConfig())
    sloppy, harmful = RuleDiagnoser().diagnose(blamed)
    assert (sloppy.skill, sloppy.failure, sloppy.step) == ("recall-sloppy", "invalid_output", 0)
    assert sloppy.action == "revise"
    assert (harmful.skill, harmful.failure, harmful.action) == ("rank-harmful", "harmful_skill", "prune")
    result, _ = validate(library, [to_edit(harmful)], evaluate, QUESTIONS, SEEDS)
    assert result.accepted
    assert {s.name for s in library.current()} == set(SKILLS) - {"rank-harmful"}
