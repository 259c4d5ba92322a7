"""``self_credit`` (agents/credit/self_credit.py) on a hand-worked group: a turn the compaction dropped keeps a quarter
of its rollout's advantage, a failure's search that repeats a failing retrieval of a failed sibling (and of no
success) takes 1.5 times its share, a retrieval a success also made takes none of that; and a world without the
compaction's citations is refused at load, naming the signal."""

import numpy as np
import pytest

from agents import credit as C
from agents.credit.base import Trajectory

S2 = np.sqrt(2) / (1 + np.sqrt(4.5) * 1e-6)  # grpo's advantage of the success in outcomes [1, 0, 0] (std sqrt(2)/3)
F2 = -0.5 * S2  # and of each failure


def traj(outcome, cited, retrieved):
    T = len(cited)
    return Trajectory(outcome=outcome, agent=np.arange(T), action=np.zeros(T, dtype=int), cited=np.array(cited),
                      retrieved=[tuple(ids) for ids in retrieved])


def group():
    # search, search, search, compaction, search, answer; the success dropped its distractor (turn 2)
    success = traj(1, [1, 0, 1, -1, -1, -1], [(1, 2, 3), (7, 8, 9), (4, 5, 6), (), (10, 11, 12), ()])
    # the planted fault: both failures retrieve {20, 21, *} (J = 2/4 = 0.5), which the success never did
    fail1 = traj(0, [0, 1, -1, -1, -1], [(1, 2, 3), (20, 21, 22), (), (30, 40, 41), ()])
    fail2 = traj(0, [1, 0, -1, -1, -1], [(1, 2, 3), (20, 21, 23), (), (30, 31, 32), ()])  # {30, *}: J = 1/5
    return [success, fail1, fail2]


def test_cited_turns_carry_the_advantage_and_a_repeated_failing_retrieval_more_of_the_blame():
    got = C.make("self_credit")(group()).steps
    A = C.make("grpo")(group()).steps
    np.testing.assert_allclose([A[0][0], A[1][0]], [S2, F2])
    # the success: its dropped distractor keeps a quarter, every other step the whole advantage
    np.testing.assert_allclose(got[0], [S2, 0.25 * S2, S2, S2, S2, S2])
    # failure 1: {1, 2, 3} the success made too (no repeat), dropped: a quarter; {20, 21, 22} cited and repeated by
    # failure 2: 1.5 of the blame; {30, 40, 41} unjudged and below the match (J = 1/5): grpo's
    np.testing.assert_allclose(got[1], [0.25 * F2, 1.5 * F2, F2, F2, F2])
    # failure 2: {1, 2, 3} cited: grpo's; {20, 21, 23} dropped and repeated: 0.25 x 1.5
    np.testing.assert_allclose(got[2], [F2, 0.375 * F2, F2, F2, F2])
    assert got[1][1] < A[1][1] < 0  # the planted failing retrieval: more blame than grpo gives it
    assert 0 < got[0][1] < A[0][1]  # the success's dropped distractor: less credit


def test_the_settings_move_the_shares_as_written():
    off = C.make("self_credit", dropped=1.0, repeat=1.0)(group()).steps  # grpo's advantage on every step
    for got, a in zip(off, C.make("grpo")(group()).steps):
        np.testing.assert_allclose(got, a)
    strict = C.make("self_credit", jaccard=0.6)(group()).steps  # {20, 21, *} no longer match (J = 0.5)
    np.testing.assert_allclose(strict[1], [0.25 * F2, F2, F2, F2, F2])


def test_it_needs_the_citations_and_a_world_without_them_is_refused_at_load():
    from scenarios.run.config import ConfigError, load

    assert C.needs("self_credit") == frozenset({"outcome", "cited", "retrieved"})
    with pytest.raises(ConfigError, match=r"self_credit.*needs signals.*cited, retrieved \(provided: .*hit"):
        load("multihop", ['agents.actions="grpo"', "agents.credit=self_credit"])
    assert load("longlookup", ['agents.actions="grpo"', "agents.credit=self_credit"]).agents.credit == "self_credit"
