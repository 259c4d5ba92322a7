"""The blocks scenario: the world's rules, the instance generator, the features, and that the economy learns."""

import numpy as np
import pytest

import torch

from agents import AgentsConfig
from agents.learners.policy import LearnedPolicy
from agents.rules import parse
from market import MarketConfig, MarketModel, PopulationConfig
from scenarios import blocks
from scenarios.run.config import load
from scenarios.run.runner import run_experiment


def market_of(exp, seed: int, initial_rules=None) -> MarketModel:
    """The scenario's economy (value bids over blocks' rules), optionally from hand-written rules."""
    world, policy = blocks.build(exp.scenario, initial_rules)
    return MarketModel(world, LearnedPolicy(policy, exp.agents, seed=seed, learned_bids=exp.market.bid_scheme == "learned"), exp.market, exp.population, seed=seed)


def world_of(goal, s1, s2, s3, **cfg):
    return blocks.BlocksWorld(blocks.Config(**cfg), [blocks.Instance(tuple(goal), (tuple(s1), tuple(s2), tuple(s3)))])


def stacks(world):
    return [world.stack[0, s, : world.height[0, s]].tolist() for s in range(4)]


def move(world, name):
    return world.step(np.array([blocks.ACTIONS.index(name)]), np.array([True]))


def test_moves_and_illegal_moves():
    world = world_of([1, 2], [2], [], [1])
    world.reset(1, None)
    move(world, "1to2")
    assert stacks(world) == [[1, 2], [], [2], [1]]
    reward, done = move(world, "1to3")  # stack 1 is empty: rejected, counted, nothing moves
    assert stacks(world) == [[1, 2], [], [2], [1]] and world.invalid.tolist() == [1]
    assert reward.tolist() == [0.0] and done.tolist() == [False]
    world.step(np.array([blocks.ACTIONS.index("2to1")]), np.array([False]))  # not acting: nothing happens
    assert stacks(world) == [[1, 2], [], [2], [1]] and world.invalid.tolist() == [1]


@pytest.mark.parametrize("reward, paid", [("unit", 1.0), ("size", 2.0)])
def test_goal_check_pays_once_and_only_for_the_whole_goal(reward, paid):
    world = world_of([1, 2], [], [2], [1], reward=reward)
    world.reset(1, None)
    reward, done = move(world, "3to1")  # a correct prefix is not the goal
    assert reward.tolist() == [0.0] and not done[0] and not world.solved[0]
    reward, done = move(world, "2to1")
    assert reward.tolist() == [paid] and done[0] and world.solved[0]  # 1 credit, or n: one per goal block
    reward, done = move(world, "1to2")  # the episode is over: later steps change nothing
    assert reward.tolist() == [0.0] and not done[0] and stacks(world)[1] == [1, 2]


def test_horizon_ends_a_failed_episode():
    world = world_of([1, 2], [], [2], [1], horizon_factor=2)
    world.reset(1, None)
    assert world.horizon == 4
    for t in range(4):
        reward, done = move(world, "2to3" if t % 2 == 0 else "3to2")
    assert done[0] and reward[0] == 0 and not world.solved[0]


def test_features():
    # goal 1 2 3 1; stack 1 = [1, 3, 2] (prefix 1, two wrong blocks); stack 2 = [2, 1]; stack 3 = [3]
    world = world_of([1, 2, 3, 1], [1, 3, 2], [2, 1], [3], features=list(blocks.FEATURES))
    world.reset(1, None)
    obs = world.observe()[0].tolist()
    # next needed colour is 2: on top of stack 1's wrong part (depth 0) and under the 1 in stack 2 (depth 1)
    assert dict(zip(blocks.FEATURES, obs)) == {"wrong1": 2, "prefix": 1, "progress": 2, "need_at": 1,
                                               "need_depth": 0, "next": 2, "top1": 2, "top2": 1, "top3": 3}
    assert obs[-3:] == [3, 2, 1]  # the market's columns: heights of stacks 1..3
    hidden = world_of([1, 2], [], [2], [1], features=["need_at", "wrong1"])
    hidden.reset(1, None)
    assert hidden.space.features == ("wrong1", "need_at") and hidden.observe().tolist() == [[0, 3, 0, 1, 1]]


