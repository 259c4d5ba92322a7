"""Learning curves (scenarios/run/curve.py, agents/heldout.py): a run with ``run.eval_every`` measures the frozen
market's held-out success between rounds without changing the run, stores the points, resumes them, reports them.

A two-role world written outside the package (tests/agents/test_text_world.py's triage), its LLM a scripted stand-in
(each answer a function of the prompt), so runs take seconds; wordmath on the real model is measured by hand.
"""

import sqlite3

import pytest

from scenarios.text import scenario as text_scenario
from scenarios import load
from scenarios.run import runner
from scenarios.run.config import ConfigError
from tests.agents.test_text_world import CORRECT, TOML, TRIAGE, Scripted

SMALL = ["run.episodes=20", "triage.heldout=6", "run.checkpoint_every=1", "market.token_price=1.0"]


@pytest.fixture
def triage(tmp_path, monkeypatch):
    (tmp_path / "triage.py").write_text(TRIAGE + CORRECT)
    (tmp_path / "triage.toml").write_text(TOML)
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Scripted())
    return tmp_path


def test_a_curve_leaves_the_run_as_it_was_and_its_last_point_is_the_summary_s_success(triage):
    plain = runner.run_experiment(load(str(triage / "triage.toml"), SMALL), f"sqlite:///{triage / 'a.db'}",
                                  progress=False)
    exp = load(str(triage / "triage.toml"), SMALL + ["run.eval_every=2"])
    curved = runner.run_experiment(exp, f"sqlite:///{triage / 'b.db'}", progress=False)
    assert "heldout_curve" not in plain
    assert curved["ledger_hash"] == plain["ledger_hash"] and curved["heldout_success"] == plain["heldout_success"]
    assert [(r, e) for r, e, _ in curved["heldout_curve"]] == [(0, 0), (2, 8), (4, 16), (5, 20)]  # and the last
    assert curved["heldout_curve"][-1][2] == curved["heldout_success"]
    with sqlite3.connect(triage / "b.db") as conn:
        stored = conn.execute("SELECT round, episode, success, problems FROM heldout_eval ORDER BY episode").fetchall()
    assert [[r, e, s] for r, e, s, _ in stored] == curved["heldout_curve"] and {p for *_, p in stored} == {6}

    from market.store import export_run, import_run, make_engine  # a sweep ships the rows to its driver's database

    rows = export_run(make_engine(f"sqlite:///{triage / 'b.db'}"), curved["run_id"])
    target = make_engine(f"sqlite:///{triage / 'target.db'}")
    import_run(target, rows)
    assert len(rows["heldout_eval"]) == 4 and export_run(target, curved["run_id"]) == rows


def test_a_killed_run_resumes_to_the_same_ledger_and_the_same_curve(triage, monkeypatch):
    from tests.scenarios.test_wordmath_skills import run_killed

    exp = load(str(triage / "triage.toml"), SMALL + ["run.eval_every=1"])
    whole = runner.run_experiment(exp, f"sqlite:///{triage / 'a.db'}", progress=False, run_id="whole")
    url = f"sqlite:///{triage / 'b.db'}"
    run_killed(exp, url, monkeypatch)
    resumed = runner.resume_experiment("cut", url, progress=False)
    assert resumed["ledger_hash"] == whole["ledger_hash"]
    assert resumed["heldout_curve"] == whole["heldout_curve"] and len(whole["heldout_curve"]) == 6


def test_a_world_without_a_held_out_set_refuses_eval_every():
    with pytest.raises(ConfigError, match=r"run\.eval_every = 4: scenario 'relay' has no held-out set"):
        load("relay", ["run.eval_every=4"])


def test_report_draws_one_curve_per_run_given(triage, capsys):
    from scenarios.cli.main import main

    url = f"sqlite:///{triage / 'runs.db'}"
    for seed, bids in ((0, "holland"), (1, "fixed")):
        exp = load(str(triage / "triage.toml"), SMALL + ["run.eval_every=2", f"market.bid_scheme={bids}"], seed=seed)
        runner.run_experiment(exp, url, progress=False, run_id=f"s{seed}")
    assert main(["report", "s0", "s1", "--db", url, "--out", str(triage), "--json"]) == 0
    written = __import__("json").loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (triage / "report-s0" / "learning_curve.png").stat().st_size > 10_000
    assert written["figures"]["learning_curve"].endswith("learning_curve.png")
    text = (triage / "report-s0" / "summary.md").read_text()
    assert "| `s0 seed 0: bids holland, credit grse` | 4 |" in text and "| `s1 seed 1: bids fixed, credit grse` | 4 |" in text
    with pytest.raises(SystemExit) as missing:
        main(["report", "s0", "nope", "--db", url, "--out", str(triage)])
    assert missing.value.code == 2 and "run nope: not found" in capsys.readouterr().err


def test_a_state_measured_once_is_not_played_again(triage):
    from agents.heldout import heldout_point
    from scenarios import build_model

    model = build_model(load(str(triage / "triage.toml"), ["triage.heldout=4"]))
    backend = model.policy.unwrapped.backend
    first = heldout_point(model)
    sent = len(backend.sent)
    again = heldout_point(model)
    assert len(backend.sent) == sent and again["seconds"] == 0  # nothing asked of the model
    assert {k: again[k] for k in ("success", "fingerprint")} == {k: first[k] for k in ("success", "fingerprint")}
    model.step()  # a round moves balances and births change the rows: a new state, measured afresh
    assert heldout_point(model)["fingerprint"] != first["fingerprint"] and len(backend.sent) > sent
