"""The plan-then-render world (scenarios/plangrid.py): requests, plans and grids scored field by field, the
prefix-gated plan score, and a scripted group of rollouts played through the framework (agents/text_adapter.py) whose
signals the ``dars`` estimator reads, no model."""

import numpy as np

from agents import credit as C
from agents.credit.base import Trajectory
from agents.text_adapter import TextBatch, TextBoard
from scenarios import plangrid as P


def test_grids_are_read_back_field_by_field_and_plans_scored_by_their_right_prefix():
    target = {"row": "2", "col": "3", "mark": "X", "fill": "."}
    assert P.draw(target) == "..../..X./..../...."
    assert P.fields("..../..X./..../....") == target
    assert P.fields("..../..../..../....") == {"fill": "."}  # no mark: row, col and mark wrong
    assert P.prefix(target, target) == 1.0
    assert P.prefix({**target, "mark": "O"}, target) == 0.5  # row and col right, then the mark wrong
    assert P.prefix({**target, "row": "1"}, target) == 0.0  # the first field wrong: nothing, though three are right
    world = P.PlanGrid()
    p = world.problem(np.random.default_rng(3))
    assert world.problem(np.random.default_rng(3)) == p and P.PLAN.search(world.correct(world.start(p), "planner"))
    assert world.read(world.start(p), "planner") == world.request(p)


def play(world, moves, group=4):
    """Play ``moves[b]`` (role, text) in world b of a group on one problem: the batch and each world's observations."""
    batch = TextBatch(TextBoard(world), seed=7, horizon=world.horizon)
    batch.group = group
    batch.reset(group, np.random.default_rng(0))
    seen = [[batch.observe()[b]] for b in range(group)]
    for b, script in enumerate(moves):
        for role, text in script:
            obs = batch.observe()
            payload, why = batch.board.parse(role, text, obs[b])
            acting, actions = np.arange(group) == b, np.full(group, -1)
            if payload is not None:
                payloads = [None] * group
                payloads[b], actions[b] = payload, 0
                batch.board.deliver(payloads)
            batch.step(actions, acting)
            seen[b].append(batch.observe()[b])
    return batch, seen


def test_a_scripted_group_plays_and_dars_splits_its_credit_from_the_world_signals():
    world = P.PlanGrid()
    batch, _ = play(world, [[]] * 4)
    p = batch.states[0]["problem"]
    assert all(s["problem"] == p for s in batch.states)  # one problem for the group
    right, wrong_row = P.canonical(p), P.canonical({**p, "row": str(int(p["row"]) % 4 + 1)})
    moved = {**p, "col": str(int(p["col"]) % 4 + 1)}
    moves = [[("planner", right), ("renderer", f"grid: {P.draw(p)}")],
             [("planner", right), ("renderer", f"grid: {P.draw(moved)}")],  # the renderer moves the mark
             [("planner", wrong_row), ("renderer", f"grid: {P.draw({**p, 'row': wrong_row[10]})}")],
             [("planner", "plan: somewhere"), ("planner", right), ("renderer", f"grid: {P.draw(p)}")]]  # forfeit first
    batch, seen = play(world, moves)
    assert batch.solved.tolist() == [True, False, False, True]
    assert [world.reward(s) for s in batch.states] == [1.0, 0.75, 0.75, 1.0]
    signals = [batch.credit_signals(np.stack(seen[b]), np.zeros(len(moves[b]), int), b, np.arange(len(moves[b])))
               for b in range(4)]
    assert signals[0] == {"plan": [right, ""], "prefix": [1.0, -1.0]}
    assert signals[2] == {"plan": [wrong_row, ""], "prefix": [0.0, -1.0]}  # its first field wrong: no gated reward
    assert signals[3] == {"plan": ["", right, ""], "prefix": [0.0, 1.0, -1.0]}
    group = [Trajectory(outcome=float(batch.solved[b]), agent=np.zeros(len(moves[b]), int),
                        action=np.zeros(len(moves[b]), int), **signals[b]) for b in range(4)]
    # the right plan's three renders [1, 0, 1] vary as much as the group's outcomes [1, 0, 0, 1] (within: 2/3 over
    # 2 dof = 1/3; total: 1 over 3 = 1/3): the plans explain none of it, w = 0, the renderer holds A_g
    assert C.module("dars").planner_share(group, C.make("dars").cfg) == 0.0
    got, A = C.make("dars")(group).steps, C.make("grpo")(group).steps
    q_bar = 3 / 5  # the planner steps' gated scores 1, 1, 0, 0 (the forfeit), 1
    for b, q in enumerate([[1.0], [1.0], [0.0], [0.0, 1.0]]):
        np.testing.assert_allclose(got[b], [x - q_bar for x in q] + [A[b][-1]])
