"""The multi-hop lookup world (scenarios/multihop.py): its facts, the frozen retriever, the gold clue chain, and the
per-step ``hit`` signal as the framework hands it to the credit estimators (scenarios/text/adapter.py), no model."""

import numpy as np

from scenarios.text.adapter import TextBatch, TextBoard
from scenarios import multihop as M


def test_the_facts_and_the_retriever_find_the_clue_chain():
    assert len(M.FACTS) == 1000 and len(set(M.FACTS)) == 1000
    world = M.MultiHop()
    p = world.problem(np.random.default_rng(3))
    x, y = p["chain"]
    assert M.FACTS[x].startswith(M.PEOPLE[p["person"]] + " works with") and M.FACTS[y].endswith(p["city"] + ".")
    state = world.start(p)
    assert M.search(world.correct(state, "searcher").partition(":")[2], 1) == [x]  # the first hop's query finds it
    state["shown"] = [x]
    assert M.search(world.correct(state, "searcher").partition(":")[2], 1) == [y]  # then the second hop's
    assert M.search("nothing matches", 5) == [0, 1, 2, 3, 4]  # ties: lower id first


def test_a_rollout_plays_and_each_step_says_whether_its_query_hit():
    world = M.MultiHop()
    board = TextBoard(world)
    batch = TextBatch(board, seed=7, horizon=6)
    batch.reset(1, np.random.default_rng(0))
    state = batch.states[0]
    person, city = M.PEOPLE[state["problem"]["person"]], state["problem"]["city"]
    moves = [("searcher", "search: zebra"), ("searcher", f"search: {person} works with"),
             ("answerer", f"answer: {city}")]
    seen = [batch.observe()[0]]
    for role, text in moves:
        obs = batch.observe()
        payload, why = board.parse(role, text, obs[0])
        assert payload is not None, why
        board.deliver([payload])
        batch.step(np.array([0]), np.array([True]))
        seen.append(batch.observe()[0])
    assert batch.solved.tolist() == [True] and world.reward(batch.states[0]) == 1.0
    signals = batch.credit_signals(np.stack(seen), np.zeros(3, int), 0, np.arange(3))
    assert signals == {"hit": [0, 1, -1]}  # a miss, the clue found, the answer
