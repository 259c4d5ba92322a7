"""recsys evolution end to end at toy size: gate, run database, SKILL.md export, lineage, planted harm, resume."""

import itertools
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest

from market.checkpoint import decode, encode
from market.store import load_episodes, make_engine
from scenarios.cli.main import main as cli
from scenarios.run.config import load
from scenarios.recsys import make_model, seeds
from scenarios.run.runner import run_experiment
from skills import SkillLibrary, edit_path, export_library, import_library, skill_graph
from tests.scenarios.recsys_small import OVERRIDES

CATALLAX = Path(sys.executable).parent / "catallax"


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    db = f"sqlite:///{tmp_path_factory.mktemp('recsys') / 'runs.db'}"
    summary = run_experiment(load("recsys", OVERRIDES, seed=1), db, progress=False)
    return summary, db


def test_a_short_run_reports_and_persists(short_run):
    summary, db = short_run
    for key in ("ndcg10_initial", "ndcg10_final", "edits_accepted", "edits_rejected", "recall50_final",
                "coverage_final", "baselines"):
        assert key in summary
    assert summary["conservation_ok"] and summary["episodes"] == 192 and summary["transfers"] == 0
    assert summary["edits_accepted"] >= 1 and summary["edits_rejected"] >= 1
    episodes = load_episodes(make_engine(db), summary["run_id"])
    assert len(episodes) == 192 and all(0 <= e["reward"] <= 1_000_000 for e in episodes)


def test_the_gate_lets_validation_ndcg_drop_only_on_a_prune_and_within_its_standard_error(short_run):
    """recsys ships skills.prune_se = 1: an accepted prune may cost one standard error of the paired per-user
    NDCG differences, which lie in [-1, 1], so at most 1 / sqrt(validation users); every other edit none."""
    summary, db = short_run
    exp = load("recsys", OVERRIDES, seed=1)
    assert exp.skills.prune_se == 1.0
    tolerance = exp.skills.prune_se / np.sqrt(exp.scenario.validation_users)
    library = SkillLibrary.open(db, summary["run_id"])
    edits = sorted((e for e in library.edits().values() if e.gate != "ungated"), key=lambda e: e.id)
    # a candidate is one edit, or a reweight's edits (one diagnosis, gated together: scenarios/recsys/edits.py)
    candidates = [list(g) for _, g in itertools.groupby(edits, lambda e: (e.diagnosis, e.gate, e.score_before,
                                                                           e.score_after))]
    accepted = [c for c in candidates if c[0].gate == "accepted"]
    assert accepted and len(accepted) < len(candidates)  # the gate had something to turn down
    assert any(len(c) > 1 for c in candidates)  # the floor proposed a reweight
    score = summary["validation_ndcg_initial"]
    for c in candidates:  # each candidate was compared with the library in use at the time
        e = c[0]
        assert e.score_before == pytest.approx(score, abs=1e-6)  # the summary rounds to 6 digits
        if e.gate == "accepted":  # a candidate other than prunes must improve (with evidence: skills.confidence)
            prunes = all(x.operator == "prune" for x in c)
            assert e.score_after > e.score_before - (tolerance if prunes else 0.0)
            score = e.score_after
    assert summary["validation_ndcg_final"] == pytest.approx(score, abs=1e-6)
    rejected = [v for v in library.versions() if v.status == "rejected"]
    assert len(rejected) == sum(len(c) for c in candidates if c[0].gate == "rejected")  # every turned-down one is kept
    assert summary["edits_rejected"] == len(candidates) - len(accepted)


def test_the_evolved_library_exports_as_skill_md_and_its_lineage_builds(short_run, tmp_path):
    summary, db = short_run
    library = SkillLibrary.open(db, summary["run_id"])
    paths = export_library(library, tmp_path / "skills")
    text = (tmp_path / "skills" / "recall-covis" / "SKILL.md").read_text()
    assert text.startswith("---\nname: recall-covis\n") and "```rule\n" in text and "co-visited" in text
    assert len(paths) == len(library.versions())
    copy = SkillLibrary(make_engine("sqlite://"), "copy")
    import_library(copy, tmp_path / "skills")
    assert [(v.label, v.status, v.rule) for v in copy.versions()] == [
        (v.label, v.status, v.rule) for v in library.versions()]
    g = skill_graph(library)
    assert nx.is_directed_acyclic_graph(g) and set(g) == {v.label for v in library.versions()}
    revised = next(v for v in library.versions() if v.version > 1)  # an edit's version (accepted or not)
    root = f"{revised.name}@1"
    assert edit_path(g, root, revised.label)[-1][1] == revised.label
    assert sorted(summary["skills_final"]) == sorted(v.label for v in library.current())


