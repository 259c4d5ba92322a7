"""The planted-line case in the suite: GRSE and the evidence gate on a new LLM world with one wrong worked example
among correct ones (tests/skills/planted_world.py, written on the public text-world API), real SmolLM2.

The issue's acceptance, for one seed at the smallest size that still has an edit pass the gate can judge:
every accepted edit leaves held-out success no lower than one standard error of its paired differences, the
correct lines survive, the planted one is pruned or revised. Five seeds at the world's own size:
``python -m experiments.skill_evolution --what planted --seeds 5`` (docs/results/skill_evolution.md): held-out
success 0.75 -> 1.00 in all five, the planted line pruned or revised in four, the correct lines kept in four (in
seed 3 a correct line the planted one interacts with was pruned instead, a real improvement the gate let through).
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
    from agents import parse

    for line in W.CORRECT:
        given, shown = parse.example(line)
        assert shown == f"order {W.ORDER.search(given).group(1)}"
    given, shown = parse.example(W.WRONG)
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
def test_grse_and_the_gate_prune_the_planted_line_and_keep_the_correct_ones():
    from experiments.skill_evolution import PLANTED, fates
    from scenarios import build_model, load

    exp = load(PLANTED, ["run.episodes=64", "planted_world.heldout=24"], seed=0)  # 4 rounds, one edit pass
    model = build_model(exp)
    for _ in range(exp.run.episodes // exp.market.batch):
        model.step()
    evolver = model.policy.evolver
    report = evolver.report()
    assert report["edit_passes"] == 1 and report["skill_edits_proposed"] > 0
    for gain in evolver.loop.gains:  # every accepted edit: no held-out drop beyond its noise
        assert gain["heldout_gain"] >= -gain["heldout_se"], gain
    assert report["heldout_worse_accepted"] == 0
    fate = fates(evolver._library(), {W.CORRECT[0]: "correct_1", W.CORRECT[1]: "correct_2", W.WRONG: "planted"})
    assert fate["correct_1"] == fate["correct_2"] == "kept", fate
    assert fate["planted"] in ("pruned", "revised"), (fate, evolver.loop.gains, report)
