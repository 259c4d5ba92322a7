"""MarketModel: the books balance after every round of random economies; bucket brigade; births; lockstep."""

import dataclasses
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from tests.helpers import Books, relay_model, step_and_check
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import RulePolicy, RuleSpace
from agents.rules import OPS, parse
import market.model as market_model
from market import MarketConfig, MarketModel, PopulationConfig, Reason, auction, gini
from market.model import WealthGini
from market.money import MICRO
from scenarios import relay
from scenarios.run.config import load
from scenarios.run.runner import run_experiment

ROOT = Path(__file__).resolve().parents[2]  # the repository: the subprocess imports tests.helpers from it

credits = st.floats(0.0, 0.3, allow_nan=False)
market_configs = st.builds(
    MarketConfig,
    batch=st.integers(1, 4),
    clearing=st.sampled_from(["first_price", "second_price", "softmax", "random"]),
    temperature=st.floats(0.001, 1.0),
    bid_scheme=st.sampled_from(["fixed", "fixed_with_eps", "holland"]),
    base_bid=credits,
    bid_eps=st.floats(0.0, 0.05),
    holland_c=st.floats(0.0, 1.0),
    payment=st.sampled_from(["bucket_brigade", "final_only"]),
    terminal=st.sampled_from(["owner", "path"]),
    reward_scale=st.floats(0.0, 2.0),
    rent=st.floats(0.0, 0.2),
    rent_interval=st.integers(1, 3),
)
population_configs = st.integers(0, 6).flatmap(lambda floor: st.builds(
    PopulationConfig,
    initial_agents=st.integers(1, 10),
    initial_wealth=st.floats(0.0, 0.5),
    p_exploit=st.floats(0.0, 1.0),
    p_explore=st.floats(0.0, 1.0),
    birth_interval=st.integers(0, 4),
    min_agents=st.just(floor),
    max_agents=st.integers(max(floor, 1), 12),
))


@settings(max_examples=40, deadline=None)
@given(market_configs, population_configs, st.integers(1, 4), st.integers(1, 8), st.integers(0, 2**31))
def test_random_economies_keep_the_books(market, population, stages, rounds, seed):
    """Auctions, payments, rent, bankruptcies and births under random configs: replaying the flushed log
    reproduces every balance, accounts sum to zero, no transfer touches a dead account, no amount < 0."""
    model = relay_model(market, population, stages=stages, seed=seed)
    books = Books()
    for i in range(rounds):
        step_and_check(model, books)
        pop = model.population
        assert len(model.agents) == pop.size
        assert (pop.wealth[pop.traders] >= 0).all()  # the bankrupt are gone after each round
        assert model.episodes_done == market.batch * (i + 1)
    assert books.log.size == model.ledger.count
    assert set(np.unique(books.log["reason"]).tolist()) <= {int(r) for r in Reason}


def test_same_seed_same_books_other_seed_other_books():
    def hashes(seed):
        model = relay_model(MarketConfig(batch=2, clearing="softmax"), seed=seed)
        for _ in range(10):
            model.step()
        return model.ledger.hash

    assert hashes(3) == hashes(3)
    assert hashes(3) != hashes(4)


def test_final_only_pays_the_house_bucket_brigade_pays_the_previous_owner():
    for payment in ("final_only", "bucket_brigade"):
        model = relay_model(MarketConfig(payment=payment, rent=0.0, bid_scheme="fixed", base_bid=0.01),
                            PopulationConfig(initial_agents=12, initial_wealth=1.0, p_exploit=0, p_explore=0, max_agents=12),
                            stages=3)
        books = Books()
        for _ in range(20):
            step_and_check(model, books)
        bids = books.log[books.log["reason"] == Reason.BID]
        assert bids.size > 20
        if payment == "final_only":
            assert (bids["dst"] == 0).all()
            continue
        solved = 0
        for episode in np.unique(bids["episode"]):
            chain = bids[bids["episode"] == episode]
            assert chain[0]["dst"] == 0  # the first winner buys from the house
            assert (chain["dst"][1:] == chain["src"][:-1]).all()  # then each buys from the previous owner
            log = books.log[books.log["episode"] == episode]
            terminal = log[(log["reason"] == Reason.REWARD)]
            if terminal.size:
                solved += 1
                assert terminal.size == 1 and terminal[0]["src"] == 0 and terminal[0]["amount"] == 1_000_000
                assert terminal[0]["dst"] == chain[-1]["src"]  # the final owner gets the reward
        assert solved > 0