def reference_features(goal: list, piles: list[list]) -> list[int]:
    """FEATURES read off the stacks as lists, the way blocks/config.py defines them (the spec of the kernel)."""
    prefix = 0
    while prefix < min(len(piles[0]), len(goal)) and piles[0][prefix] == goal[prefix]:
        prefix += 1
    need = goal[prefix] if prefix < len(goal) else 0
    reachable = []  # (blocks on top of the topmost copy, stack), in the tie order: stacks 2, 3, 1
    for s in (2, 3, 1):
        pile = piles[s - 1]
        copies = [i for i in range(prefix if s == 1 else 0, len(pile)) if pile[i] == need]
        if need and copies:
            reachable.append((len(pile) - 1 - max(copies), s))
    depth, at = min(reachable, key=lambda r: r[0]) if reachable else (0, 0)
    tops = [pile[-1] if pile else 0 for pile in piles]
    return [min(len(piles[0]) - prefix, 3), min(prefix, 3), 10 * prefix // len(goal), at, min(depth, 3), need, *tops]


@pytest.mark.parametrize("seed", range(4))
def test_features_of_random_states_match_their_definition(seed):
    """The compiled observation against the definition, on instances of every size walked by random moves."""
    rng = np.random.default_rng(seed)
    instances = [blocks.generate(int(n), 3, rng) for n in rng.choice([1, 2, 4, 8, 16, 32], size=16)]
    world = blocks.BlocksWorld(blocks.Config(features=list(blocks.FEATURES), horizon_factor=50), instances)
    world.reset(len(instances), None)
    for _ in range(60):
        obs = world.observe()
        for b in range(len(instances)):
            piles = [world.stack[b, s, : world.height[b, s]].tolist() for s in (1, 2, 3)]
            goal = world.stack[b, 0, : world.n[b]].tolist()
            assert obs[b].tolist() == reference_features(goal, piles) + [len(p) for p in piles]
        world.step(rng.integers(-1, len(blocks.ACTIONS) + 1, size=len(instances)), rng.random(len(instances)) < 0.9)


def test_generator_is_deterministic_and_deals_the_goals_blocks():
    cfg = blocks.Config(heldout_count=20)
    a, b = blocks.heldout(cfg, 8), blocks.heldout(cfg, 8)
    assert a == b and a != blocks.heldout(blocks.Config(heldout_count=20, heldout_seed=1), 8)
    for inst in a:
        assert sorted(inst.goal) == sorted(sum(inst.stacks, ())) and len(inst.goal) == 8
        assert inst.stacks[0] != inst.goal  # never solved before the first move
    w1, w2 = blocks.BlocksWorld(cfg), blocks.BlocksWorld(cfg)
    w1.reset(16, np.random.default_rng(5))
    w2.reset(16, np.random.default_rng(5))
    assert (w1.stack == w2.stack).all()


def test_the_hand_written_solution_solves_heldout_instances_through_the_market():
    """The features suffice: six rules solve every size (frozen: no money moves)."""
    cfg = blocks.Config(heldout_count=30)
    world, policy = blocks.build(cfg, initial_rules=list(blocks.SOLUTION))
    model = MarketModel(world, policy, MarketConfig(), PopulationConfig(initial_agents=6), seed=0)  # one rule wakes per state
    assert blocks.evaluate(model, cfg, [4, 16, 64]) == {"4": 1.0, "16": 1.0, "64": 1.0}
    assert int(model.population.wealth.sum()) == 0 and model.ledger.count == 6  # only the six birth grants


def test_a_rule_never_wakes_for_an_illegal_move():
    """Else it would win a state it cannot change and, owning it, win it again for free until the horizon."""
    cfg = blocks.Config(features=list(blocks.FEATURES))
    world = world_of([1, 2], [], [2], [1], features=list(blocks.FEATURES))
    world.reset(1, None)
    _, policy = blocks.build(cfg, initial_rules=["wrong1 == 0 -> 1to2", "wrong1 == 0 -> 2to1"])
    policy.resize(2)
    policy.spawn(np.array([0, 1]), np.random.default_rng(0))
    assert policy.eligible(world.observe()).tolist() == [[False, True]]  # stack 1 is empty: 1to2 is illegal


def test_revise_edits_the_failed_rule_at_its_failure_state():
    cfg = blocks.Config(p_revise_move=1.0, features=list(blocks.FEATURES))
    world, policy = blocks.build(cfg, initial_rules=["wrong1 == 0 -> 2to1"])
    policy.resize(8)
    policy.spawn(np.array([1]), np.random.default_rng(0))
    state = np.array([[0, 1, 2, 2, 0, 1, 1, 0, 3, 1, 0, 1]])  # stack 2 is empty: 2to1 and 2to3 are illegal there
    policy.revise(np.array([2]), np.array([1]), state, np.array([True]), np.random.default_rng(0))
    terms, action = parse(policy.describe([2])[0], world.space)
    assert terms == parse("wrong1 == 0 -> 2to1", world.space)[0]
    assert blocks.ACTIONS[action] in {"1to2", "1to3", "3to1", "3to2"}


def test_training_beats_the_random_population_on_heldout():
    """Short runs at n = 4 (the default economy, a few seconds each) lift held-out success, on average
    over seeds, well above that of the random population they start from."""
    gains = []
    for seed in (0, 1, 2):
        exp = load("blocks", ["run.episodes=3000", "blocks.curriculum=false", "blocks.train_sizes=[4]",
                              "blocks.heldout_count=100"], seed=seed)
        model = market_of(exp, seed)
        before = blocks.evaluate(model, exp.scenario, [4])["4"]
        while model.episodes_done < exp.run.episodes:
            model.step()
        after = blocks.evaluate(model, exp.scenario, [4])["4"]
        gains.append((before, after))
    assert np.mean([a for _, a in gains]) > np.mean([b for b, _ in gains]) + 0.2, gains


@pytest.mark.slow
def test_catallax_run_blocks_reports_heldout_success_per_size():
    summary = run_experiment(load("blocks", ["run.episodes=160", "blocks.heldout_count=10"], seed=0), "sqlite://",
                             progress=False)
    assert set(summary["heldout_success"]) == {"4", "8", "16", "32"}
    assert summary["episodes"] == 160 and summary["population"] > 0 and summary["conservation_ok"]


def test_rules_that_undo_progress_are_priced_out():
    """The six solving rules plus two that wake in the same states and undo progress: at first held-out
    episodes fail; after training (no births) every held-out instance is solved, and the two no longer
    act: the loops they start end at the horizon with one of them holding a world nobody buys, so each
    goes bankrupt or its value falls below zero in the states where it wakes, and it sits out there."""
    exp = load("blocks", ["population.births=false", "population.initial_agents=8", "population.min_agents=0",
                          "blocks.curriculum=false", "blocks.train_sizes=[4]", "blocks.heldout_count=50"], seed=1)
    destroyers = ["wrong1 == 0 -> 1to3", "wrong1 > 0 -> 2to1"]
    model = market_of(exp, 1, blocks.SOLUTION + destroyers)
    before = blocks.evaluate(model, exp.scenario, [4, 8])
    for _ in range(60):
        model.step()
    after = blocks.evaluate(model, exp.scenario, [4, 8])
    assert min(before.values()) < 0.5 and after == {"4": 1.0, "8": 1.0}, (before, after)
    model.step()
    assert model.trace.path.max() <= 6  # rows 1..6 hold SOLUTION, rows 7 and 8 the destroyers: they did not act


def test_values_price_each_move_by_how_near_the_goal_it_leads():
    """Trained on the solving rules alone, each rule's value (its bid head's entry for the state:
    ``numeric`` features) is what its turns earned: under 1 (the reward) where it acted, and higher for
    the rules that place needed blocks than for those that clear stack 1, which act earlier in every
    solving chain."""
    exp = load("blocks", ["population.births=false", "population.initial_agents=6", "population.min_agents=0",
                          "population.initial_wealth=10", "blocks.curriculum=false", "blocks.train_sizes=[4, 8]"], seed=0)
    model = market_of(exp, 0, list(blocks.SOLUTION))
    for _ in range(40):
        model.step()
    t, b = np.nonzero(model.trace.path >= 0)  # every turn of the last round: who acted, on what
    rows = model.trace.path[t, b]
    value = model.policy.bids(model.trace.obs[t, b])[np.arange(t.size), rows] / (1 - exp.agents.value.margin)
    mean = np.array([value[rows == r].mean() for r in range(1, 7)])  # rows 1..6 hold SOLUTION[0..5]: clear x2, place x2, dig x2
    assert model.population.size == 6 and (model.policy.bid_learner.turns[1:7] > 0).all(), model.policy.bid_learner.turns
    assert (value > 0).all() and (value < 1).all(), value
    assert mean[2:4].mean() > mean[:2].mean() + 0.02, mean


def test_covering_offers_the_move_a_failed_episode_lacked():
    cfg = blocks.Config(features=list(blocks.FEATURES))
    world = world_of([1, 2], [2], [], [1], features=list(blocks.FEATURES))
    world.reset(1, None)
    _, policy = blocks.build(cfg)
    state = world.observe()
    policy.gaps, policy.gap_moves = state, np.array([[False, True, False, False, False, False]])  # 1to3 lacked a bidder
    policy.resize(16)
    policy.spawn(np.arange(16), np.random.default_rng(0))
    assert policy.eligible(state)[0].all() and (policy.rules.action[:16] == blocks.ACTIONS.index("1to3")).all()


def test_a_gap_is_a_legal_move_no_rule_wakes_for_even_one_sitting_out():
    """Gaps come from failed episodes. A rule whose turns lost money (value < 0) sits out of the
    auction but still counts as offering its move there: covering must not offer that move again."""
    from market.brigade import Payments
    from market.trace import RoundTrace

    def trace(solved: bool) -> RoundTrace:
        return RoundTrace(path=np.array([[1]]), obs=obs[None], solved=np.array([solved]), winner=np.array([[1]]),
                          price=np.zeros((1, 1), dtype=np.int64), reward=np.zeros((1, 1)), done=np.array([[True]]),
                          payments=Payments(), live=np.array([[True]]))

    cfg = blocks.Config(features=list(blocks.FEATURES))
    world = world_of([1, 2], [2], [], [1], features=list(blocks.FEATURES))  # legal: 1to2, 1to3, 3to1, 3to2
    world.reset(1, None)
    _, rules = blocks.build(cfg, initial_rules=["wrong1 > 0 -> 1to2", "wrong1 > 0 -> 1to3"])
    learned = LearnedPolicy(rules, AgentsConfig(features="agent"), learned_bids=True)
    learned.resize(2)
    learned.spawn(np.array([0, 1]), np.random.default_rng(0))
    learned.bid_learner.head.bias.data = torch.tensor([-0.1, 0.3])
    obs = world.observe()
    assert learned.eligible(obs).tolist() == [[False, True]]  # the loser sits out
    policy = learned.unwrapped
    policy._record_gaps(trace(solved=False), traders=np.array([True, True]))
    assert [blocks.ACTIONS[a] for a in np.flatnonzero(policy.gap_moves[0])] == ["3to1", "3to2"]
    policy.gaps, policy.gap_moves = policy.gaps[:0], policy.gap_moves[:0]
    policy._record_gaps(trace(solved=True), traders=np.array([True, True]))
    assert len(policy.gaps) == 0  # a solved episode has no gaps
