"""recsys market mode: agents per role bid for each request; payments flow upstream through the ledger."""

import numpy as np
import pytest
from sqlmodel import Session, select

from market.checkpoint import decode, encode
from market.ledger import HOUSE_ID, Reason
from market.store import Agent, load_transfers, make_engine
from scenarios.run.config import load
from scenarios.recsys import seeds
from scenarios.recsys.market import RolePolicy
from scenarios.run.runner import run_experiment
from skills import SkillLibrary, export_library
from tests.scenarios.recsys_small import OVERRIDES, store

MARKET = OVERRIDES + ["recsys.mode=market", "recsys.plant_harmful=3", "population.p_exploit=0.03",
                      "population.p_explore=0.03"]


@pytest.fixture(scope="module")
def market_run(tmp_path_factory):
    db = f"sqlite:///{tmp_path_factory.mktemp('recsys-market') / 'runs.db'}"
    return run_experiment(load("recsys", MARKET, seed=0), db, progress=False), db


def roles_by_account(engine, run_id) -> dict[int, str]:
    with Session(engine) as s:
        agents = s.exec(select(Agent).where(Agent.run_id == run_id)).all()
    return {a.agent_id: a.skill.split()[0] for a in agents}


def test_money_is_exact_and_flows_upstream(market_run):
    summary, db = market_run
    assert summary["conservation_ok"] and summary["transfers"] > 0 and summary["mode"] == "market"
    engine = make_engine(db)
    role = roles_by_account(engine, summary["run_id"]) | {HOUSE_ID: "house"}
    log = load_transfers(engine, summary["run_id"])
    bids = log[log["reason"] == Reason.BID]
    pairs = {(role[int(a)], role[int(b)]) for a, b in zip(bids["src"], bids["dst"])}
    assert pairs == {("recall", "house"), ("rank", "recall"), ("rerank", "rank")}  # the bucket brigade
    rewards = log[log["reason"] == Reason.REWARD]
    assert {role[int(d)] for d in rewards["dst"]} == {"rerank"}  # the world pays the final owner
    assert (rewards["src"] == HOUSE_ID).all()


def test_market_mode_starts_from_the_library_team_mode_does(tmp_path):
    """recsys.start and recsys.harm seed the shared library the agents draw their skills from, as in team mode."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    exp = load("recsys", MARKET + ["recsys.start=initial+best_baseline", "recsys.harm=any_data", "run.episodes=64"],
               seed=0)
    summary = run_experiment(exp, db, progress=False)
    best = summary["baseline_best"].replace("_", "-")
    evolved = SkillLibrary.open(db, summary["run_id"])
    seeded = {v.name for v in evolved.versions() if v.version == 1}
    assert {f"recall-{best}", f"rank-{best}", *seeds.planted(3, "any_data")} <= seeded
    assert summary["conservation_ok"] and summary["mode"] == "market"
    export_library(evolved, tmp_path / "skills")  # and from a folder: the same skills, none added twice
    again = run_experiment(load("recsys", MARKET + ["recsys.harm=any_data", "run.episodes=64",
                                                    f"recsys.seed_library={tmp_path / 'skills'}"], seed=0),
                           db, progress=False)
    held = {s.name for s in evolved.current()}
    first = [v.name for v in SkillLibrary.open(db, again["run_id"]).versions() if v.version == 1]
    assert len(first) == len(set(first)) and held <= set(first)


def test_skills_evolve_through_births_and_gated_edits(market_run):
    summary, db = market_run
    engine = make_engine(db)
    with Session(engine) as s:
        agents = {a.agent_id: a for a in s.exec(select(Agent).where(Agent.run_id == summary["run_id"])).all()}
    children = [a for a in agents.values() if a.parent_id not in (None, -1)]
    assert children, "no births"
    for child in children:
        assert child.skill.split()[0] == agents[child.parent_id].skill.split()[0]  # a child keeps its parent's role
    library = SkillLibrary.open(db, summary["run_id"])
    gated = [e for e in library.edits().values() if e.gate != "ungated"]
    assert len(gated) == summary["edits_accepted"] + summary["edits_rejected"] > 0
    assert summary["population"] == sum(summary["agents_per_role"].values()) > 0


def test_the_role_policy_bids_wakes_and_mutates_by_role():
    policy = RolePolicy(base_bid=0.01)
    policy.set_library([type("S", (), {"name": n, "role": r})() for n, r in
                        (("recall-a", "recall"), ("recall-b", "recall"), ("rank-a", "rank"), ("rerank-a", "rerank"))])
    policy.resize(8)
    rng = np.random.default_rng(0)
    policy.spawn(np.arange(1, 7), rng)
    assert policy.role[1:7].tolist() == [0, 1, 2, 0, 1, 2]  # newcomers take the roles in turn
    eligible = policy.eligible(np.array([[0], [2]]))
    assert eligible[0].tolist() == [r == 0 for r in policy.role] and eligible[1, 3] and not eligible[1, 1]
    assert all(policy.held[r] <= {"recall-a", "recall-b"} and policy.held[r] for r in (1, 4))
    assert policy.bid[3] > policy.bid[1]  # downstream roles start with higher bids (in expectation: 3x vs 1x)
    policy.inherit(np.array([7]), np.array([1]), rng)
    assert policy.role[7] == 0 and len(policy.held[7] ^ policy.held[1]) == 1  # one skill added or dropped
    policy.set_library([type("S", (), {"name": "rank-a", "role": "rank"})()])
    assert not policy.held[1] and policy.held[2] == {"rank-a"}  # pruned skills are forgotten
    assert not policy.eligible(np.array([[0]]))[0, [1, 4, 7]].any()  # recall agents left empty-handed sit out
    assert policy.eligible(np.array([[1]]))[0, 2]  # the rank agent still holds rank-a
    state = policy.state_dict()
    again = RolePolicy(0.01)
    again.load_state_dict(state)
    assert again.held == policy.held and (again.bid == policy.bid).all()


def test_a_resumed_market_run_continues_exactly(tmp_path):
    """Checkpoint after one round, let a second round write its library rows, then resume from the checkpoint."""
    from scenarios.recsys import make_model

    exp = load("recsys", MARKET, seed=3)

    straight = make_model(exp)
    straight.attach(store(tmp_path, "a"))
    straight.step(), straight.step()
    cut = make_model(exp)
    cut.attach(store(tmp_path, "b"))
    cut.step()
    state, log = encode(cut.state_dict()), cut.last_round.transfers  # what the runner stores per round
    cut.step()
    resumed = make_model(exp)
    resumed.load_state_dict(decode(state))
    resumed.ledger.restore(log)  # as scenarios.run.runner.resume_experiment does, from the stored transfers
    resumed.attach(store(tmp_path, "b"))
    resumed.step()
    history = [[(v.label, v.status, v.rule) for v in m.arms["grse"].library.versions()] for m in (straight, resumed)]
    assert history[0] == history[1]
    np.testing.assert_array_equal(resumed.population.wealth, straight.population.wealth)
    np.testing.assert_array_equal(resumed.last_round.transfers, straight.last_round.transfers)
    assert resumed.ledger.hash == straight.ledger.hash
