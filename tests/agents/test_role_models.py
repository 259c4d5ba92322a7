"""A model per role (agents/llm/task.py ``Role.llm``, ``[<section>.roles.NAME]``): a role's prompts go to its own
engine, the summary and the round usage table count each model apart, a resumed run reports the whole run's.

The engines are scripted stand-ins (each answer a function of the prompt; test_text_world's), one per distinct
model config, so the routing and the counts are exact; the real SmolLM2 mixed run is test_procurement's.
"""

import sqlite3

import numpy as np
import pytest

from scenarios.text import scenario as text_scenario
from agents.llm.prompts import REWRITE_SYSTEM
from scenarios import build_model, load
from scenarios.run import runner
from tests.agents.test_text_world import CORRECT, TOML, TRIAGE, Scripted

ROUTER = "Route a labelled message."


class Counted(Scripted):
    """The scripted engine, keeping an engine's counters (base.py Stats) as a real one does."""

    def generate(self, prompts):
        done = super().generate(prompts)
        self.stats.calls += 1
        self.stats.prompt_tokens += sum(c.prompt_tokens for c in done)
        self.stats.completion_tokens += sum(c.tokens for c in done)
        return done

    def score(self, prompts):
        scores = super().score(prompts)
        self.stats.calls += 1
        self.stats.prompt_tokens += int(self.scored_tokens.sum())
        return scores


@pytest.fixture
def triage(tmp_path, monkeypatch):
    """The triage world and TOML, and one scripted engine per distinct model config (as shared_backend's)."""
    (tmp_path / "triage.py").write_text(TRIAGE + CORRECT)
    (tmp_path / "triage.toml").write_text(TOML)
    engines = {}

    def shared(cfg):
        engine = engines.setdefault(repr(cfg), Counted())
        engine.cfg, engine.name = cfg, cfg.backend  # the stand-in of the configured engine: its label, hf:<model>
        engine.stats = type(engine.stats)()  # a new user: fresh counters, as shared_backend's
        return engine

    monkeypatch.setattr(text_scenario, "shared_backend", shared)
    return tmp_path, engines


def test_a_role_with_a_model_of_its_own_calls_only_it_and_the_summary_counts_each_model(triage):
    folder, engines = triage
    exp = load(str(folder / "triage.toml"), ["triage.roles.router.model=big", "triage.heldout=4"])
    model = build_model(exp)
    for _ in range(4):
        model.step()
    shared, big = (next(e for e in engines.values() if e.cfg.model == m) for m in ("smollm2", "big"))
    assert any(p.system.startswith(ROUTER) for p in big.sent)  # a role's own model also rewrites its skills at births
    assert all(p.system.startswith(ROUTER) or p.system == REWRITE_SYSTEM for p in big.sent)
    assert shared.sent and not any(p.system.startswith(ROUTER) for p in shared.sent)
    summary = text_scenario.metrics(model, [], exp.scenario)
    usage = summary["llm_usage"]
    assert set(usage) == {"hf:smollm2", "hf:big"} and all(u["prompt_tokens"] > 0 for u in usage.values())
    assert summary["llm_tokens"] == sum(u["prompt_tokens"] + u["completion_tokens"] for u in usage.values())
    assert summary["role_tokens"]["router"] > 0 and summary["role_tokens"]["classifier"] > 0
    assert sum(summary["role_tokens"].values()) == int(model.population.tokens.sum())  # what the market charged