def test_a_run_can_start_from_an_exported_library(short_run, tmp_path):
    summary, db = short_run
    export_library(SkillLibrary.open(db, summary["run_id"]), tmp_path / "skills")
    again = run_experiment(load("recsys", OVERRIDES + ["run.episodes=64", f"recsys.seed_library={tmp_path / 'skills'}"],
                                seed=1), db, progress=False)
    assert again["ndcg10_initial"] == summary["ndcg10_final"]  # the same world, the evolved library
    assert again["validation_ndcg_initial"] == summary["validation_ndcg_final"]


def test_grse_prunes_the_planted_harmful_skills_that_presence_credit_keeps(tmp_path):
    """Three seeds at toy size: GRSE prunes all three in most seeds, and more of them than presence credit."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    pruned = {"grse": [], "presence": []}
    for seed in range(3):
        exp = load("recsys", OVERRIDES + ["recsys.plant_harmful=3", "market.batch=128", "run.episodes=640",
                                          "recsys.validation_users=150"], seed=seed)
        summary = run_experiment(exp, db, progress=False)
        assert summary["harmful_planted"] == 3
        for arm in pruned:
            pruned[arm].append(summary[f"harmful_pruned_{arm}"])
        assert summary["arms"]["grse"]["ndcg10_final"] > summary["ndcg10_initial"]
        grse = SkillLibrary.open(db, summary["run_id"])
        for name in seeds.planted(3):
            if grse.get(name).status == "pruned":
                edit = grse.edits()[grse.get(name).edit_id]
                assert edit.gate == "accepted" and json.loads(edit.diagnosis)["failure"] == "harmful_skill"
    assert pruned["grse"].count(3) >= 2, pruned
    assert sum(pruned["grse"]) > sum(pruned["presence"]), pruned


def test_a_resumed_run_rewrites_the_cut_off_round_exactly(tmp_path):
    exp = load("recsys", OVERRIDES + ["run.episodes=128"], seed=2)
    ids = [v for v in ("a", "b")]

    def store(name):
        return SimpleNamespace(engine=make_engine(f"sqlite:///{tmp_path / name}.db"), run_id=name)

    straight = make_model(exp)
    straight.attach(store(ids[0]))
    straight.step(), straight.step()

    cut = make_model(exp)
    cut.attach(store(ids[1]))
    cut.step()
    state = encode(cut.state_dict())
    cut.step()  # this round's library rows are written, then the process "dies" before its checkpoint
    resumed = make_model(exp)
    resumed.load_state_dict(decode(state))
    resumed.attach(store(ids[1]))
    resumed.step()

    def history(model):
        return [(v.label, v.status, v.rule) for v in model.arms[model.main].library.versions()]

    assert history(resumed) == history(straight)
    np.testing.assert_array_equal(resumed.last_round.episodes, straight.last_round.episodes)


def test_config_errors_are_one_line_and_exit_2(tmp_path, capsys):
    for args, message in ((["--set", "market.batch=30"], "must be a multiple of"),
                          (["--set", "recsys.data=movielens", "--set", f"recsys.path={tmp_path}"],
                           "no u.data or ratings.csv"),
                          (["--set", "skills.credit=oracle"], "skills.credit"),
                          (["--set", "skills.diagnoser=llm"], "no LLM diagnoser"),
                          (["--set", "recsys.window=3"], "did you mean 'skills.window'"),  # moved to [skills]
                          (["--set", "recsys.prune_below=-0.2"], "did you mean 'skills.prune_below'")):
        with pytest.raises(SystemExit) as exit:
            cli(["run", "recsys", *args, "--out", str(tmp_path)])
        assert exit.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "catallax.db").exists()


def test_catallax_run_recsys_json_on_the_movielens_fixture(tmp_path):
    fixture = Path(__file__).parents[1] / "fixtures" / "movielens" / "ml-100k" / "u.data"
    proc = subprocess.run([str(CATALLAX), "run", "recsys", "--json", "--out", str(tmp_path), "--set",
                           "recsys.data=movielens", "--set", f"recsys.path={fixture}", "--set", "recsys.holdout=2",
                           "--set", "recsys.validation_users=15", "--set", "recsys.test_users=15", "--set",
                           "recsys.rank=8", "--set", "recsys.candidates=30", "--set", "market.batch=40",
                           "--set", "run.episodes=80"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["scenario"] == "recsys" and summary["episodes"] == 80 and summary["conservation_ok"]
    assert 0 <= summary["ndcg10_initial"] <= 1 and 0 <= summary["ndcg10_final"] <= 1