def test_path_terminal_splits_the_reward_in_integer_shares(books):
    model = relay_model(MarketConfig(terminal="path", reward_scale=1.0, rent=0.0),
                        PopulationConfig(initial_agents=12, initial_wealth=1.0, p_exploit=0, p_explore=0), stages=3)
    for _ in range(30):
        step_and_check(model, books)
    rewards = books.log[books.log["reason"] == Reason.REWARD]
    assert rewards.size
    for episode in np.unique(rewards["episode"]):
        shares = rewards[rewards["episode"] == episode]
        bidders = set(books.log[(books.log["episode"] == episode) & (books.log["reason"] == Reason.BID)]["src"].tolist())
        assert len(set(shares["dst"].tolist())) == shares.size  # unique authors
        assert set(shares["dst"].tolist()) >= bidders  # everyone who paid to act is an author
        assert (shares["amount"] == 1_000_000 // shares.size).all()


def test_rent_every_interval():
    model = relay_model(MarketConfig(rent=0.01, rent_interval=3, batch=2),
                        PopulationConfig(initial_agents=5, p_exploit=0, p_explore=0, min_agents=0), stages=2)
    charged = []
    for _ in range(6):  # episodes 2, 4, ..., 12 done
        model.step()
        rent = model.last_round.transfers[model.last_round.transfers["reason"] == Reason.RENT]
        charged.append(set(rent["amount"].tolist()))
    # crossings of a multiple of 3 per round: (0,2] no, (2,4] yes, (4,6] yes, (6,8] no, (8,10] yes, (10,12] yes
    assert [bool(c) for c in charged] == [False, True, True, False, True, True]
    assert all(c == {10_000} for c in charged if c)


def test_bankrupt_agents_are_written_off_and_removed(books):
    model = relay_model(MarketConfig(rent=0.3), PopulationConfig(initial_agents=6, initial_wealth=0.5, p_exploit=0,
                                                                 p_explore=0, min_agents=0), stages=2)
    for _ in range(3):
        step_and_check(model, books)
    assert model.population.size == 0  # 0.5 credits cannot pay 0.3 rent twice
    written_off = books.log[books.log["reason"] == Reason.WRITE_OFF]
    assert set(written_off["dst"].tolist()) <= books.dead and len(books.dead) == 6
    assert len(model.agents) == 0


def test_tiny_softmax_temperature_works_without_warnings():
    model = relay_model(MarketConfig(clearing="softmax", temperature=1e-7))  # near-argmax: no overflow, no nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            model.step()


def test_gini():
    assert gini(np.array([5, 5, 5])) == 0.0
    assert gini(np.array([0, 0, 0, 10])) == pytest.approx(0.75)
    assert gini(np.array([])) == 0.0


@given(st.lists(st.integers(-10**12, 10**12), min_size=1, max_size=40))
def test_gini_is_the_mean_absolute_difference_over_twice_the_mean(values):
    """The sorted-rank formula against the definition, on the ledger's int64 balances (negatives count as 0)."""
    x = np.maximum(np.array(values, dtype=np.int64), 0).astype(float)
    expected = 0.0 if x.sum() == 0 else np.abs(x[:, None] - x[None, :]).sum() / (2 * x.size * x.sum())
    assert gini(np.array(values, dtype=np.int64)) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@given(st.lists(st.tuples(st.lists(st.integers(-10**9, 10**9), min_size=1, max_size=12),
                          st.lists(st.booleans(), min_size=12, max_size=12)), min_size=1, max_size=6))
def test_wealth_gini_from_last_rounds_order_is_gini(rounds):
    """The round-to-round Gini (sorting from the previous order) gives gini's number every round, also when
    balances reorder, traders come and go, and the capacity changes."""
    tracker = WealthGini()
    for balances, alive in rounds:
        wealth, traders = np.array(balances, dtype=np.int64), np.array(alive[: len(balances)])
        assert tracker(wealth, traders) == gini(wealth[traders])


def _one_edit_apart(parent: str, child: str, space) -> bool:
    """RulePolicy.inherit makes one edit: a term nudged/re-operated/added/dropped, or the action changed."""
    p_terms, p_action = parse(parent, space)
    c_terms, c_action = parse(child, space)
    only_p, only_c = list(p_terms), list(c_terms)
    for t in p_terms:
        if t in only_c:
            only_c.remove(t), only_p.remove(t)
    if p_action != c_action:
        return not only_p and not only_c
    return len(only_p) <= 1 and len(only_c) <= 1


def test_children_inherit_their_parents_rule():
    model = relay_model(MarketConfig(rent=0.05, bid_scheme="holland"),
                        PopulationConfig(initial_agents=10, initial_wealth=0.1, p_explore=0.5, p_exploit=0.2,
                                         birth_interval=2, min_agents=3, max_agents=30), stages=4, seed=0)
    skill, children = {}, 0
    for _ in range(60):
        model.step()
        for birth in model.last_round.births:
            skill[birth["agent_id"]] = birth["skill"]
            if birth["parent_id"] >= 0:
                children += 1
                assert _one_edit_apart(skill[birth["parent_id"]], birth["skill"], model.policy.space), birth
    assert children > 20


def test_births_record_parents_and_skills():
    model = relay_model(MarketConfig(rent=0.0), PopulationConfig(initial_agents=4, p_exploit=1.0, p_explore=0.0,
                                                                 max_agents=12))
    model.step()
    births = model.last_round.births
    assert [b["parent_id"] for b in births[:4]] == [-1] * 4  # the initial agents, flushed with the first round
    assert len(births) == 5 and births[4]["parent_id"] in {b["agent_id"] for b in births[:4]}
    for b in births:
        parse(b["skill"], model.policy.space)  # every recorded skill is a valid rule


class Timeout:
    """A one-step world that pays 1 at its end whoever acted (a protocol World, not a mock)."""

    horizon = 1

    def reset(self, batch, rng):
        self.batch = batch

    def observe(self):
        return np.zeros((self.batch, 1), dtype=np.int64)

    def step(self, actions, acting):
        return np.ones(self.batch), np.ones(self.batch, dtype=bool)

    @property
    def solved(self):
        return np.ones(self.batch, dtype=bool)


def _asleep(rules, rows, rng):
    """Rules that never wake on the Timeout world (x is always 0)."""
    rules.op[rows, 0], rules.value[rows, 0] = OPS["=="], 1


@pytest.mark.parametrize("initial_agents", [3, 8])
def test_terminal_reward_without_an_owner_stays_with_the_house(initial_agents, books):
    space = RuleSpace(features=("x",), low=(0,), high=(1,), actions=("a",))
    model = MarketModel(Timeout(), RulePolicy(space, newcomer=_asleep), MarketConfig(rent=0.0, batch=2),
                        PopulationConfig(initial_agents=initial_agents, max_agents=8, p_exploit=0, p_explore=0), seed=0)
    step_and_check(model, books)
    assert not (books.log["reason"] == Reason.REWARD).any()


def test_lockstep_conserves_money(tmp_path):
    for batch in (1, 4):
        exp = load("relay", ["run.episodes=50", f"market.batch={batch}"])
        summary = run_experiment(exp, f"sqlite:///{tmp_path / f'b{batch}.db'}", progress=False)
        assert summary["conservation_ok"] is True
        assert summary["episodes"] == (52 if batch == 4 else 50)  # whole rounds of B


def test_lockstep_solves_like_sequential():
    """No money dynamics (rich agents, no rent, no births): B worlds in lockstep must solve like one at a time."""
    rates = {}
    for batch in (1, 4):
        world, policy = relay.build(relay.Config(stages=3, horizon_factor=4, p_specialist=0.5))
        model = MarketModel(world, policy, MarketConfig(batch=batch, rent=0.0, bid_scheme="fixed"),
                            PopulationConfig(initial_agents=30, initial_wealth=100, p_exploit=0, p_explore=0,
                                             birth_interval=0, min_agents=0, max_agents=30), seed=0)
        episodes = []
        for _ in range(200 // batch):
            model.step()
            episodes += model.last_round.episodes
        assert model.population.size == 30
        rates[batch] = np.mean([e["success"] for e in episodes])
    assert rates[1] > 0.8  # about half the wakers advance the item; 12 steps for 3 stages
    assert abs(rates[4] - rates[1]) < 0.15, rates


@pytest.mark.parametrize("payment, conserve", [("bucket_brigade", True), ("bucket_brigade", False), ("final_only", True)])
def test_what_each_turn_earned_adds_up_to_the_ledger(payment, conserve):
    """The turn earnings the value bids learn from, summed per agent, are what the books paid each agent in the round: prices received
    from successors, plus rewards, less action fees (blocks: holes, owners that outbid themselves)."""
    from agents import AgentsConfig
    from agents.credit.advantages import turn_earnings
    from agents.learners.policy import LearnedPolicy
    from scenarios import blocks

    cfg = blocks.Config(train_sizes=[4], curriculum=False)
    world, rules = blocks.build(cfg, initial_rules=list(blocks.SOLUTION))  # some episodes are solved
    policy = LearnedPolicy(rules, AgentsConfig(features="agent"), learned_bids=True)  # value bids, as blocks ships
    market = MarketConfig(bid_scheme="learned", payment=payment, conserve=conserve, action_fee=0.003, batch=8)
    model = MarketModel(world, policy, market, PopulationConfig(initial_agents=10), seed=3)
    model.ledger.flush()  # the birth grants
    rewarded = 0
    for _ in range(3):
        model.run_episodes()
        log = model.ledger.flush()
        rows, _, _, credits = turn_earnings(model.trace)
        earned = np.rint(credits * MICRO).astype(np.int64)
        ids = model.population.ids[rows]
        paid = log[np.isin(log["reason"], [Reason.BID, Reason.REWARD]) & (log["dst"] != 0)]
        fees = log[log["reason"] == Reason.FEE]
        size = max(ids.max(), paid["dst"].max(initial=0), fees["src"].max(initial=0)) + 1
        books = np.bincount(paid["dst"], paid["amount"], size) - np.bincount(fees["src"], fees["amount"], size)
        assert (np.bincount(ids, earned, size) == books).all() and len(earned) > 8
        rewarded += (log["reason"] == Reason.REWARD).sum()
    assert rewarded > 0, rewarded


def test_a_small_economy_never_loads_numba():
    """The compiled paths are for large markets: a small one (a fresh interpreter, 20 rounds of a 16-agent
    relay economy on the default market and population configs) runs on numpy alone and never pays numba's import."""
    code = ("import sys\nfrom tests.helpers import relay_model\nmodel = relay_model()\n"
            "for _ in range(20):\n    model.step()\nprint('numba' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "False"


@settings(max_examples=25, deadline=None)
@given(market_configs, st.booleans(), st.integers(0, 2**31))
def test_every_auction_clears_on_the_bids_of_the_balances_it_sees(market, compiled, seed):
    """Under a scheme that reads only balances (market.model.BALANCE_BIDS) a round bids once and then again
    only for the rows a payment moved (MarketModel.rebid): every auction must still see exactly the bids that
    current_bids gives for the balances of that moment, on numpy and on the compiled path of large markets."""
    model = relay_model(market, PopulationConfig(initial_agents=12, max_agents=24, initial_wealth=0.3), seed=seed)
    seen = []

    def checked_clear(bids, *args, **kwargs):
        seen.append(bool(np.array_equal(bids, model.current_bids())))
        return auction.clear(bids, *args, **kwargs)

    cells = auction.COMPILED_CELLS
    original = market_model.clear
    market_model.clear, auction.COMPILED_CELLS = checked_clear, (0 if compiled else cells)
    try:
        for _ in range(4):
            model.step()
    finally:
        market_model.clear, auction.COMPILED_CELLS = original, cells
    assert seen and all(seen)


class Forfeits(RulePolicy):
    """A stand-in for an LLM's malformed answers, which a rule policy never gives: a winner's action is -1
    (invalid: it pays and earns nothing) at random, from a stream of its own."""

    def act(self, obs, winners):
        actions = super().act(obs, winners)
        return np.where(self.rng.random(actions.size) < 0.3, -1, actions)


@settings(max_examples=30, deadline=None)
@given(market_configs, st.booleans(), st.floats(0.0, 0.02), st.integers(1, 4), st.integers(0, 2**31))
def test_the_compiled_step_books_what_the_numpy_step_books(market, conserve, fee, stages, seed):
    """A large market's step runs its sale, records and payments in compiled passes (market/brigade_kernel.py):
    the same economy as the numpy lines, round after round (ledger hash, every trace column, the frozen
    evaluation's episodes), under every payment rule, terminal rule and clearing, with fees and forfeits."""
    market = dataclasses.replace(market, conserve=conserve, action_fee=fee)
    runs = []
    for cells in (1 << 62, 0):  # numpy, then compiled
        saved, market_model.COMPILED_CELLS = market_model.COMPILED_CELLS, cells
        try:
            world, rules = relay.build(relay.Config(stages=stages))
            policy = Forfeits(rules.space, newcomer=rules.newcomer)
            policy.rng = np.random.default_rng(seed)
            model = MarketModel(world, policy, market, PopulationConfig(initial_agents=8, max_agents=16,
                                                                        initial_wealth=0.3), seed=seed)
            traces = []
            for _ in range(3):
                model.step()
                tr = model.trace
                traces.append([np.asarray(c).tolist() for c in (tr.path, tr.winner, tr.price, tr.reward, tr.done)])
            frozen = model.run_episodes(settle=False)
            runs.append((model.ledger.hash, model.ledger.count, traces, frozen, model.population.wealth.tolist()))
        finally:
            market_model.COMPILED_CELLS = saved
    assert runs[0] == runs[1]


def test_branching_blocks_rounds_book_the_same_both_ways():
    """Worlds that branch (agents.branches) restart inside their sources mid-round: the compiled step keeps
    them active from there, as the numpy lines do (same ledger hash and paths after a few rounds)."""
    from scenarios.run.runner import build_model

    sets = ["agents.actions=grpo", "agents.branches=2", "market.batch=12", "blocks.heldout_count=2"]
    runs = []
    for cells in (1 << 62, 0):  # numpy, then compiled
        saved, market_model.COMPILED_CELLS = market_model.COMPILED_CELLS, cells
        try:
            model = build_model(load("blocks", sets))
            for _ in range(4):
                model.step()
            assert model.trace.source is not None  # the round branched
            runs.append((model.ledger.hash, model.trace.path.tolist()))
        finally:
            market_model.COMPILED_CELLS = saved
    assert runs[0] == runs[1]
