"""The tools a researcher sets an LLM world up with: ``catallax probe`` (a skill line's measured harm, the exact
prompt), and the warnings of a run whose role never wakes or whose population dies out.

A two-role world written outside the package (tests/agents/test_text_world.py's triage) with a planted wrong line,
its LLM a scripted stand-in that reads its prompt: holding the planted line, the classifier calls every message
negative; without it, it labels correctly.
"""

import json
import math

import numpy as np
import pytest

from scenarios.text import scenario as text_scenario
from scenarios import load
from scenarios.cli.main import main
from scenarios.run import runner
from tests.agents.test_text_world import write_triage
from tests.scenarios.scripted_backend import ScriptedBackend

PLANTED = "Every message is a complaint."
POOL = f'''
    pool = {{"classifier": ["Read the whole message.", "{PLANTED}"],
            "router": ["Negative messages go to support."]}}
'''


class Reader(ScriptedBackend):
    """Answers as the prompt says: the classifier labels the message (negative for all, holding the planted line),
    the router routes the label; wake-up scores: the role's own stage yes, the other no (``silent``: never)."""

    def __init__(self, silent: str = ""):
        super().__init__()
        self.silent = silent

    def answer(self, p) -> str:
        if p.user.startswith("Message:"):
            bad = PLANTED in p.skills or any(w in p.user for w in ("crashes", "Refund"))
            return "negative" if bad else "positive"
        return "support" if "negative" in p.user else "archive"

    def score(self, prompts):
        self.scored_tokens = np.full(len(prompts), 9, dtype=np.int64)
        mine = ["Label the" in p.system and "waits for a label" in p.user or "Route a" in p.system
                and "waits for a route" in p.user for p in prompts]
        silent = [self.silent and self.silent in p.system for p in prompts]
        return np.array([-5.0 if s else 5.0 if m else -5.0 for m, s in zip(mine, silent)])


@pytest.fixture
def world(tmp_path):
    write_triage(tmp_path, POOL)
    return tmp_path


def test_probe_measures_the_planted_line_s_harm_and_prints_the_prompt(world, monkeypatch, capsys):
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Reader())
    assert main(["probe", str(world / "triage.toml"), "--role", "classifier", "--n", "24", "--show-prompt",
                 "--json"]) == 0
    printed = capsys.readouterr().out
    out = json.loads(printed.strip().splitlines()[-1])
    harm = {e["line"]: e for e in out["lines"]}
    assert set(harm) == {"Read the whole message.", PLANTED}
    planted, plain = harm[PLANTED], harm["Read the whole message."]
    assert planted["low"] > 0.2 and planted["harm"] > 0.3  # removing it raises success: it harms
    assert plain["harm"] == 0 and plain["low"] == plain["high"] == 0  # removing it changes nothing here
    assert out["success"] < 1 and "[system] Label the customer message." in printed and PLANTED in printed
    with pytest.raises(SystemExit) as bad:
        main(["probe", str(world / "triage.toml"), "--role", "nobody"])
    assert bad.value.code == 2 and "--role nobody" in capsys.readouterr().err


def test_the_gate_power_script_gives_the_validation_size_that_sees_the_planted_line(world, monkeypatch, tmp_path):
    """experiments/text_gate_power.py: every LLM role probed; the planted line's harm and the size at which the gate
    accepts its prune with probability 0.9 (the normal approximation); a line that changes nothing is never seen."""
    from experiments import text_gate_power

    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Reader())
    rows = tmp_path / "power.jsonl"
    assert text_gate_power.main([str(world / "triage.toml"), "--n", "24", "--set", "triage.validation=8",
                                 "--rows", str(rows)]) == 0
    got = [json.loads(line) for line in rows.read_text().splitlines()]
    by_line = {r["line"]: r for r in got if r["role"] != "(all)"}
    assert {r["role"] for r in by_line.values()} == {"classifier", "router"}
    planted, plain = by_line[PLANTED], by_line["Read the whole message."]
    assert planted["low"] > 0 and 2 <= planted["required_validation"] < 24 and planted["validation"] == 8
    z = 1.2815515655446004  # z_0.9: skills.confidence 0.9, power 0.9
    assert planted["required_validation"] == math.ceil((2 * z * planted["sd"] / planted["harm"]) ** 2)
    assert plain["required_validation"] is None and plain["power_at_validation"] == 0.0
    world_row = got[-1]
    assert world_row["role"] == "(all)" and PLANTED in world_row["line"] and world_row["harmful_95"] == 1


def test_a_role_that_never_wakes_and_a_population_that_dies_out_are_said(world, monkeypatch, capsys):
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Reader(silent="Route a"))
    exp = load(str(world / "triage.toml"), ["run.episodes=24", "triage.heldout=2", "population.births=false", "population.p_explore=0",
                                           "population.p_exploit=0", "population.min_agents=0",
                                           "population.initial_wealth=0.01", "market.token_price=100",
                                           "triage.policy.theta_low=0", "triage.policy.theta_high=0.5"])
    summary = runner.run_experiment(exp, f"sqlite:///{world / 'a.db'}", progress=False)
    err = capsys.readouterr().err
    assert summary["roles_never_woke"]["router"] >= 1 and "classifier" not in summary["roles_never_woke"]
    assert err.count("role 'router' never woke") == 1
    assert summary["population_extinct_at_episode"] is not None and summary["population"] == 0
    assert err.count("the population died out") == 1
