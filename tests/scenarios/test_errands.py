"""The errands world (scenarios/errands.py) and the diamond_sd objective's state graph on it (agents/objectives/
diamond_sd.py): order-free fetches meet in one canonical state, a good off the list is the breakpoint, and only the
failure's steps from there on are taught, each the reply an own success wrote at the same state."""

import re
import zlib

import numpy as np
import pytest
import torch

from scenarios.text import scenario as text_scenario
from agents.objectives import PolicyBatch, make
from agents.objectives import diamond_sd as D
from agents.objectives.diamond_sd import Memory, Step, breakpoint_of, plan
from scenarios import build_model
from scenarios import errands as E
from scenarios.run.config import ConfigError, load
from tests.scenarios.scripted_backend import ScriptedBackend


def test_the_basket_is_the_canonical_state_and_a_good_off_the_list_loses_the_errand():
    world = E.Errands()
    p = world.problem(np.random.default_rng(3))
    assert world.problem(np.random.default_rng(3)) == p and len(set(p)) == 3 and set(p) <= set(E.GOODS)
    one, two = world.start(p), world.start(p)
    for good in p:  # two orders, one canonical state
        assert world.act(one, "shopper", f"buy {good}") is None
    for good in reversed(p):
        assert world.act(two, "shopper", f"Buy {good}.") is None
    assert world.subgoals(one) == world.subgoals(two) == frozenset(p) and world.done(one) and world.reward(one) == 1
    state = world.start(p)
    assert world.act(state, "shopper", "eggs please").startswith("expected")
    assert world.act(state, "shopper", f"buy {p[0]}") is None
    assert world.act(state, "shopper", f"buy {p[0]}").startswith("illegal")  # refused: a forfeit, no coin spent
    wrong = next(g for g in E.GOODS if g not in p)
    assert world.act(state, "shopper", f"buy {wrong}") is None and state["coins"] == 1
    assert world.act(state, "shopper", f"buy {p[1]}") is None
    assert world.done(state) and world.reward(state) == 0 and world.subgoals(state) == {p[0], wrong, p[1]}
    assert world.read(state, "shopper").endswith(f"Still to buy: {p[2]}. Coins: 0.")  # the basket is not shown
    assert world.read(world.start(p), "shopper").endswith(f"Still to buy: {', '.join(p)}. Coins: 3.")


def episode(e, solved, moves, problem="0:1"):
    """Steps of one episode from (reply, what it fetched or None: refused), the basket growing from empty."""
    steps, basket = [], frozenset()
    for reply, good in moves:
        after = basket | {good} if good else basket
        steps.append(Step(e, solved, problem, "shopper", basket, after, reply))
        basket = after
    return steps


SUCCESS = episode(0, True, [("buy eggs", "eggs"), ("buy ink", "ink"), ("buy tea", "tea")])
WRONG = episode(1, False, [("buy eggs", "eggs"), ("buy rope", "rope"), ("buy ink", "ink")])  # the 2nd step goes off


def test_the_breakpoint_of_a_planted_failure_is_its_wrong_buy_and_only_from_there_it_is_taught():
    """Episode 1 buys eggs (as the success did), then rope (off the list: {eggs, rope} no success visited), then ink.
    The breakpoint is step 1; it is taught the success's reply at {eggs}, "buy ink"; step 0, before it, is not
    (though the success wrote a reply at {} too), nor step 2, whose state no success visited."""
    retrieved, breaks, ids = plan(SUCCESS + WRONG, Memory(64))
    assert breaks.tolist() == [False, False, False, False, True, False]
    assert retrieved == [None, None, None, None, "buy ink", None]
    assert ids.tolist() == [0, 1, 2, 0, 1, 3]  # canonical states: {}, {eggs}, {eggs, ink}; {eggs, rope} new


def test_order_free_successes_share_states_a_stalled_failure_breaks_where_it_first_stood_still():
    other = episode(2, True, [("buy tea", "tea"), ("buy eggs", "eggs"), ("buy ink", "ink")])
    detour = episode(3, False, [("buy tea", "tea"), ("buy ink", "ink"), ("buy soap", "soap")])
    stalled = episode(4, False, [("buy eggs", "eggs"), ("I will shop", None), ("ok", None)])
    retrieved, breaks, _ = plan(SUCCESS + other + detour + stalled, Memory(64))
    # the detour breaks at {ink, tea}, a node no success visited (the region is what the successes showed); the
    # stalled failure never left the region and breaks at its first refusal, taught there and at the next
    assert np.flatnonzero(breaks).tolist() == [7, 10]
    assert retrieved[6:] == [None, "buy eggs", None, None, "buy ink", "buy ink"]
    unknown = episode(5, False, [("buy eggs", "eggs")], problem="0:2")
    assert breakpoint_of(unknown, Memory(4)) is None  # no success known on its problem: no region


def test_the_memory_carries_successes_to_later_rounds_is_bounded_and_checkpointed():
    memory = Memory(64)
    plan(SUCCESS, memory)
    retrieved, breaks, _ = plan(WRONG, memory)  # a later round: its only success is remembered
    assert breaks.tolist() == [False, True, False] and retrieved == [None, "buy ink", None]
    copy = Memory(64)
    copy.load_state_dict(memory.state_dict())
    assert copy.nodes == memory.nodes and len(memory.nodes) == 4  # {}, {eggs}, {eggs, ink}, the goal
    small = Memory(2)
    plan(SUCCESS, small)
    assert list(small.nodes) == [("0:1", ("eggs", "ink")), ("0:1", ("eggs", "ink", "tea"))]  # the latest two
    assert plan(WRONG, small)[1].tolist() == [False, False, False]  # {} forgotten: no region known from there


