"""``workrover_vtca`` (agents/credit/workrover_vtca.py) on a hand-worked group: the turn that wrote the artifact a
later turn completed gets a share of the checker's gain, which grpo and a checker without sharing deny it."""

import numpy as np
import pytest

from agents import credit as C
from agents.credit.base import Trajectory

R = 1 / (1 + 2e-6)  # grpo's advantage of outcomes [1, 0]


def traj(outcome, progress, deps):
    T = len(deps)
    return Trajectory(outcome=outcome, agent=np.arange(T), action=np.zeros(T, dtype=int), progress=np.array(progress),
                      deps=deps)


def test_the_artifact_writer_shares_the_gain_of_the_turns_that_build_on_it():
    # success: turn 0 writes an artifact the checker cannot see yet; turn 1 reads it (+0.5), turn 2 reads turn 1 (+0.5)
    # failure: turn 0 makes progress (+0.5), turn 1, building on it, breaks it (-0.5)
    S = traj(1, [0.0, 0.0, 0.5, 1.0], [(), (0,), (1,)])
    F = traj(0, [0.0, 0.5, 0.0], [(), (0,)])
    # v(S) = [0 + 0.25 + 0.125, 0.25 + 0.125, 0.25]; v(F) = [0.5 - 0.25, -0.25]; centre = 1.0 / 5
    v = [[0.375, 0.375, 0.25], [0.25, -0.25]]
    got = C.make("workrover_vtca")([S, F]).steps
    for g, a, row in zip(got, [R, -R], v):
        np.testing.assert_allclose(g, [a + x - 0.2 for x in row], rtol=1e-6)
    assert got[0][0] > got[0][2]  # the planted case: the writer outranks the turn that merely finished
    alone = C.make("workrover_vtca", share=0.0)([S, F]).steps  # no sharing: the writer gets no process credit
    assert alone[0][0] < got[0][0] and alone[0][0] == pytest.approx(R - 0.2)
    assert np.ptp(C.make("grpo")([S, F]).steps[0]) == 0  # grpo: every turn of the success alike


def test_it_needs_a_checker_and_dependencies_and_a_world_without_them_is_refused():
    from scenarios.run.config import ConfigError, load

    assert C.needs("workrover_vtca") == frozenset({"outcome", "progress", "deps"})
    with pytest.raises(ConfigError, match="workrover_vtca.*deps, progress"):
        load("wordmath", ['agents.actions="grpo"', "agents.credit=workrover_vtca"])
    assert load("relay", ['agents.actions="grpo"', "market.batch=8", "agents.credit=workrover_vtca",
                          "agents.credit_settings.workrover_vtca.share=0.25"]).agents.credit_settings.workrover_vtca.share == 0.25
