"""LLM agents in the market: forfeits, lockstep batching, wake-up scoring, births by LLM rewrite.

The market's forfeit hook is checked with the rule backend (exact, cheap); everything else runs
the real SmolLM2 through the hf backend on the wordmath scenario, at toy size.
"""

import dataclasses

import numpy as np
import pytest

from agents import RulePolicy
from agents.backends.base import skill
from scenarios.text import scenario as text_scenario
from agents.backends import BackendConfig
from agents.backends.factory import shared_backend
from agents.llm.policy import PolicyConfig
from market import MarketConfig, MarketModel, PopulationConfig
from market.checkpoint import decode, encode
from market.ledger import Reason
from scenarios import wordmath
from tests.helpers import Books, relay_model

LLM = BackendConfig(backend="hf", dtype="float32", max_batch=8)


class Forfeiting(RulePolicy):
    """A rule policy whose odd rows always produce an invalid action (-1)."""

    def act(self, obs, winners):
        return np.where((winners >= 0) & (winners % 2 == 1), -1, super().act(obs, winners))


def test_a_forfeiting_winner_pays_nothing_and_is_paid_nothing(books: Books):
    model = relay_model(market=MarketConfig(batch=8, rent=0.0), population=PopulationConfig(initial_agents=8, births=False))
    model.policy.__class__ = Forfeiting
    for _ in range(5):
        model.step()
        books.add(model.last_round.transfers, model.last_round.deaths)
        books.check(model.population)
    log = books.log
    odd_ids = set(model.population.ids[1::2].tolist()) - {-1}
    for reason in (Reason.BID, Reason.REWARD):
        moved = log[log["reason"] == reason]
        assert not set(moved["src"].tolist()) & odd_ids and not set(moved["dst"].tolist()) & odd_ids
    assert (log["reason"] == Reason.BID).any()  # the even rows still trade: the run went on


def small_model(seed=0, batch=4, token_price=0.0, **policy):
    cfg = wordmath.Config(llm=LLM, policy=PolicyConfig(**policy), heldout=4, horizon=3)
    world, pol = text_scenario.build(wordmath.Wordmath, cfg)
    market = MarketConfig(batch=batch, bid_scheme="holland", base_bid=0.02, terminal="path", rent=0.002,
                          token_price=token_price)
    population = PopulationConfig(initial_agents=6, initial_wealth=0.2, p_exploit=0.0, p_explore=0.0, min_agents=2)
    return MarketModel(world, pol, market, population, seed=seed), cfg


class Counting:
    """Counts the calls reaching a backend (the real one, passed through)."""

    def __init__(self, backend):
        self.inner, self.calls, self.stats, self.name = backend, [], backend.stats, backend.name

    def generate(self, prompts):
        self.calls.append(("generate", len(prompts)))
        return self.inner.generate(prompts)

    def score(self, prompts):
        self.calls.append(("score", len(prompts)))
        return self.inner.score(prompts)

    @property
    def scored_tokens(self):
        return self.inner.scored_tokens


@pytest.fixture(scope="module")
def played():
    """A small market after one lockstep round of two episodes, its backend calls counted."""
    model, _ = small_model(batch=2)
    model.policy.backend = counter = Counting(model.policy.backend)
    episodes = model.run_episodes(batch=2)
    return model, counter, episodes


def test_lockstep_makes_at_most_one_scoring_and_one_generation_call_per_step(played):
    model, counter, episodes = played
    kinds = [k for k, _ in counter.calls]
    assert kinds.count("score") == 1  # every (agent, state summary) pair in one pass; cached afterwards
    assert kinds.count("generate") <= max(e["steps"] for e in episodes)
    llm_agents = int(((model.policy.role >= 0) & (model.policy.role != 1)).sum())
    assert counter.calls[0] == ("score", 3 * llm_agents)

    sequential, _ = small_model(batch=2, lockstep=False)
    sequential.policy.scores = dict(model.policy.scores)  # same seed, same agents: skip re-scoring
    sequential.policy.backend = one_by_one = Counting(sequential.policy.backend)
    sequential.run_episodes(batch=2)
    generated = sum(n for k, n in counter.calls if k == "generate")
    assert all(n == 1 for _, n in one_by_one.calls) and len(one_by_one.calls) >= generated > 0