def test_a_world_without_subgoals_refuses_diamond_sd_naming_the_signal():
    with pytest.raises(ConfigError, match=r"agents.objective = 'diamond_sd'.*does not provide: .*subgoals"):
        load("wordmath", ["agents.actions=grpo", "agents.objective=diamond_sd"])
    assert load("errands", ["agents.actions=grpo", "agents.objective=diamond_sd"]).agents.objective == "diamond_sd"


class Scripted(ScriptedBackend):
    """Buys the first good still to buy, but for two prompts in eight (by a hash of it) the first stall's good that is
    not still to buy (off the list, or bought already: refused), and for one in eight it writes what the world cannot
    read (a refusal)."""

    def answer(self, p) -> str:
        wanted = re.search(r"Still to buy: ([^.]*)\.", p.user)[1].split(", ")
        slip = zlib.crc32(f"{p.user}|{p.seed}|{p.skills}".encode()) % 8
        if slip == 0:
            return "I am going shopping."
        if slip in (1, 2):
            return "buy " + next(g for g in E.GOODS if g not in wanted)
        return "buy " + wanted[0]


def test_a_market_round_on_errands_gives_diamond_sd_its_breakpoints_and_recovery_targets(monkeypatch):
    """A market round with the scripted stand-in, its completions recorded as the LoRA learner reads them; the state
    graph (diamond_sd.round_steps, plan: the learner's path) breaks only failures, teaches them only replies that a
    success of the same problem wrote at the same basket, and the objective's loss on them is finite (a softmax over
    the round's distinct replies stands in for the LM: no model here)."""
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Scripted())
    model = build_model(load("errands", ["market.batch=16", "agents.group=4", "errands.heldout=4"]))
    model.world.group = 4  # what learned actions set: 4 problems x 4 rollouts
    policy = model.policy
    policy.explore_temperature = 0.0  # record the round's completions, as under agents.actions = "grpo"
    model.step()
    trace, T = model.trace, model.trace.path.shape[0]
    rows = [(b, trace.obs[t, b], policy.roles[policy.role[row]].name, payload, done.text)
            for t, generations in enumerate(policy.generations[-T:]) for b, row, _, done, payload in generations]
    graph = D.round_steps(policy.task, trace.solved, rows)
    retrieved, breaks, ids = D.plan(graph, D.Memory(64))
    assert 0 < trace.solved.sum() < len(trace.solved) and breaks.sum() > 0
    taught = {(s.problem, s.before, s.role): s.reply for s in graph if s.solved and s.after != s.before}
    for e in {s.episode for s in graph}:
        rows_e = [i for i, s in enumerate(graph) if s.episode == e]
        assert breaks[rows_e].sum() <= (0 if trace.solved[e] else 1)
        first = next((k for k, i in enumerate(rows_e) if breaks[i]), len(rows_e))
        assert all(retrieved[i] is None for i in rows_e[:first])  # never before the breakpoint
        for i in rows_e[first:]:
            s = graph[i]
            assert retrieved[i] is None or (s.problem, s.before, s.role) in taught
    recovery = np.array([r is not None for r in retrieved])
    assert recovery.sum() > 0
    replies = sorted({s.reply for s in graph} | {r for r in retrieved if r})
    theta = torch.zeros(len(replies), requires_grad=True)
    logp = torch.log_softmax(theta, -1)
    index = lambda texts: torch.tensor([replies.index(x) if x else 0 for x in texts])  # noqa: E731
    solved, own = torch.tensor([float(s.solved) for s in graph]), index([s.reply for s in graph])
    batch = PolicyBatch.one_token(logp=logp[own], old_logp=logp.detach()[own], advantage=solved - solved.mean(),
                                  outcome=solved, group=torch.zeros(len(graph), dtype=torch.long),
                                  episode=torch.tensor([s.episode for s in graph]), entropy=torch.ones(len(graph)),
                                  subgoals=torch.as_tensor(ids), breakpoint=torch.as_tensor(breaks),
                                  retrieved_logp=logp[index(retrieved)], retrieved_mask=torch.as_tensor(recovery))
    value, stats = make("diamond_sd")(batch)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(theta.grad).all() and theta.grad.abs().sum() > 0
    assert (stats["breakpoints"], stats["recovery_steps"]) == (float(breaks.sum()), float(recovery.sum()))


@pytest.mark.slow
def test_smollm2_plays_a_round_and_the_lora_learner_runs_diamond_sd(monkeypatch):
    """The real SmolLM2 through the market and the LoRA learner, small (one group of 4 rollouts): the learner gives
    diamond_sd the state graph's signals and remembers the round's successes (its memory, in its checkpoint)."""
    from scenarios.registry import get_scenario

    seen = []
    exp = load("errands", ["agents.actions=grpo", "agents.objective=diamond_sd", "market.batch=4", "agents.group=4",
                           "errands.heldout=1", "errands.validation=1", "run.episodes=4"], seed=3)
    model = get_scenario("errands").make_model(exp)
    learner = model.policy.action_learner
    update = learner.grpo.update
    monkeypatch.setattr(learner.grpo, "update", lambda *a, **k: seen.append(update(*a, **k)) or seen[-1])
    model.step()
    (stats,) = seen
    assert np.isfinite(stats["policy_loss"]) and np.isfinite(stats["grad_norm"]) and stats["breakpoints"] >= 0
    solved = model.trace.solved
    assert (len(learner.memory.nodes) > 0) == bool(solved.any())
    assert learner.state_dict()["memory"] == learner.memory.state_dict()
    assert (learner.counts["lm_breakpoints"], learner.counts["lm_recovery_steps"]) == (stats["breakpoints"],
                                                                                       stats["recovery_steps"])
