"""Scenario ``procurement``: the seller's script, the buyer's refusals, the surplus, and the whole run from the CLI."""

import json
import subprocess
import sys

import numpy as np
import pytest

from scenarios.procurement import Procurement, split
from scenarios.run.config import ConfigError, load

WORLD = Procurement()


def fresh(budget=200, floor=130):
    return WORLD.start({"item": "4 monitors", "budget": budget, "floor": floor})


def test_problems_are_deterministic_and_the_floor_is_private_and_below_the_budget():
    for pid in range(200):
        p = WORLD.problem(np.random.default_rng([0, pid]))
        assert p == WORLD.problem(np.random.default_rng([0, pid])) and p["budget"] // 2 <= p["floor"] < p["budget"]
        assert str(p["floor"]) not in WORLD.read(WORLD.start(p), "negotiator").replace(str(p["budget"]), "")


def test_the_seller_counters_below_its_floor_and_deals_at_or_above_it():
    s = fresh()
    assert WORLD.act(s, "negotiator", "I offer $100.") is None and not WORLD.done(s)
    assert s["ask"] == 200 - (200 - 100) // 3 == 167 and s["history"][-1] == "Seller: Too low. I can do $167."
    assert WORLD.read(s, "closer") == ("Budget $200. Seller: $200 for 4 monitors. Buyer: I offer $100. "
                                       "Seller: Too low. I can do $167.")
    assert WORLD.act(s, "negotiator", "I offer $90.") == "illegal: an offer must raise the buyer's last one"
    assert WORLD.act(s, "negotiator", "I offer $250.") == "illegal: the offer is above the client's budget"
    assert WORLD.act(s, "negotiator", "maybe later") == "no offer in the reply"
    assert WORLD.act(s, "negotiator", "I offer $140.") is None and WORLD.done(s) and s["price"] == 140
    assert WORLD.reward(s) == pytest.approx((200 - 140) / (200 - 130)) and WORLD.solved(s)


def test_the_closer_accepts_only_the_standing_price_and_the_oracle_offers_the_floor():
    s = fresh()
    assert not WORLD.may_act(s, "closer") and WORLD.may_act(s, "negotiator")
    WORLD.act(s, "negotiator", "I offer $60.")
    assert WORLD.may_act(s, "closer") and WORLD.stage(s) == 1
    assert WORLD.act(s, "closer", "I accept $150.") == "no acceptance of the seller's price"
    assert WORLD.correct(s, "negotiator") == "I offer $130." and WORLD.correct(s, "closer") == "I accept $154."
    assert WORLD.act(s, "closer", "I accept $154.") is None and s["price"] == 154 and WORLD.reward(s) == pytest.approx(46 / 70)
    best = fresh()
    WORLD.act(best, "negotiator", WORLD.correct(best, "negotiator"))
    assert WORLD.reward(best) == 1.0


def test_the_splitter_halves_the_gap_and_closes_in_a_few_turns():
    s = fresh()
    assert split(s) == "I offer $100."
    turns = 0
    while not WORLD.done(s):
        assert WORLD.act(s, "splitter", split(s)) is None
        turns += 1
    assert turns <= WORLD.horizon and 0 < WORLD.reward(s) < 1


def test_config_names_bad_keys():
    with pytest.raises(ConfigError, match="procurement.initial_roles"):
        load("procurement", ["procurement.initial_roles=['buyer']"])
    with pytest.raises(ConfigError, match="procurement.role_weights"):
        load("procurement", ["procurement.role_weights=[1.0]"])


@pytest.mark.slow
def test_catallax_run_procurement_reports_the_market_against_the_complete_agent(tmp_path):
    """With the closers on a model of their own: SmolLM2 again, loaded a second time from its folder (the one real
    model that ships), so one market mixes two engines and the summary counts each apart."""
    from agents.backends import smollm2

    folder = smollm2.model_folder()
    sets = ["run.episodes=8", "market.batch=4", "procurement.heldout=4", f"procurement.roles.closer.model={folder}"]
    cmd = [sys.executable, "-m", "scenarios.cli.main", "run", "procurement", "--json", "--out", str(tmp_path),
           *[x for kv in sets for x in ("--set", kv)]]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["scenario"] == "procurement" and summary["conservation_ok"] and summary["episodes"] == 8
    assert 0 <= summary["heldout_reward"] <= 1 and 0 <= summary["complete_agent_reward"] <= 1
    assert summary["actions"] > 0 and summary["llm_tokens"] > 0 and summary["backend"] == "hf"
    usage = summary["llm_usage"]
    assert set(usage) == {"hf:smollm2", f"hf:{folder}"} and all(u["prompt_tokens"] > 0 for u in usage.values())
    assert summary["llm_tokens"] == sum(u["prompt_tokens"] + u["completion_tokens"] for u in usage.values())
    assert summary["role_tokens"]["closer"] > 0 and summary["role_tokens"]["negotiator"] > 0
