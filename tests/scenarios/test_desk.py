"""The desk world (scenarios/desk.py): its questions and exact rewards, each role's own kind of question, wake-up off
by default, a small real run's learning curve, and the wake-up warning that only counts rounds a role could act in."""

from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from agents.wake_watch import WakeWatch
from scenarios import desk as D
from scenarios.run.config import load
from scenarios.run.runner import run_experiment


def test_questions_have_one_kind_exact_answers_and_no_negative_difference():
    world = D.Desk()
    problems = [world.problem(np.random.default_rng(seed)) for seed in range(300)]
    assert {p["kind"] for p in problems} == set(D.KINDS)
    assert all(p["a"] >= p["b"] for p in problems if p["kind"] == "subtractor")
    assert all(1 <= p["a"] <= 9 and 1 <= p["b"] <= 9 for p in problems)
    state = world.start({"kind": "multiplier", "a": 7, "b": 6})
    assert world.read(state, "multiplier") == "What is 7 * 6?" and world.stage(state) == 2
    assert world.may_act(state, "multiplier") and not world.may_act(state, "adder")
    assert world.act(state, "multiplier", " Answer: 42 ") is None and world.done(state) and world.reward(state) == 1.0
    for reply in ("42", "Answer: 43", "answer: 42"):  # the bare number, a wrong one, another format: all score 0
        state = world.start({"kind": "multiplier", "a": 7, "b": 6})
        world.act(state, "multiplier", reply)
        assert world.reward(state) == 0.0
    assert world.correct(world.start({"kind": "subtractor", "a": 9, "b": 5}), "subtractor") == "Answer: 4"


def test_the_pool_plants_one_format_breaking_and_one_wrong_number_example_per_role():
    for role, harmful, misleading in zip(D.KINDS, D.HARMFUL, D.MISLEADING):
        lines = [line for _, group in D.planted_pool()[role] for line in group]
        assert harmful in lines and misleading in lines
        assert "Answer:" not in harmful and "Answer:" in misleading
        question, reply = misleading.removeprefix("example: What is ").split("? => Answer: ")
        a, sign, b = question.split()
        assert int(reply) != {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[sign]
    assert set(D.Desk.wrong) == set(D.HARMFUL) | set(D.MISLEADING)


def test_the_shipped_file_turns_wake_up_off_and_starts_four_agents_of_each_role():
    exp = load("desk", [])
    cfg = exp.scenario
    assert cfg.policy.wake is False and cfg.initial_roles == D.KINDS * 4
    assert exp.run.eval_every == 8 and cfg.heldout == 64 and exp.population.initial_agents == 12
    assert (exp.market.bid_scheme, exp.agents.actions, exp.agents.lm.temperature) == ("learned", "grpo", 1.0)


def test_a_round_in_which_a_role_could_act_nowhere_is_not_a_round_it_never_woke(capsys):
    """desk's questions of one kind may all miss a round: its role had nothing to wake for, and is not warned about."""

    class Watch(WakeWatch):
        roles = [SimpleNamespace(name="adder", tool=False), SimpleNamespace(name="multiplier", tool=False)]
        role = np.array([0, 1])
        counts, _evaluating, only = Counter(), False, None

    watch = Watch()
    model = SimpleNamespace(population=SimpleNamespace(traders=np.array([True, True])), episodes_done=0,
                            cfg=SimpleNamespace(batch=4))
    watch._may_act(0)  # only additions came up, and nobody woke
    watch._saw_wake(np.zeros((4, 2), dtype=bool))
    watch._round_woke(model)
    assert watch.wake_report()["roles_never_woke"] == {"adder": 1}
    assert "role 'adder' never woke" in capsys.readouterr().err
    watch._saw_wake(np.zeros((4, 2), dtype=bool))  # a round in which neither could act
    watch._round_woke(model)
    assert watch.wake_report()["roles_never_woke"] == {"adder": 1}


@pytest.mark.slow
def test_a_small_real_run_measures_its_curve_beside_both_complete_agents(tmp_path):
    exp = load("desk", ["run.episodes=8", "run.eval_every=1", "market.batch=4", "desk.heldout=6", "desk.llm.threads=1"],
               seed=1)
    summary = run_experiment(exp, f"sqlite:///{tmp_path / 'desk.db'}", progress=False)
    curve = summary["heldout_curve"]
    assert [point[:2] for point in curve] == [[0, 0], [1, 4], [2, 8]]
    assert curve[-1][2] == summary["heldout_success"] and summary["heldout_problems"] == 6
    assert 0 <= summary["complete_agent_success"] <= 1 and 0 <= summary["curated_agent_success"] <= 1
    assert summary["roles_never_woke"] == {} and summary["conservation_ok"]
    assert summary["policy_updates"] <= 2 and summary["lm_completions_trained"] <= 8  # desk trains: 2 rounds of 4
