"""Skill evolution of wordmath's LLM agents (agents/llm_skills.py): credit, the LLM diagnoser, gated edits.

The whole loop runs the real SmolLM2 as a subprocess, at toy size; the config checks and the trace
statuses are checked directly; resume on the scripted stand-in for the LLM (test_wordmath_skills).
"""

import json
import subprocess
import sys

import pytest
from sqlmodel import Session, select

from agents.backends.base import Completion
from agents.llm_policy import status_of
from market.schema import make_engine
from scenarios.run import runner
from scenarios.run.config import load
from skills.library import DiagnosisFailure, SkillLibrary
from tests.scenarios.test_wordmath_skills import BIRTHS, cli, final_population, scripted, skills_of  # noqa: F401


def test_an_invalid_action_is_a_failed_node_of_its_kind():
    assert status_of(Completion("5 + +"), "unparsable or uses numbers not in the problem") == "invalid_output"
    assert status_of(Completion("  "), "empty") == "empty_output"
    assert status_of(Completion("5 + 3 + 2 + 1 +", finish="length"), "over-long (hit the token cap)") == "timeout"
    assert status_of(Completion("", finish="timeout"), "timeout") == "timeout"
    assert status_of(Completion(""), "illegal: no computed value to report") == "constraint_violated"


@pytest.mark.parametrize("sets, key", [
    (["skills.credit=grse", "skills.group=3"], "skills.group = 3: market.batch (16) must be a multiple"),
    (["skills.credit=grse", "agents.actions=grpo", "agents.group=8"], "skills.group = 4: agents.group = 8"),
])
def test_groups_that_do_not_fit_are_refused_before_the_model_loads(sets, key):
    done = subprocess.run([sys.executable, "-m", "scenarios.cli.main", "run", "wordmath",
                           *[x for kv in sets for x in ("--set", kv)]], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and key in done.stderr, done.stderr[-1000:]


@pytest.mark.slow
def test_grse_with_the_llm_diagnoser_edits_the_library_through_the_gate(tmp_path):
    """A tiny real run: the summary counts edit passes, gated edits and the model's diagnoses, and they match
    the database (gated skill_edit rows, the failure table); every skill a live agent holds is current;
    lineage and export work on the run."""
    sets = ["run.episodes=24", "market.batch=8", "wordmath.heldout=4", "wordmath.validation=4",
            "population.initial_agents=6", "skills.credit=grse", "skills.diagnoser=llm", "skills.min_support=1"]
    out = cli("run", "wordmath", "--json", "--out", str(tmp_path), *[x for kv in sets for x in ("--set", kv)])
    summary = json.loads(out.strip().splitlines()[-1])
    run = summary["run_id"]
    assert summary["edit_passes"] == 3 and summary["skill_edits_proposed"] > 0
    assert summary["skill_edits_accepted"] + summary["skill_edits_rejected"] == summary["skill_edits_proposed"]
    assert summary["diagnoses_llm"] + summary["diagnoses_fallback"] > 0
    assert summary["diagnoses_fallback"] == summary["diagnoses_malformed"]
    assert 0 <= summary["heldout_accuracy_initial"] <= 1 and "heldout_accuracy" in summary

    engine = make_engine(f"sqlite:///{tmp_path / 'catallax.db'}")
    library = SkillLibrary(engine, run)
    gated = [e for e in library.edits().values() if e.gate != "ungated"]
    assert len(gated) == summary["skill_edits_proposed"]
    assert sum(e.gate == "accepted" for e in gated) == summary["skill_edits_accepted"]
    assert all(e.score_before is not None and e.score_after is not None for e in gated)
    with Session(engine) as s:
        failures = s.exec(select(DiagnosisFailure).where(DiagnosisFailure.library == run)).all()
    assert len(failures) == summary["diagnoses_malformed"] and all(f.error for f in failures)
    held, _ = final_population(engine, run)
    assert set(held) <= {v.name for v in library.current()}

    at = ["--out", str(tmp_path), "--run", run]
    lineage = json.loads(cli("skills", "lineage", *at, "--json").strip().splitlines()[-1])
    assert {n["id"] for n in lineage["nodes"]} >= {v.label for v in library.current()}
    cli("skills", "export", str(tmp_path / "export"), *at)
    assert {md.parent.name for md in (tmp_path / "export").glob("*/SKILL.md")} >= {v.name for v in library.current()}


@pytest.mark.parametrize("credit", ["random", "grse"])
def test_a_killed_and_resumed_evolving_run_ends_as_an_uninterrupted_one(tmp_path, monkeypatch, scripted, credit):
    """The evolver's evidence, draws and counts ride in the checkpoint, and the library rows a killed round wrote
    are dropped: the resumed run gates the same edits and ends with the same ledger, library and counts (on the
    scripted stand-in for the LLM of test_wordmath_skills: exact and fast)."""
    exp = load("wordmath", BIRTHS + ["run.checkpoint_every=1", f"skills.credit={credit}", "skills.min_support=1",
                                     "wordmath.validation=2"])
    whole = runner.run_experiment(exp, f"sqlite:///{tmp_path / 'a.db'}", progress=False, run_id="whole")
    write_round, calls = runner.RunStore.write_round, []

    def killed(store, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("killed")
        return write_round(store, *args, **kwargs)

    url = f"sqlite:///{tmp_path / 'b.db'}"
    monkeypatch.setattr(runner.RunStore, "write_round", killed)
    with pytest.raises(RuntimeError, match="killed"):
        runner.run_experiment(exp, url, progress=False, run_id="cut")
    monkeypatch.setattr(runner.RunStore, "write_round", write_round)
    resumed = runner.resume_experiment("cut", url, progress=False)

    counts = [k for k in whole if k.startswith(("skill_", "edit_", "diagnoses_"))]
    assert whole["edit_passes"] == 8 and (credit == "grse" or whole["skill_edits_proposed"] > 0)
    assert resumed["ledger_hash"] == whole["ledger_hash"]
    assert {k: resumed[k] for k in counts if k != "skill_pass_seconds"} == \
        {k: whole[k] for k in counts if k != "skill_pass_seconds"}
    a, b = SkillLibrary(make_engine(f"sqlite:///{tmp_path / 'a.db'}"), "whole"), SkillLibrary(make_engine(url), "cut")
    assert skills_of(a) == skills_of(b)
