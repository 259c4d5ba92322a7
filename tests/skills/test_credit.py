"""Group-relative credit against the presence-based baseline, on small real rollouts of a two-role team."""

import numpy as np
import pytest

from skills import CreditConfig, Rollout, Trace, batch, group_relative_credit, presence_credit
from tests.skills.team import SKILLS, groups


def credit_of(b, cfg):
    return group_relative_credit(b.rewards, b.usage, b.questions, cfg)


def test_a_planted_harmful_skill_is_found_by_group_relative_credit_not_by_presence():
    """rank-harmful costs 0.2 but is only used beside rank-strong (+0.5): it rides along with success."""
    cfg = CreditConfig()
    b = batch(groups(set(SKILLS), questions=200, seed=0), cfg)
    col = {skill: k for k, (_, skill) in enumerate(b.keys)}
    assert b.keys[col["rank-harmful"]] == ("rank-1", "rank-harmful")
    result = credit_of(b, cfg)
    credit = result.credit
    presence = presence_credit(b.rewards, b.usage)
    contrast = np.einsum("qg,qgk->k", result.advantage, b.usage - b.usage.mean(1, keepdims=True))

    assert presence[col["rank-harmful"]] > b.rewards.mean()  # the baseline calls it helpful ...
    assert credit[col["rank-harmful"]] < 0  # ... group-relative credit calls it harmful
    assert credit[col["rank-strong"]] > 0 and credit[col["recall-broad"]] > 0
    assert credit[col["recall-sloppy"]] < 0  # it fails the recall step: the workflow penalty and the outcome agree
    assert credit.argmin() == col["rank-harmful"]
    assert contrast[col["rank-harmful"]] > 0  # one skill at a time is fooled too: the joint fit tells them apart


def test_the_formula_on_one_hand_sized_group():
    rewards = np.array([[1.0, 0.0, 1.0, 0.0]])
    usage = np.array([[[1.0], [0.0], [1.0], [1.0]]])
    cfg = CreditConfig(eps=1e-9, ridge=0.5)
    c = group_relative_credit(rewards, usage, np.array(["q"]), cfg)
    np.testing.assert_allclose(c.advantage, [[1, -1, 1, -1]], rtol=1e-6)  # (r - 0.5) / 0.5
    # v = u - 0.75 = [.25, -.75, .25, .25]; sum A v = 1.0; sum v^2 = 0.75
    assert c.credit == pytest.approx([1.0 / (0.75 + 0.5)], rel=1e-6)
    assert c.support.tolist() == [1] and c.consistent_success.tolist() == c.consistent_failure.tolist() == [0]
    assert presence_credit(rewards, usage) == pytest.approx([2 / 3])


def test_each_distinct_question_counts_once():
    cfg = CreditConfig()
    b = batch(groups(set(SKILLS), questions=30, seed=1), cfg)
    once = credit_of(b, cfg)
    repeat = np.r_[np.arange(30), np.zeros(9, dtype=int)]  # question 0 run nine more times
    twice = group_relative_credit(b.rewards[repeat], b.usage[repeat], b.questions[repeat], cfg)
    np.testing.assert_allclose(twice.credit, once.credit, atol=1e-12)
    assert twice.support.tolist() == once.support.tolist()


def equal_group(reward, used):
    return [Rollout(reward, skills={"a": {"s"} if u else set(), "b": {"t"}}) for u in used]


def test_equal_reward_groups_are_kept_as_consistent_evidence():
    cfg = CreditConfig()
    b = batch([("win", equal_group(1.0, [1, 0, 1, 0])), ("lose", equal_group(0.0, [1, 1, 1, 1])),
               ("lose-again", equal_group(0.0, [0, 0, 0, 1]))], cfg)
    c = credit_of(b, cfg)
    assert b.keys == [("a", "s"), ("b", "t")]
    assert np.all(c.advantage == 0) and np.all(np.isfinite(c.credit))
    assert c.consistent_success.tolist() == [1, 1] and c.consistent_failure.tolist() == [2, 2]
    assert c.support.tolist() == [2, 0]  # s varied in two questions; t never varied
    assert c.credit.tolist() == [0.0, 0.0]


def test_the_workflow_penalty_separates_rollouts_with_equal_outcomes():
    def rollout(sloppy):
        t = Trace()
        status, skill = ("invalid_output", "sloppy") if sloppy else ("ok", "careful")
        t.invoke("recall", status, agent="r", skills=[skill])
        return Rollout(1.0, t)

    group = [("q", [rollout(s) for s in (True, False, True, False)])]
    penalised = batch(group, CreditConfig())
    np.testing.assert_allclose(penalised.rewards, [[0.9, 1.0, 0.9, 1.0]])
    c = credit_of(penalised, CreditConfig())
    assert c.credit[penalised.keys.index(("r", "sloppy"))] < 0 < c.credit[penalised.keys.index(("r", "careful"))]
    blind = batch(group, CreditConfig(penalty=0.0))
    assert credit_of(blind, CreditConfig(penalty=0.0)).credit.tolist() == [0.0, 0.0]


def test_groups_must_have_group_size_rollouts():
    with pytest.raises(ValueError, match="question 'q7': 3 rollouts, expected group_size=4"):
        batch([("q7", equal_group(1.0, [1, 0, 1]))], CreditConfig())


def routed_team(questions: int, seed: int):
    """An answerer the market routes only into rollouts whose first step went well: a line of it that costs
    30% of its success still rides along with that success. Per rollout the extractor gets the expression right with
    the question's own probability (else the rollout fails without the answerer); the answerer then uses
    ``copy`` and ``off-by-one`` each with probability 0.8, and ``off-by-one`` makes it wrong 30% of the time."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(questions):
        p_extract = rng.uniform(0.2, 0.8)
        rollouts = []
        for _ in range(4):
            if rng.random() >= p_extract:
                rollouts.append(Rollout(0.0, skills={"extractor": {"examples"}}))
                continue
            lines = {s for s in ("copy", "off-by-one") if rng.random() < 0.8}
            right = rng.random() >= (0.3 if "off-by-one" in lines else 0.0)
            rollouts.append(Rollout(float(right), skills={"extractor": {"examples"}, "answerer": lines}))
        out.append((q, rollouts))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_harmful_line_of_an_agent_routed_into_good_rollouts_is_blamed_not_its_agents_luck(seed):
    cfg = CreditConfig()
    b = batch(routed_team(300, seed), cfg)
    harmful = b.keys.index(("answerer", "off-by-one"))
    assert b.agents == ["answerer", "extractor"] and b.acted[..., 0].std() > 0
    presence = presence_credit(b.rewards, b.usage)
    assert presence[harmful] > b.rewards.mean()  # present where the answerer acted, so above average

    without_participation = credit_of(b, cfg).credit
    credit = group_relative_credit(b.rewards, b.usage, b.questions, cfg, b.acted).credit
    assert without_participation[harmful] > 0  # the answerer's acting at all is shared by its lines ...
    assert credit[harmful] < -0.3  # ... until the answerer has its own column
    assert credit.argmin() == harmful and abs(credit[b.keys.index(("answerer", "copy"))]) < 0.2  # copy does nothing


def test_agents_that_always_act_add_no_column():
    cfg = CreditConfig()
    b = batch(groups(set(SKILLS), questions=50, seed=3), cfg)
    assert b.acted.min() == 1.0
    np.testing.assert_array_equal(group_relative_credit(b.rewards, b.usage, b.questions, cfg, b.acted).credit,
                                  credit_of(b, cfg).credit)
