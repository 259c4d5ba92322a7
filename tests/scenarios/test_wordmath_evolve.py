"""Skill evolution of wordmath's LLM agents (agents/llm/edit_pass.py): credit, the LLM diagnoser, gated edits.

The whole loop runs the real SmolLM2 as a subprocess, at toy size; the config checks and the trace
statuses are checked directly; resume on the scripted stand-in for the LLM (test_wordmath_skills).
"""

import json
import subprocess
import sys

import pytest
from sqlmodel import Session, select

from agents.backends.base import Completion
from agents.llm.policy import status_of
from market.database import make_engine
from scenarios.run import runner
from scenarios.run.config import load
from skills import SkillsConfig
from skills.library import DiagnosisFailure, SkillLibrary
from tests.scenarios.test_wordmath_skills import (BIRTHS, cli, final_population, run_killed, scripted,  # noqa: F401
                                                  skills_of)


def test_an_invalid_action_is_a_failed_node_of_its_kind():
    assert status_of(Completion("5 + +"), "unparsable or uses numbers not in the problem") == "invalid_output"
    assert status_of(Completion("  "), "empty") == "empty_output"
    assert status_of(Completion("5 + 3 + 2 + 1 +", finish="length"), "over-long (hit the token cap)") == "timeout"
    assert status_of(Completion("", finish="timeout"), "timeout") == "timeout"
    assert status_of(Completion(""), "illegal: no computed value to report") == "constraint_violated"


