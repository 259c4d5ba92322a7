"""The plan-then-render world (scenarios/plangrid.py): requests, plans and grids scored field by field, the
prefix-gated plan score, a scripted group of rollouts played through the framework (scenarios/text/adapter.py) whose
signals the ``dars`` estimator reads, and a market round with a scripted stand-in for the LLM (each answer a
function of the prompt: the right plan or grid, or one with a field moved), no model."""

import re
import zlib

import numpy as np

from agents import credit as C
from scenarios.text import scenario as text_scenario
from agents.credit.base import Trajectory
from agents.credit.market import trajectories
from scenarios.text.adapter import TextBatch, TextBoard
from scenarios import build_model, load
from scenarios import plangrid as P
from tests.scenarios.scripted_backend import ScriptedBackend


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


WORDS = {**{w: str(i + 1) for i, w in enumerate(P.NUMBERS)}, **{v: k for k, v in P.FILLS.items()}}


class Scripted(ScriptedBackend):
    """Plans a request and draws a plan right, but for one prompt in three (by a hash of it): a row or column moved;
    ``faithful``: every plan is drawn right, so only the planner slips."""

    def __init__(self, faithful: bool = False):
        super().__init__()
        self.faithful = faithful

    def answer(self, p) -> str:
        slip = zlib.crc32(f"{p.user}|{p.seed}|{p.skills}".encode()) % 3 == 0
        if self.faithful and not p.user.startswith("One "):
            slip = False
        if p.user.startswith("One "):
            m = re.match(r"One (\S) in row (\w+), column (\w+), on a field of (.+)\.", p.user)
            plan = {"row": WORDS[m[2]], "col": WORDS[m[3]], "mark": m[1], "fill": WORDS[m[4]]}
            return P.canonical({**plan, "row": str(int(plan["row"]) % 4 + 1)} if slip else plan)
        plan = dict(zip(P.FIELDS, P.PLAN.search(p.user).groups()))
        return "grid: " + P.draw({**plan, "col": str(int(plan["col"]) % 4 + 1)} if slip else plan)



def test_a_market_round_plays_the_world_and_dars_reads_its_groups(monkeypatch):
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Scripted(faithful=True))
    exp = load("plangrid", ["market.batch=8", "agents.group=4", "plangrid.heldout=4"])
    model = build_model(exp)
    model.world.group = 4  # what learned actions set: 2 problems x 4 rollouts (here the rule policy acts)
    model.step()
    groups = trajectories(model, actions=np.zeros(model.trace.path.shape, int),
                          world_signals=model.world.credit_signals, group=4)
    pid = model.world.pid
    assert len(groups) == 2 and (pid[:4] == pid[0]).all() and (pid[4:] == pid[4]).all()
    dars = C.make("dars")
    # the renders are faithful, so this round's failures are all planner slips (a row moved): the plans explain them
    assert [[t.outcome == (t.prefix[0] == 1.0) for t in g] for g in groups] == [[True] * 4] * 2
    assert [C.module("dars").planner_share(g, dars.cfg) for g in groups] == [1.0, 1.0]
    for group in groups:
        assert all(len(t.plan) == len(t) == len(t.prefix) for t in group)
        A, w = C.make("grpo")(group).steps, C.module("dars").planner_share(group, dars.cfg)
        planned = np.concatenate([np.asarray(t.prefix)[np.asarray(t.prefix) >= 0] for t in group])
        for t, got, a in zip(group, dars(group).steps, A):
            q = np.asarray(t.prefix)
            expect = np.where(q >= 0, w * a + (q - planned.mean()), (1 - w) * a)
            np.testing.assert_allclose(got, expect)
    summary = text_scenario.metrics(model, [], exp.scenario)
    assert summary["backend"] == "scripted" and 0 < summary["heldout_reward"] <= 1