def test_invalid_output_is_recorded_with_raw_text_and_forfeits():
    model, _ = small_model(batch=4)
    pol = model.policy
    pol.roles = [dataclasses.replace(r, max_tokens=1) if not r.tool else r for r in pol.roles]  # every LLM action over-long
    pol.only = np.array([int(np.flatnonzero(pol.role == pol.role_index["generalist"])[0])] * 4)
    before = model.population.wealth.copy()
    episodes = model.run_episodes(batch=4)
    pol.only = None
    assert not any(e["success"] for e in episodes)
    records = [r for r in pol.records if r["kind"] == "invalid_action"]
    assert len(records) == 4 and all(r["reason"].startswith("over-long") and r["raw"] for r in records)
    assert np.array_equal(model.population.wealth, before)  # forfeits: no bid paid, nothing earned
    assert (model.ledger.flush()["reason"] != Reason.BID).all()


def test_timeouts_become_invalid_actions():
    model, _ = small_model(batch=2)
    model.policy.backend = shared_backend(dataclasses.replace(LLM, timeout=1e-4))
    model.policy.only = np.array([int(np.flatnonzero(model.policy.role == 3)[0])] * 2)
    model.run_episodes(batch=2, settle=False)
    assert [r["reason"].split(":")[0] for r in model.policy.records] == ["timeout", "timeout"]


def test_births_rewrite_skills_with_the_llm_and_never_touch_the_frozen_part(played):
    model, _, _ = played
    pol = model.policy
    frozen = [r.frozen for r in pol.roles]
    parents = np.flatnonzero((pol.role >= 0) & (pol.role != 1))[:2]  # LLM agents
    rows = np.array([pol.role.size - 2, pol.role.size - 1])
    before, discarded = len(pol.versions), pol.counts["malformed_rewrites"]
    rng = np.random.default_rng(0)
    pol.inherit(rows, parents, rng)
    pol.revise(rows, parents, np.stack([np.array([0, 7, 0, 0, 1, 0])] * 2), np.ones(2, dtype=bool), rng)  # problem 0 of stream 7
    assert [r.frozen for r in pol.roles] == frozen
    new = pol.versions[before:]
    assert len(new) + pol.counts["malformed_rewrites"] - discarded == 4  # each rewrite: a version, or a recorded discard
    for v in new:
        parent = pol.versions[v["parent"]]["skills"]
        assert v["skills"][:-1] == parent[len(parent) + 1 - len(v["skills"]):]  # the parent's lines, then one new
    for r in (r for r in pol.records if r["kind"] == "malformed_rewrite"):  # the model's own text, and why it was refused
        assert (r["reason"] == "duplicate") == (skill(r["raw"]) is not None), r
    assert (pol.role[rows] == pol.role[parents]).all()


def test_state_dict_round_trip_restores_skills_scores_and_memo(played):
    model, _, _ = played
    state = decode(encode(model.policy.state_dict()))  # through the checkpoint format, as resume does
    twin, _ = small_model(seed=1)
    twin.policy.load_state_dict(state)
    assert twin.policy.skills == model.policy.skills and twin.policy.scores == model.policy.scores
    assert twin.policy.memo == model.policy.memo and np.array_equal(twin.policy.theta, model.policy.theta)


def test_policy_config_rejects_bad_values():
    with pytest.raises(ValueError):
        PolicyConfig(max_skills=0)


def test_every_token_an_agent_s_calls_use_is_counted_on_its_row_and_charged_at_the_token_price():
    """One round with market.token_price: each agent pays floor(tokens x price / 1000) micro-credits as COMPUTE,
    its row counts the tokens, and the rows together count every token the engine ran for this market (acting,
    wake-up scoring; the births' rewrites after the charge wait on the rows for the next round)."""
    model, _ = small_model(batch=2, token_price=0.5)
    model.policy.backend.stats = stats = type(model.policy.backend.stats)()
    model.step()
    pop, log = model.population, model.last_round.transfers
    compute = log[log["reason"] == Reason.COMPUTE]
    assert compute.size and set(compute["dst"].tolist()) == {0}
    row = {a: r for r, a in enumerate(pop.ids.tolist())}
    for src, amount in zip(compute["src"].tolist(), compute["amount"].tolist()):
        assert amount == pop.tokens[row[src]] * 500_000 // 1000
    assert int(pop.tokens.sum() + model.policy.spent.sum()) == stats.prompt_tokens + stats.completion_tokens
    pending = model.policy.spent.copy()
    with model.policy.evaluating():  # held-out play is free: nothing counted
        model.run_episodes(world=model.world.heldout, batch=2, settle=False)
    assert stats.prompt_tokens + stats.completion_tokens > pop.tokens.sum() + pending.sum()  # it ran the model
    assert np.array_equal(model.policy.spent, pending)
