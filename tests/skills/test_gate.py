"""The validation gate: paired evaluation on fixed questions and seeds; rejected candidates are kept."""

import numpy as np
import pytest

from skills import (CreditConfig, DiagnosisConfig, Edit, GateConfig, RuleDiagnoser, batch, cases, compare,
                    group_relative_credit, to_edit, validate)
from skills.gate import decide, p_improves, refusal_power, required_size
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


def test_delta_is_the_margin_of_the_test_and_a_tie_never_passes(library):
    seed_library(library)
    current = library.current()
    candidate = [s for s in current if s.name != "recall-broad"]  # worth +0.1 on half the rollouts
    strict = compare(evaluate, current, candidate, QUESTIONS, SEEDS, GateConfig())
    assert not strict.accepted and -0.2 < strict.delta < 0
    assert compare(evaluate, current, candidate, QUESTIONS, SEEDS, GateConfig(delta=0.2)).accepted
    tie = compare(evaluate, current, current, QUESTIONS, SEEDS, GateConfig(confidence=0.5))
    assert not tie.accepted and tie.p == 1.0  # an edit that changes nothing measurable is no improvement
    with pytest.raises(ValueError, match="two \\[n\\] arrays"):
        compare(evaluate, current, candidate, QUESTIONS, SEEDS[:3], GateConfig())


def test_a_prune_within_one_standard_error_passes_and_a_costlier_one_does_not():
    """The one-standard-error rule: a prune may cost up to prune_se x sd(d) / sqrt(n); other edits may not."""
    d = np.tile([0.1, -0.1], 30) - 0.01  # mean -0.01, sd 0.1008 (ddof 1), n 60: one standard error 0.0130
    scores = {"current": np.zeros(60), "near": d, "costly": d - 0.02}

    def by_name(skills, questions, seeds):
        return scores[skills[0]]

    se1 = GateConfig(prune_se=1.0, min_harm=0.05)  # power at se 0.013: Phi(0.05 / 0.013 - 1) = 0.998
    assert np.isclose(d.std(ddof=1) / np.sqrt(60), 0.01301, atol=1e-5)
    assert compare(by_name, ["current"], ["near"], QUESTIONS, SEEDS, se1, smaller=True).rule == "one_se"
    assert not compare(by_name, ["current"], ["near"], QUESTIONS, SEEDS, se1).accepted  # not a prune: strict
    assert not compare(by_name, ["current"], ["near"], QUESTIONS, SEEDS, GateConfig(), smaller=True).accepted
    assert not compare(by_name, ["current"], ["costly"], QUESTIONS, SEEDS, se1, smaller=True).accepted  # -0.03
    assert compare(by_name, ["current"], ["costly"], QUESTIONS, SEEDS, GateConfig(prune_se=2.5, min_harm=0.05),
                   smaller=True).accepted
    # too few questions to see a harm of 0.02 (refused with probability Phi(0.02 / 0.013 - 1) = 0.70 < 0.9)
    blind = GateConfig(prune_se=1.0, min_harm=0.02)
    assert refusal_power(0.01301, 0.02, 1.0) < 0.9
    assert not compare(by_name, ["current"], ["near"], QUESTIONS, SEEDS, blind, smaller=True).accepted


def test_validate_marks_a_prune_as_smaller(library):
    """validate marks a candidate that only prunes as smaller: pruning recall-broad (worth +0.1 on half the
    rollouts) is refused strictly and passes at a tolerance of just enough standard errors."""
    seed_library(library)
    strict, _ = validate(library, [Edit("prune", "recall-broad")], evaluate, QUESTIONS, SEEDS)
    assert not strict.accepted
    se = strict.diffs.std(ddof=1) / np.sqrt(strict.diffs.size)
    k = -strict.delta / se + 0.01  # just enough standard errors
    loose, _ = validate(library, [Edit("prune", "recall-broad")], evaluate, QUESTIONS, SEEDS,
                        GateConfig(prune_se=k, min_harm=1.0))
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


def test_the_sign_flip_p_value_is_exact_on_few_differences_and_t_on_many():
    """p = share of the 2^k sign patterns of the non-zero differences whose sum reaches the observed one."""
    assert p_improves(np.zeros(16)) == 1.0
    assert p_improves(np.r_[np.ones(4), np.zeros(12)]) == 1 / 16  # four wins, no loss: 1 pattern of 16
    assert p_improves(np.r_[np.ones(3), np.zeros(13)]) == 1 / 8
    assert p_improves(np.array([1.0, 1.0, -1.0])) == 4 / 8  # sums >= 1: +++, ++-, +-+, -++
    rng = np.random.default_rng(0)
    d = rng.normal(0.1, 1.0, 400)
    from scipy import stats
    assert np.isclose(p_improves(d), stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)


def test_an_edit_passes_only_with_the_stated_confidence():
    """Four problems gained, none lost, of 16 (0/1 scores): p = 1/16, passes at 0.9, not at 0.95; three gained do
    not pass at 0.9. The mean must improve too."""
    four, three = np.r_[np.ones(4), np.zeros(12)], np.r_[np.ones(3), np.zeros(12), -np.ones(1) * 0]
    assert decide(four, GateConfig(confidence=0.9))[0] and not decide(four, GateConfig(confidence=0.95))[0]
    assert not decide(three, GateConfig(confidence=0.9))[0] and decide(three, GateConfig(confidence=0.85))[0]
    assert not decide(np.r_[np.ones(4), -np.ones(4), np.zeros(8)], GateConfig(confidence=0.5))[0]


def test_the_required_size_refuses_the_harm_nine_times_in_ten():
    """required_size's normal approximation against a simulation: the bare one-standard-error rule refuses a prune
    costing min_harm (differences of sd 1) in >= 90% of draws of n questions, not of n / 2; the gate, which
    checks that power itself, falls back to the confidence test at n / 2 and refuses too."""
    harm, sd = 0.1, 1.0
    n = required_size(sd, harm, prune_se=1.0)
    assert n == int(np.ceil(((1.0 + 1.2815516) * sd / harm) ** 2))
    rng = np.random.default_rng(1)
    cfg = GateConfig(prune_se=1.0, min_harm=harm)

    def refused(size: int, gate: bool = False) -> float:
        d = rng.normal(-harm, sd, (400, size))
        if gate:
            return np.mean([not decide(row, cfg, smaller=True)[0] for row in d])
        return np.mean(d.mean(1) < -d.std(1, ddof=1) / np.sqrt(size))

    assert refused(n) >= 0.87  # 0.9 up to the simulation's own noise (sd 0.015)
    assert 0.6 < refused(n // 2) < 0.8  # Phi(0.1 / (1 / sqrt(260)) - 1) = 0.73
    assert refusal_power(sd / np.sqrt(n // 2), harm, 1.0) < 0.9 and refused(n // 2, gate=True) > 0.99
