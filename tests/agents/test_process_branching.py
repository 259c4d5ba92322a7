"""``process_branching`` (agents/objectives/process_branching.py): where a round branches, the advantage with initial
and branch rollouts normalised apart and the branch decisions credited against their alternatives (worked by hand),
the loss, and the refusal of a run that does not branch."""

import numpy as np
import pytest
import torch

from agents import objectives as O
from agents.objectives import process_branching as P

R = 1 / (1 + 2e-6)  # (r - mean) / (std + eps) of outcomes [1, 0]


def test_branches_start_where_entropy_plus_future_gain_is_highest():
    entropy = np.array([[0.1, 0.0], [0.2, 0.0], [0.9, 0.0], [0.3, 0.0]])  # [T, M]
    gain = np.array([[0.0, 0.0], [0.8, 0.0], [0.0, 0.0], [-0.1, 0.0]])
    source, prefix = P.plan(entropy, gain, np.array([4, 1]), 2, beta=1.0)
    # rollout 0, states 1..3: 0.2 + 0.8 = 1.0, 0.9, 0.3 + 0.1 = 0.4 -> 1, 2; rollout 1 has one step: restarts at 0
    assert source.tolist() == [0, 0, 1, 1] and prefix.tolist() == [1, 2, 0, 0]
    assert P.plan(entropy, gain, np.array([4, 1]), 2, beta=0.0)[1].tolist() == [2, 3, 0, 0]  # entropy alone


def test_initial_and_branch_rollouts_are_normalised_apart_and_branch_decisions_credited_clipped():
    # one group: full rollouts 0 (R 1) and 1 (R 0); branch 2 from rollout 0's state 2 (R 0), branch 3 from 1's state 1 (R 1)
    outcome, source, prefix, group = [1.0, 0.0, 0.0, 1.0], np.array([0, 1, 0, 1]), np.array([0, 0, 2, 1]), np.zeros(4, int)
    t = np.array([0, 1, 2, 3, 0, 1, 2, 5, 6, 5])
    b = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 3])
    # apart: 0, 1 among {0, 1} -> +R, -R; 2 among {0, 2} -> -R; 3 among {1, 3} -> +R
    # future (clipped at 0.3): 0 at t = 2: 1 - mean{1, 0} = +.5; 1 at t = 1: 0 - .5; 2's first step -.5, 3's +.5
    got = P.advantage(outcome, source, prefix, t, b, group, P.Config(omega=0.3))
    want = [R, R, R + .3, R, -R, -R - .3, -R, -R - .3, -R, R + .3]
    np.testing.assert_allclose(got, want, rtol=1e-9)
    # the planted failing branch decision is the most blamed step, below the failed full rollout's ordinary steps
    assert got[7] == got.min() and got[7] < got[4]
    wide = P.advantage(outcome, source, prefix, t, b, group, P.Config(omega=5.0))
    assert wide[2] == pytest.approx(R + .5)  # Omega only clips


def test_the_loss_is_grpos_surrogate_plus_the_critic_and_needs_the_branch_signal():
    M = 3
    b = O.PolicyBatch.one_token(logp=torch.zeros(M), old_logp=torch.zeros(M), advantage=torch.tensor([1.0, -1.0, 2.0]),
                                outcome=torch.tensor([1.0, 0.0, 1.0]), group=torch.zeros(M, dtype=torch.long),
                                episode=torch.arange(M), entropy=torch.zeros(M), value_logits=torch.zeros(M),
                                branch=torch.tensor([False, False, True]))
    value, stats = O.make("process_branching", critic_coef=1.0)(b)
    assert float(value) == pytest.approx(-2 / 3 + np.log(2))  # -mean(A) at ratio 1, BCE of sigmoid(0) = log 2
    assert stats["branch_advantage"] == 2.0 and stats["initial_advantage"] == 0.0
    with pytest.raises(O.MissingSignals, match="branch"):
        O.make("process_branching")(O.PolicyBatch.one_token(**{**b.__dict__, "branch": None}))


def test_a_run_that_does_not_branch_is_refused_naming_the_signal():
    from scenarios.run.config import ConfigError, load

    with pytest.raises(ConfigError, match="process_branching.*branch"):
        load("relay", ['agents.actions="grpo"', "agents.objective=process_branching"])
    exp = load("relay", ['agents.actions="grpo"', "agents.objective=process_branching", "agents.branches=2",
                         "market.batch=12", "agents.objective_settings.process_branching.omega=0.5"])
    assert exp.agents.objective_settings.process_branching.omega == 0.5