@pytest.mark.parametrize("sets, key", [
    (["skills.credit=grse", "skills.evidence=training", "agents.group=3"],
     "agents.group = 3: market.batch (16) must be a multiple"),
    (["skills.credit=grse", "agents.group=0"], "agents.group = 0: scenario 'wordmath''s skill library compares"),
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
    sets = ["run.episodes=16", "market.batch=8", "wordmath.heldout=4", "wordmath.validation=4",
            "population.initial_agents=6", "skills.credit=grse", "skills.diagnoser=llm", "skills.min_support=1",
            "skills.probe=2"]
    out = cli("run", "wordmath", "--json", "--out", str(tmp_path), *[x for kv in sets for x in ("--set", kv)])
    summary = json.loads(out.strip().splitlines()[-1])
    run = summary["run_id"]
    assert summary["edit_passes"] == 2 and summary["skill_edits_proposed"] > 0
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
    url = f"sqlite:///{tmp_path / 'b.db'}"
    run_killed(exp, url, monkeypatch)
    resumed = runner.resume_experiment("cut", url, progress=False)

    counts = [k for k in whole if k.startswith(("skill_", "edit_", "diagnoses_"))]
    assert whole["edit_passes"] == 8 and (credit == "grse" or whole["skill_edits_proposed"] > 0)
    assert resumed["ledger_hash"] == whole["ledger_hash"]
    assert {k: resumed[k] for k in counts if k != "skill_pass_seconds"} == \
        {k: whole[k] for k in counts if k != "skill_pass_seconds"}
    a, b = SkillLibrary(make_engine(f"sqlite:///{tmp_path / 'a.db'}"), "whole"), SkillLibrary(make_engine(url), "cut")
    assert skills_of(a) == skills_of(b)


OFF_BY_ONE = "example: Value: 8 What is the final answer? => The answer is 9."
"""A wrong worked example for the answerer. Measured directly on SmolLM2, outside the market, paired on 60
values: with the pool's two correct answerer lines it states the value right 60 times, with this line after
them 31 (29 lost, none gained)."""


def planted_rollouts(rounds: int):
    """Real SmolLM2 rollouts, small. Two extractors share the first step (random clearing): one holding the
    pool's five correct worked examples, one holding nothing (it fails). Three steps are all a problem gets, so
    the answerer acts only where the first extraction was valid: the market routes it into the better
    rollouts. It holds the pool's three answerer lines and OFF_BY_ONE. Within each problem's 4 rollouts each
    line of an acting agent is in its prompt or not at random (the shipped ``skills.p_use``, 0.8). The engine
    is the test's own, so its rollouts do not depend on which tests ran before. Returns the evidence window,
    the library, the skills config and the planted line's skill name."""
    from agents.backends.factory import make_backend
    from agents.llm.policy import LLMPolicy
    from market import MarketConfig, MarketModel, PopulationConfig
    from scenarios.text.adapter import TextBatch, TextBoard
    from scenarios import wordmath as W

    cfg = W.Config(heldout=4, validation=4, horizon=3)
    board = TextBoard(W.Wordmath())
    world = TextBatch(board, seed=3, horizon=cfg.horizon)
    world.group = 4
    answerer = [line for _, lines in W.POOL["answerer"][:2] for line in lines]
    seeds = [("extractor", W.POOL["extractor"][0][1], -5.0), ("extractor", [], -5.0),
             ("calculator", [], 0.0), ("answerer", answerer + [OFF_BY_ONE], -5.0)]
    policy = LLMPolicy(make_backend(cfg.llm), board, list(W.ROLES), W.POOL, None, cfg.policy, seeds)
    model = MarketModel(world, policy, MarketConfig(batch=32, clearing="random", rent=0.0),
                        PopulationConfig(initial_agents=4, initial_wealth=100.0, births=False, min_agents=0,
                                         max_agents=4), seed=1)
    skills = SkillsConfig(credit="grse", every=10**6)  # evidence only: no edit pass
    policy.evolve_skills(skills, 4, seed=1)
    policy.evolver.initial = 0.0  # no held-out run: not what these tests are about
    for _ in range(rounds):
        model.step()
    harmful = policy.catalogue.names["answerer", OFF_BY_ONE]
    return policy.evolver.evidence(), policy.evolver._library(), skills, harmful


@pytest.mark.slow
def test_group_relative_credit_blames_a_line_that_rides_with_success_where_presence_does_not():
    """The acceptance's planted line: OFF_BY_ONE costs the answerer a third or more of its successes in these very
    rollouts, yet the rollouts it is in score above the run's average (the answerer acts only after a valid
    extraction), so presence credit sees a helpful line and blames nothing of it. Group-relative credit, with
    the answerer's own participation as a column, judges the line among the rollouts the answerer acted in:
    negative, the lowest of its holder's lines, a case of the blame step. 12 rounds of 32 problems (384
    rollouts), world seed 3; README, wordmath, "Skill evolution of LLM agents", has the seeds measured."""
    from skills import RuleDiagnoser, batch, group_relative_credit
    from skills.evolve import blame

    window, library, skills, harmful = planted_rollouts(rounds=12)
    evidence = batch(window, skills.credit_config(group=4))
    r, line = evidence.rewards, evidence.keys.index(("4", harmful))
    holder = [k for k, (agent, _) in enumerate(evidence.keys) if agent == "4"]
    acted = evidence.acted[:, :, evidence.agents.index("4")] > 0
    with_line = evidence.usage[:, :, line] > 0
    assert 0.2 < acted.mean() < 0.6  # routed into some rollouts only
    assert r[with_line].mean() < r[acted & ~with_line].mean() / 1.5  # the harm, in the rollouts credit reads ...
    assert r[with_line].mean() > r.mean()  # ... and still above the average: presence credit calls it helpful
    rule = RuleDiagnoser(skills.diagnosis_config())
    assert harmful not in [c.skill.name for c in blame(window, "presence", library, skills, rule).cases]

    credit = group_relative_credit(r, evidence.usage, evidence.questions, skills.credit_config(group=4), evidence.acted)
    assert credit.credit[line] < 0 and credit.credit[line] == credit.credit[holder].min(), credit.credit[holder]
    assert harmful in [c.skill.name for c in blame(window, "grse", library, skills, rule).cases]


def test_births_rewrites_are_checked_where_skills_evolve_and_marked_unchecked_where_not(tmp_path, scripted):
    """Every birth's rewrite records its cheap check in its add edit (skills/catalogue.py): ``passed`` or the problem
    where skill evolution runs, ``unchecked`` where it does not; the summary counts each and none of them is a gated
    edit. The scripted model's rewrites are general lines of a few words: they pass."""
    summaries = {}
    for credit in ("none", "grse"):
        sets = BIRTHS + [f"skills.credit={credit}", "skills.every=1000"]  # grse: the checks on, no edit pass
        db = f"sqlite:///{tmp_path / credit}.db"
        summary = runner.run_experiment(load("wordmath", sets, seed=1), db, progress=False)
        library = SkillLibrary(make_engine(db), summary["run_id"])
        births = [json.loads(e.diagnosis) for e in library.edits().values()
                  if e.diagnosis and json.loads(e.diagnosis).get("origin") in ("exploit", "explore")]
        assert births and all(e.gate == "ungated" for e in library.edits().values())
        summaries[credit] = {b["check"] for b in births}
        if credit == "grse":
            assert summary["births_passed"] == len(births) and summary["skill_edits_accepted"] == 0
    assert summaries == {"none": {"unchecked"}, "grse": {"passed"}}


def test_a_frozen_evaluation_leaves_the_training_run_as_it_found_it(scripted):
    """The evolver's frozen runs (held-out before training, the gate's validation) restore the market's random
    stream and the policy's counters, last actions and forfeit memory: an evolver with every line always carried
    (p_use 1) and no edit pass trains on the same problems, with the same ledger, as no evolver."""
    from scenarios.text import scenario as text_scenario
    from market import MarketConfig, MarketModel, PopulationConfig
    from scenarios import wordmath

    def model(evolve: bool):
        m = MarketModel(*text_scenario.build(wordmath.Wordmath, wordmath.Config(heldout=4, validation=4)),
                        MarketConfig(batch=4, clearing="random"), PopulationConfig(initial_agents=6, births=False),
                        seed=3)
        if evolve:
            m.policy.evolve_skills(SkillsConfig(p_use=1.0, every=10**6), 2, seed=3)
        return m

    plain, evolved = model(False), model(True)
    for _ in range(3):
        plain.step(), evolved.step()
        policy = evolved.policy
        before = (evolved.rng.bit_generator.state, dict(policy.counts), dict(policy.recent), dict(policy.bench))
        policy.evolver.frozen.success(evolved, evolved.world.validation)
        assert (evolved.rng.bit_generator.state, dict(policy.counts), dict(policy.recent), dict(policy.bench)) == before
    assert evolved.policy.evolver.initial is not None  # the held-out run before training ran
    assert evolved.ledger.hash == plain.ledger.hash
    assert evolved.rng.bit_generator.state == plain.rng.bit_generator.state


def test_a_probe_is_the_credits_evidence_and_leaves_training_as_it_was(scripted):
    """``skills.evidence = "probe"``: the training rounds carry every line (p_use reaches only the probe) and keep
    their own problems, so at p_use 0.5 the run trains with the same ledger as no evolver; each probe is
    ``skills.probe`` questions of G rollouts that differ in the lines their prompts carried."""
    from scenarios.text import scenario as text_scenario
    from market import MarketConfig, MarketModel, PopulationConfig
    from scenarios import wordmath

    def model(evolve: bool):
        m = MarketModel(*text_scenario.build(wordmath.Wordmath, wordmath.Config(heldout=4, validation=4)),
                        MarketConfig(batch=4, clearing="random"), PopulationConfig(initial_agents=6, births=False),
                        seed=3)
        if evolve:
            cfg = SkillsConfig(p_use=0.5, every=10**6, evidence="probe", probe=3)
            m.policy.evolve_skills(cfg, 4, seed=3)
        return m

    plain, evolved = model(False), model(True)
    carried = set()
    for _ in range(3):
        plain.step(), evolved.step()
        assert evolved.policy.steps == []  # training rounds are not the credit's rollouts
        groups = evolved.policy.evolver.probe(evolved)
        assert len(groups) == 3 and all(len(rollouts) == 4 for _, rollouts in groups)
        carried |= {tuple(sorted((a, tuple(sorted(s))) for a, s in r.used().items())) for _, rs in groups for r in rs}
    assert len(carried) > 1  # the p_use draws: rollouts of a question carried different lines
    assert evolved.ledger.hash == plain.ledger.hash
    assert evolved.rng.bit_generator.state == plain.rng.bit_generator.state
