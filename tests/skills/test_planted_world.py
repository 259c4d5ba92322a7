"""The planted-line case in the suite: GRSE and the evidence gate on a new LLM world with one wrong worked example
among correct ones (tests/skills/planted_world.py, written on the public text-world API), real SmolLM2.

The issue's acceptance, for seed 0 at the smallest size that still has an edit pass the gate can judge (64
episodes, one pass) and for seed 3 at the world's own size (two passes: with one it refuses its only edit and
keeps every line): every accepted edit leaves held-out success no lower than one standard error of its paired
differences, the correct lines survive, the planted one is pruned or revised. Seed 3 is the seed where
group-relative credit alone blamed a correct line the planted one interacts with and the gate let its prune
through (a real improvement); the read of what the failed outputs imitate (skills/imitation.py) moves that blame
to the planted line. Five seeds at the world's own size: ``python -m experiments.skill_evolution --what planted
--seeds 5`` (docs/results/skill_evolution.md): held-out success 0.75 -> 1.00 in all five, the correct lines kept
in all five, the planted line pruned in four and revised in one.
"""

import numpy as np
import pytest

from tests.skills import planted_world as W

WORLD = W.OrderDesk()


def test_the_reader_is_paid_only_for_the_messages_own_order_number():
    state = WORLD.start({"name": "Ann", "order": 5606, "item": "kettle", "issue": "arrived broken"})
    assert WORLD.read(state, "reader") == "Ann: my kettle arrived broken, order 5606."
    assert WORLD.may_act(state, "reader") and not WORLD.may_act(state, "router")
    assert WORLD.act(state, "reader", "I am sorry to hear that") == "no order number in the reply"
    assert WORLD.act(state, "reader", "order 5607") is None and WORLD.stage(state) == 1
    assert WORLD.act(state, "router", W.file(state)) is None and WORLD.done(state)
    assert WORLD.reward(state) == 0.0 and WORLD.correct(state, "reader") == "order 5606"
    right = WORLD.start(state["problem"])
    for role in ("reader", "router"):
        WORLD.act(right, role, WORLD.correct(right, role))
    assert WORLD.reward(right) == 1.0


def test_the_planted_line_is_wrong_and_the_correct_ones_right():
    from agents.backends.base import example

    for line in W.CORRECT:
        given, shown = example(line)
        assert shown == f"order {W.ORDER.search(given).group(1)}"
    given, shown = example(W.WRONG)
    assert shown != f"order {W.ORDER.search(given).group(1)}" and W.WRONG in WORLD.wrong
    problems = [WORLD.problem(np.random.default_rng([0, i])) for i in range(50)]
    assert problems == [WORLD.problem(np.random.default_rng([0, i])) for i in range(50)]
    assert len({p["order"] for p in problems}) > 40


def test_a_lines_fate_is_kept_revised_or_pruned(library):
    from experiments.skill_evolution import fates
    from skills import Edit

    for name, body in (("a", "Line a."), ("b", "Line b."), ("c", "Line c.")):
        library.add(name, body, body, role="reader")
    library.apply([Edit("revise", "b", body="Line b, better.")])
    library.apply([Edit("prune", "c")])
    assert fates(library, {"Line a.": "a", "Line b.": "b", "Line c.": "c"}) == {"a": "kept", "b": "revised", "c": "pruned"}


@pytest.mark.slow
@pytest.mark.parametrize("seed, sets", [(0, ["run.episodes=64", "planted_world.heldout=24"]),  # one edit pass
                                        (3, [])])  # the world's own size: two passes (at one, seed 3 refuses its edit)
def test_grse_and_the_gate_prune_the_planted_line_and_keep_the_correct_ones(seed, sets):
    from experiments.skill_evolution import PLANTED, fates
    from scenarios import build_model, load

    exp = load(PLANTED, sets, seed=seed)
    model = build_model(exp)
    rounds = exp.run.episodes // exp.market.batch
    for _ in range(rounds):
        model.step()
    evolver = model.policy.evolver
    report = evolver.report()
    assert report["edit_passes"] == rounds // exp.skills.every and report["skill_edits_proposed"] > 0
    for gain in evolver.loop.gains:  # every accepted edit: no held-out drop beyond its noise
        assert gain["heldout_gain"] >= -gain["heldout_se"], gain
    assert report["heldout_worse_accepted"] == 0
    fate = fates(evolver._library(), {W.CORRECT[0]: "correct_1", W.CORRECT[1]: "correct_2", W.WRONG: "planted"})
    assert fate["correct_1"] == fate["correct_2"] == "kept", fate
    assert fate["planted"] in ("pruned", "revised"), (fate, evolver.loop.gains, report)
    assert seed != 3 or report["blame_moved_by_imitation"] > 0, report  # credit alone blamed a correct line here


def test_the_evolvers_read_scores_each_carried_line_alone_against_no_line(monkeypatch):
    """agents/llm/edit_pass.py's imitation read on a real round of the planted-line world, its engine a stand-in whose
    log-probabilities are a function of the prompt's one line and the completion: the planted line pulls towards
    the failed output, the correct ones away, a right output or an engine that cannot teacher-force reads as none."""
    from scenarios.text import scenario as text_scenario
    from experiments.skill_evolution import PLANTED
    from scenarios import build_model, load
    from tests.scenarios.test_wordmath_skills import Scripted

    class Forcing(Scripted):
        def forced(self, prompts, completions):
            pull = {W.WRONG: 2.0, W.CORRECT[0]: -1.0, W.CORRECT[1]: -3.0, "": 0.0}
            return [np.array([pull[p.skills] if c != self.right else 0.0, -0.5]) for p, c in zip(prompts, completions)]

    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Forcing())
    model = build_model(load(PLANTED, ["run.episodes=16", "planted_world.heldout=2", "planted_world.validation=2"]))
    model.step()
    evolver, names = model.policy.evolver, {line: name for (_, line), name in model.policy.catalogue.names.items()}
    trace, n = next((r.trace, n) for _, rollouts in evolver.window[-1] for r in rollouts
                    for n in r.trace.graph.nodes if r.trace.graph.nodes[n]["role"] == "reader")
    evolver.policy.backend.right = evolver.policy.task.lesson(trace.states[n], "reader")[1]
    (read,) = evolver._imitation([(trace, n)])
    carried = trace.graph.nodes[n]["skills"]
    expected = {names[W.WRONG]: 2.0, names[W.CORRECT[0]]: -1.0, names[W.CORRECT[1]]: -3.0}
    assert carried and read == {name: expected[name] for name in carried}
    trace.graph.nodes[n]["output"] = evolver.policy.backend.right  # a right output is no failed step
    assert evolver._imitation([(trace, n)]) == [{}]
    trace.graph.nodes[n]["output"] = "order 1"
    del Forcing.forced  # an engine without a teacher-forced pass: nothing read
    assert evolver._imitation([(trace, n)]) == [{}]
