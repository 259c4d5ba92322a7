"""The bids comparison runs end to end at toy size and writes its three tables, every scheme on relay, blocks
and recsys market mode, and every pool (numbers not asserted beyond their ranges: the README reports the full run)."""

import json

import numpy as np

from experiments import bids_compare
from scenarios import relay
from scenarios.run.config import from_dict


def test_bids_compare_quick_writes_every_table(tmp_path, capsys):
    out = tmp_path / "bids.md"
    assert bids_compare.main(["--quick", "--workers", "1", "--out", str(out), "--rows", str(tmp_path / "bids.jsonl")]) == 0
    for name, first in (("bids", "scenario"), ("bids_recsys", "bids"), ("bids_pools", "bids")):  # the docs' rows, a file a table
        stored = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        assert stored and all(first in r and r["command"].startswith("python -m experiments.bids_compare") for r in stored)
    text = out.read_text()
    assert text.strip() == capsys.readouterr().out.strip()  # what it prints is what it writes
    for scheme in bids_compare.SCHEMES:
        assert f"| relay (target 0.9) | {scheme} |" in text and f"| blocks (target 0.5) | {scheme} |" in text
    for scheme in bids_compare.RECSYS_SCHEMES:
        assert sum(line.startswith(f"| {scheme} | 0.") for line in text.splitlines()) == 1  # its recsys row
    assert all(f"| {scheme} | 10 |" in text for scheme in bids_compare.POOL_SCHEMES)
    runs = json.loads(out.with_suffix(".json").read_text())
    assert len(runs["compare"]) == 2 * len(bids_compare.SCHEMES) and len(runs["pools"]) == len(bids_compare.POOL_SCHEMES)
    for r in runs["compare"]:
        assert 0 <= r["success"] <= 1 and 0 <= r["gini"] <= 1
        assert r["episodes_to_target"] is None or 16 <= r["episodes_to_target"] <= 64  # window .. episodes
        assert ("heldout" in r) == (r["scenario"] == "blocks")
    assert [r["scheme"] for r in runs["recsys"]] == list(bids_compare.RECSYS_SCHEMES)
    for r in runs["recsys"]:
        assert all(0 <= r[k] <= 1 for k in ("ndcg10_initial", "ndcg10_final", "recall50_initial", "recall50_final"))
        assert r["baseline"] in text and 0 < r["baseline_ndcg10"] < 1
    for r in runs["pools"]:
        assert 0 < r["live"] <= 10 and all(0 <= r[k] <= 1 for k in ("train_success", "eval_full", "eval_dropout", "ceiling",
                                                                     "top_bidders_advance"))
        assert r["eval_dropout"] <= r["ceiling"] + 1e-12 and r["top_bidders_advance"] <= r["ceiling"] + 1e-12
        assert len(r["specialists"]) == 5


def test_episodes_to_target():
    success = np.array([0, 0, 1, 1, 1, 0, 1, 1], dtype=float)
    assert bids_compare.episodes_to(success, 1.0, 3) == 5  # episodes 3..5 all succeeded
    assert bids_compare.episodes_to(success, 1.0, 9) is None
    assert bids_compare.episodes_to(np.zeros(10), 0.5, 2) is None


def test_no_draw_that_breaks_the_chain_is_solved_and_the_ceiling_bounds_the_dropout_eval():
    """The ceiling is an upper bound, draw by draw: with a stage's last specialist removed nothing advances it."""
    setup = bids_compare.Setup(relay_episodes=400)
    exp, model, success = bids_compare.train(bids_compare.config("relay", "holland", 0, setup, pool=30))
    able = relay.specialists(model, exp.scenario.stages)
    assert success[-100:].mean() > 0.9 and able.any(axis=1).all()  # a trained chain, every stage covered
    assert bids_compare.chain_kept(able, np.array([], dtype=np.int64))
    for stage in range(exp.scenario.stages):  # remove every specialist of one stage: broken, and never solved
        drop = np.flatnonzero(able[stage])
        assert not bids_compare.chain_kept(able, drop)
        assert bids_compare.frozen_success(model, 20, drop) == 0.0
    live = np.flatnonzero(model.population.traders)
    rng = np.random.default_rng(0)
    for drop in (rng.choice(live, size=3, replace=False) for _ in range(10)):
        if not bids_compare.chain_kept(able, drop):
            assert bids_compare.frozen_success(model, 20, drop) == 0.0


def test_a_clearing_suffix_sets_the_clearing_and_nothing_else():
    """Without a suffix each scheme clears by its own rule: learned bids by softmax, relay's holland by first price."""
    setup = bids_compare.Setup()
    plain, first = (bids_compare.config("relay", s, 0, setup, pool=30) for s in ("learned/value", "learned/value@first_price"))
    assert first["market"].pop("clearing") == "first_price" and "clearing" not in plain["market"]
    assert first == plain
    assert from_dict(plain, "test").market.clearing == "softmax"
    assert from_dict(bids_compare.config("relay", "holland", 0, setup), "test").market.clearing == "first_price"


def test_a_frozen_first_price_market_solves_every_episode_when_every_top_bidder_advances_its_stage():
    """Draw by draw on a trained holland economy with 20% removed: where every stage's top remaining bidder is
    one of its specialists the frozen market solves every episode (one step a stage, the horizon is twice
    that); where the chain is broken, no top bidder can advance the broken stage."""
    setup = bids_compare.Setup(relay_episodes=400)
    exp, model, _ = bids_compare.train(bids_compare.config("relay", "holland", 0, setup, pool=30))
    able = relay.specialists(model, exp.scenario.stages)
    live = np.flatnonzero(model.population.traders)
    rng = np.random.default_rng(1)
    seen = set()
    for drop in (rng.choice(live, size=round(0.2 * live.size), replace=False) for _ in range(12)):
        advance = bids_compare.top_bidders_advance(model, able, drop)
        seen.add(advance)
        assert advance <= bids_compare.chain_kept(able, drop)
        if advance:
            assert bids_compare.frozen_success(model, 20, drop) == 1.0
    assert seen == {True, False}  # both kinds of draw were tried
