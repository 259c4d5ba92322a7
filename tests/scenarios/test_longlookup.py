"""The long-lookup world (scenarios/longlookup.py): a 4-fact chain over multihop's facts in a context of 3 turns, the
compaction that keeps the turns it cites, the ``cited`` and ``retrieved`` signals as the framework hands them to the
credit estimators (scenarios/text/adapter.py), and a market round with a scripted stand-in for the LLM, no model."""

import re
import zlib

import numpy as np
import pytest

from agents import credit as C
from scenarios.text import scenario as text_scenario
from agents.credit.market import trajectories
from scenarios.text.adapter import TextBatch, TextBoard
from scenarios import build_model, load
from scenarios import longlookup as L
from scenarios.multihop import FACTS, PEOPLE, search
from tests.scenarios.scripted_backend import ScriptedBackend


def test_a_problem_is_a_chain_of_colleagues_ending_in_a_city():
    world = L.LongLookup()
    p = world.problem(np.random.default_rng(3))
    assert world.problem(np.random.default_rng(3)) == p and len(p["clues"]) == 4
    people = [PEOPLE[p["person"]]] + [FACTS[c].split(" works with ")[1].rstrip(".") for c in p["clues"][:3]]
    for k in range(3):  # each link names the next person; the last fact gives the last one's city
        assert FACTS[p["clues"][k]] == f"{people[k]} works with {people[k + 1]}."
    assert FACTS[p["clues"][3]] == f"{people[3]} lives in {p['city']}."
    assert world.read(world.start(p), "searcher").startswith(
        f"Where does the colleague of the colleague of the colleague of {people[0]} live? Context: (empty)")


def play(world, moves):
    """Play ``moves`` (role, text) in one world: the batch, its observations and the refusals."""
    batch = TextBatch(TextBoard(world), seed=7, horizon=world.horizon)
    batch.reset(1, np.random.default_rng(0))
    seen, refused = [batch.observe()[0]], []
    for role, text in moves:
        payload, why = batch.board.parse(role, text, batch.observe()[0])
        if payload is not None:
            batch.board.deliver([payload])
        else:
            refused.append(why)
        batch.step(np.array([0 if payload is not None else -1]), np.array([True]))
        seen.append(batch.observe()[0])
    return batch, seen, refused


def test_a_full_context_is_compacted_to_the_cited_turns_and_each_step_says_what_it_retrieved_and_whether_it_was_cited():
    world = L.LongLookup()
    batch, _, _ = play(world, [])
    p = batch.states[0]["problem"]
    names = [PEOPLE[p["person"]]] + [FACTS[c].split(" works with ")[1].rstrip(".") for c in p["clues"][:3]]
    moves = [("searcher", f"search: {names[0]} works with"), ("searcher", "search: zebra"),  # a distractor
             ("searcher", f"search: {names[1]} works with"),  # turn 3: the context (3 turns) is full
             ("compactor", "keep: 3"),  # refused: a compaction cites 2 turns
             ("compactor", "keep: 1, 3"),  # turn 2 dropped
             ("searcher", f"search: {names[2]} works with"),  # turn 4: full again
             ("compactor", "keep: 3, 4"),  # turn 1 dropped now, but it was cited once
             ("searcher", f"search: {names[3]} lives in"), ("answerer", f"answer: {p['city']}")]
    batch, seen, refused = play(world, moves)
    assert refused == ["illegal: keep cites 2 to 2 of the context's turns ([1, 2, 3])"]
    state = batch.states[0]
    assert batch.solved.tolist() == [True] and state["context"] == [3, 4, 5]
    read = world.read(state, "answerer")
    assert f"[2] search: zebra -> (dropped) [3] search: {names[1]} works with -> " in read  # a query, not its facts
    assert read.endswith(f"[5] search: {names[3]} lives in -> " + " ".join(FACTS[i] for i in search(names[3] + " lives in", 3)))
    assert FACTS[p["clues"][1]] in read and FACTS[p["clues"][3]] in read
    signals = batch.credit_signals(np.stack(seen), np.zeros(len(moves), int), 0, np.arange(len(moves)))
    assert signals["cited"] == [1, 0, 1, -1, -1, 1, -1, -1, -1]  # turn 5 and the non-searches: no compaction judged
    ids = [tuple(search(text.partition(":")[2], 3)) for role, text in moves if role == "searcher"]
    assert signals["retrieved"] == [ids[0], (0, 1, 2), ids[2], (), (), ids[3], (), ids[4], ()]
    assert p["clues"][0] in ids[0] and p["clues"][3] in ids[4]


def test_a_full_context_blocks_the_searcher_until_a_compaction():
    world = L.LongLookup()
    state = world.start(world.problem(np.random.default_rng(0)))
    for query in ("a", "b", "c"):
        assert world.may_act(state, "searcher") and not world.may_act(state, "compactor")
        assert world.act(state, "searcher", f"search: {query}") is None
    assert not world.may_act(state, "searcher") and world.may_act(state, "compactor") and world.stage(state) == 1
    assert world.act(state, "compactor", "keep: 1, 4").startswith("illegal")  # turn 4 is not in the context
    assert world.act(state, "compactor", "keep: 2, 3") is None and world.may_act(state, "searcher")