def test_each_models_usage_is_stored_per_round_and_a_resumed_run_reports_the_whole_runs(triage, monkeypatch):
    from tests.scenarios.test_wordmath_skills import run_killed

    folder, _ = triage
    exp = load(str(folder / "triage.toml"), ["triage.roles.router.model=big", "triage.heldout=4",
                                             "run.checkpoint_every=1", "run.episodes=20", "market.token_price=1"])
    whole = runner.run_experiment(exp, f"sqlite:///{folder / 'a.db'}", progress=False, run_id="whole")
    url = f"sqlite:///{folder / 'b.db'}"
    run_killed(exp, url, monkeypatch)
    resumed = runner.resume_experiment("cut", url, progress=False)
    assert resumed["ledger_hash"] == whole["ledger_hash"]
    assert resumed["llm_usage"] == whole["llm_usage"] and resumed["role_tokens"] == whole["role_tokens"]
    with sqlite3.connect(folder / "b.db") as db:
        stored = dict(db.execute("SELECT backend, sum(prompt_tokens) FROM round_usage GROUP BY backend").fetchall())
        charged, = db.execute("SELECT count(*) FROM transfer WHERE reason_name = 'COMPUTE'").fetchone()
    assert set(stored) == {"hf:smollm2", "hf:big"} and charged > 0


def test_each_models_tokens_are_charged_at_its_own_price(triage):
    """market.token_prices prices the routers' model alone (market.token_price is 0): only routers pay, each
    exactly its round's tokens of that model at 1 credit per 1000 (1000 micro-credits a token)."""
    from market.ledger import Reason

    folder, _ = triage
    exp = load(str(folder / "triage.toml"), ["triage.roles.router.model=big", "triage.heldout=4",
                                             'market.token_prices={"hf:big" = 1.0}', "market.token_price=0"])
    model = build_model(exp)
    policy, charged, reports = model.policy, 0, []
    compute = policy.compute
    policy.compute = lambda: reports.append(compute()) or reports[-1]
    for _ in range(4):
        model.step()
        moved = model.last_round.transfers
        moved = moved[moved["reason"] == Reason.COMPUTE]
        big = reports[-1].get("hf:big", np.zeros(0, dtype=np.int64))
        rows = np.flatnonzero(big)
        assert {policy.roles[policy.role[r]].name for r in rows.tolist()} <= {"router"}
        assert sorted(moved["amount"].tolist()) == sorted((big[rows] * 1000).tolist())
        assert reports[-1].get("hf:smollm2", np.zeros(1)).any()  # the classifiers spent tokens too, unpriced
        charged += len(moved)
    assert charged > 0


@pytest.mark.parametrize("sets, key", [
    (["triage.roles.nobody.model=big"], "triage.roles.nobody"),
    (["triage.roles.router.model=big", "agents.actions=grpo", "agents.group=4"], "triage.roles.router"),
    (['market.token_prices={"hf:big" = 1.0}'], "market.token_prices.hf:big"),
])
def test_a_role_model_the_world_cannot_serve_is_refused_at_load_naming_the_key(triage, sets, key):
    from scenarios.run.config import ConfigError

    folder, _ = triage
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load(str(folder / "triage.toml"), sets)


def test_one_prompt_asked_of_two_models_is_two_asks_and_only_the_shared_ones_are_remembered(triage):
    """Two roles with one frozen prompt on two models (a size comparison): the same prompt goes to each engine, and
    the greedy memo, the shared engine's, never answers for the other."""
    folder, engines = triage
    model = build_model(load(str(folder / "triage.toml"), ["triage.roles.router.model=big"]))
    policy = model.policy
    shared, big = (next(e for e in engines.values() if e.cfg.model == m) for m in ("smollm2", "big"))
    classifier, router = (int(np.flatnonzero(policy.role == policy.role_index[n])[0]) for n in ("classifier", "router"))
    prompt = policy.action_prompt(0, classifier, model.world.observe()[0])
    before = len(shared.sent), len(big.sent)
    policy.generate([prompt, prompt], [classifier, router])
    assert (len(shared.sent) - before[0], len(big.sent) - before[1]) == (1, 1)
    policy.generate([prompt, prompt], [classifier, router])  # again: the shared engine's answer is remembered
    assert (len(shared.sent) - before[0], len(big.sent) - before[1]) == (1, 2)