class Scripted(ScriptedBackend):
    """Follows the chain through the context's facts, but for one prompt in four (by a hash of it): the searcher
    then searches a distractor, the compactor drops the turn naming the chain's latest person, the answerer, who
    answers only once the city is in the context, guesses a wrong one."""

    def answer(self, p) -> str:
        """Walks the chain from the question's person through the query log: a turn that searched the current
        person advances to the colleague its facts name or, where they were dropped, to the next query's subject."""
        slip = zlib.crc32(f"{p.user}|{p.seed}|{p.skills}".encode()) % 4 == 0
        person, latest, links = re.search(r"colleague of (\w+ \w+) live\?", p.user)[1], None, 0
        turns = re.findall(r"\[(\d+)\] search: (.*?) -> ([^\[]*)", p.user)
        for k, (n, query, facts) in enumerate(turns):
            if links < 3 and query == f"{person} works with":
                found = re.search(fr"(?:^|\. ){person} works with (\w+ \w+)\.", facts)
                later = [q.rsplit(" ", 2)[0] for _, q, _ in turns[k + 1:] if q.rsplit(" ", 2)[0] != person]
                if found or later:
                    person, latest, links = found[1] if found else later[0], n if found else latest, links + 1
        if p.system.startswith("Follow"):
            return "search: zebra" if slip else f"search: {person} {'lives in' if links == 3 else 'works with'}"
        if p.system.startswith("The context"):
            others = [n for n, _, facts in turns if n != latest and facts.strip() != "(dropped)"]
            return "keep: " + ", ".join(others[-2:] if slip or latest is None else [others[-1], latest])
        city = re.search(fr"(?:> |\. ){person} lives in (\w+)\.", p.user) if links == 3 else None
        return f"answer: {'Quimby' if slip else city[1]}" if city else "I do not know yet."



def test_a_market_round_plays_the_world_and_its_groups_carry_the_signals(monkeypatch):
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Scripted())
    exp = load("longlookup", ["market.batch=8", "agents.group=4", "longlookup.heldout=4", "longlookup.horizon=20"])
    model = build_model(exp)
    model.world.group = 4  # what learned actions set: 2 problems x 4 rollouts (here the rule policy acts)
    model.step()
    groups = trajectories(model, actions=np.zeros(model.trace.path.shape, int),
                          world_signals=model.world.credit_signals, group=4)
    steps = [t for g in groups for t in g]
    assert len(groups) == 2 and all(len(t.cited) == len(t.retrieved) == len(t) for t in steps)
    assert 0 < sum(t.outcome for t in steps) < len(steps)  # the scripted slips fail some rollouts, not all
    for t in steps:
        assert set(np.asarray(t.cited).tolist()) <= {-1, 0, 1}
        assert all(len(ids) in (0, 3) for ids in t.retrieved) and (np.asarray(t.cited) >= 0).any()
    for group in groups:  # self_credit reads them: a dropped turn a quarter of grpo's, a repeated failing retrieval 1.5x
        for t, got, a in zip(group, C.make("self_credit")(group).steps, C.make("grpo")(group).steps):
            if a[0] == 0:  # a group whose rollouts all failed: nothing to move
                np.testing.assert_allclose(got, 0.0)
                continue
            dropped, cited = [0.25, 0.375] if a[0] < 0 else [0.25], [1.0, 1.5] if a[0] < 0 else [1.0]
            assert all(np.isclose(g / a[0], dropped if c == 0 else cited).any() for g, c in zip(got, t.cited))
    summary = text_scenario.metrics(model, [], exp.scenario)  # the held-out market and the complete agent
    assert summary["backend"] == "scripted" and 0 <= summary["heldout_reward"] <= 1
    assert 0 <= summary["complete_agent_success"] <= 1


@pytest.mark.slow
def test_smollm2_plays_a_round_and_the_lora_learner_credits_it_with_self_credit(monkeypatch):
    """The real SmolLM2 through the market and the LoRA learner, small (one group of 4 rollouts): the learner's
    advantages come from self_credit on the round's own signals (the real estimator, its calls recorded)."""
    from agents.learners import lm_grpo
    from scenarios.registry import get_scenario

    calls, real = [], lm_grpo.step_advantages

    def recorded(model, estimator, group, actions, logp):
        calls.append((estimator.name, real(model, estimator, group, actions, logp)))
        return calls[-1][1]

    monkeypatch.setattr(lm_grpo, "step_advantages", recorded)
    exp = load("longlookup", ["agents.actions=grpo", "agents.credit=self_credit", "market.batch=4", "agents.group=4",
                              "longlookup.heldout=1", "longlookup.validation=1", "run.episodes=4"], seed=3)
    model = get_scenario("longlookup").make_model(exp)
    model.step()
    (name, advantage), = calls
    outcome = model.trace.solved.astype(float)
    assert name == "self_credit" and advantage.shape == model.trace.path.shape and np.isfinite(advantage).all()
    assert (advantage[model.trace.path < 0] == 0).all()
    if np.ptp(outcome) == 0:  # rollouts that all scored alike: nothing to learn, no update
        assert (advantage == 0).all() and model.policy.action_learner.counts["policy_updates"] == 0
    else:
        assert model.policy.action_learner.counts["policy_updates"] == 1
