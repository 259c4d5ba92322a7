"""Wordmath's LLM agents keep their skills in the run's library (skills/catalogue.py, agents/llm/policy.py).

The library's mechanics (naming, births as add edits, writes at round boundaries, resume) are
checked in-process on a scripted stand-in for the LLM (exact, fast); the whole thing, from
``catallax run wordmath`` to ``catallax skills list|show|lineage|export|import``, runs the real
SmolLM2 as a subprocess, at toy size.
"""

import json
import subprocess
import sys
import zlib

import numpy as np
import pytest
from sqlmodel import Session, select

from scenarios.text import scenario as text_scenario
from agents.backends.base import Completion, Stats
from agents.llm.policy import LLMPolicy
from agents.llm.prompts import REWRITE_SYSTEM
from scenarios.text.adapter import TextBoard
from market import MarketConfig, MarketModel, PopulationConfig
from market.checkpoint import decode
from market.database import make_engine
from market.schema import Agent, Checkpoint
from market.store import RunStore
from scenarios import wordmath
from scenarios.run import runner
from scenarios.run.config import load
from skills.catalogue import marks, slug, summary
from skills.library import MAX_DESCRIPTION, SkillLibrary, check


class Scripted:
    """A deterministic stand-in for the LLM: each answer is a function of the prompt alone.
    Rewrites are fresh general lines (a few repeat, as a real model's do), actions a fixed answer,
    wake-up scores a hash of the prompt."""

    name = "scripted"

    def __init__(self):
        self.stats = Stats()
        self.scored_tokens = np.zeros(0, dtype=np.int64)

    def generate(self, prompts):
        out = []
        for p in prompts:
            if p.system == REWRITE_SYSTEM:
                text = f"Check every number twice, variant {p.seed % 1000}." if p.seed % 5 else "??"
            else:
                text = "Answer: 8"
            out.append(Completion(text, tokens=3, prompt_tokens=10))
        return out

    def score(self, prompts):
        self.scored_tokens = np.full(len(prompts), 10, dtype=np.int64)
        return np.array([zlib.crc32(f"{p.skills}|{p.user}".encode()) % 2000 / 1000 - 1 for p in prompts])

    def close(self):
        pass


@pytest.fixture
def scripted(monkeypatch):
    """wordmath's build (scenarios/text/scenario.py) on the scripted LLM."""
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Scripted())


def scripted_policy() -> LLMPolicy:
    return LLMPolicy(Scripted(), TextBoard(wordmath.Wordmath()), list(wordmath.ROLES), wordmath.POOL)


BIRTHS = ["run.episodes=32", "market.batch=4", "wordmath.heldout=2", "population.p_exploit=0.5",
          "population.p_explore=0.5", "population.initial_agents=6", "population.max_agents=40",
          "population.min_agents=4"]


def skills_of(library: SkillLibrary) -> list[tuple]:
    edits = library.edits()
    return [(v.name, v.version, v.description, v.body, v.role, v.status, edits[v.edit_id].operator,
             edits[v.edit_id].diagnosis) for v in library.versions()]


def test_every_pool_line_is_one_valid_skill_named_by_its_role_and_kind():
    policy = scripted_policy()
    names = policy.catalogue.names
    wanted = {(role, line) for role, groups in wordmath.POOL.items() for _, group in groups for line in group}
    assert set(names) == wanted and len(set(names.values())) == len(names)
    for (role, line), name in names.items():
        assert check("name", name) is None and name.startswith(f"{role}-")
        assert name.split("-")[1] == ("rule" if not line.startswith("example:") else
                                      "wake" if line.endswith(("=> yes", "=> no")) else "example")
        assert policy.catalogue.lines[name] == line and summary(line) == " ".join(line.split())
    assert scripted_policy().catalogue.names == names  # deterministic
    assert slug("Word Extractor!") == "word-extractor" and len(slug("x" * 100) + "-example-999999") <= 64
    assert len(summary("word " * 400)) == MAX_DESCRIPTION


def test_agents_hold_library_skills_and_their_prompts_carry_their_lines(scripted):
    model = MarketModel(*text_scenario.build(wordmath.Wordmath, wordmath.Config(heldout=2)), MarketConfig(batch=2),
                        PopulationConfig(initial_agents=6, births=False), seed=0)
    policy = model.policy
    for row in np.flatnonzero(policy.role >= 0).tolist():
        assert all(name in policy.catalogue.lines for name in policy.skills[row])
        lines = policy.lines(row)
        shown = policy._skills(row, wake=False).splitlines() + policy._skills(row, wake=True).splitlines()
        assert sorted(set(shown)) == sorted(set(lines))  # every line is in one prompt or the other (general: both)


def test_a_checkpoint_from_before_the_library_loads_its_lines_as_skills(scripted):
    model = MarketModel(*text_scenario.build(wordmath.Wordmath, wordmath.Config(heldout=2)), MarketConfig(batch=2),
                        PopulationConfig(initial_agents=6, births=False), seed=0)
    policy = model.policy
    state = policy.state_dict()
    state.pop("catalogue")
    state["skills"] = [policy.lines(row) for row in range(policy.role.size)]  # the old format: the lines themselves
    twin = scripted_policy()
    twin.load_state_dict(state)
    assert [twin.lines(row) for row in range(twin.role.size)] == state["skills"]
    assert twin.skills == policy.skills  # pool lines keep their names


def test_a_rewrite_is_an_add_edit_naming_its_birth_and_a_malformed_one_writes_nothing(tmp_path, scripted):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    store = RunStore.create(url, "wordmath", 0, {}, run_id="births")
    model = MarketModel(*text_scenario.build(wordmath.Wordmath, wordmath.Config(heldout=2)), MarketConfig(batch=2),
                        PopulationConfig(initial_agents=6, births=False, max_agents=12), seed=0)
    policy, pop = model.policy, model.population
    policy.attach(store, pop)
    library = SkillLibrary(store.engine, "births")
    seeded = len(library.versions())
    assert seeded == len(policy.catalogue.names) and not policy.catalogue.pending  # the pool, written at attach

    parents = np.flatnonzero((policy.role >= 0) & (policy.role != 1))[:4]
    rows = pop.allocate(parents.size)
    pop.ids[rows] = 100 + np.arange(rows.size)
    before = len(policy.versions)
    policy.inherit(rows, parents, np.random.default_rng(3))
    added = library.versions()[seeded:]
    edits = library.edits()
    new_lines = {policy.catalogue.lines[n] for v in policy.versions[before:] for n in v["skills"]}
    assert {v.body for v in added} <= new_lines and len(added) <= rows.size
    assert policy.counts["rewrites"] + policy.counts["malformed_rewrites"] == rows.size
    assert policy.counts["malformed_rewrites"] > 0 and added  # the seeds hit both cases
    for v in added:
        edit = edits[v.edit_id]
        birth = json.loads(edit.diagnosis)
        row = rows[pop.ids[rows].tolist().index(birth["agent"])]
        parent = parents[list(rows).index(row)]
        assert edit.operator == "add" and edit.gate == "ungated" and v.status == "active"
        assert birth["origin"] == "exploit" and birth["parent_agent"] == int(pop.ids[parent])
        assert birth["parent_skills"] == list(policy.skills[parent]) and birth["raw"].startswith(v.body)
        assert policy.versions[birth["version"]]["parent"] == birth["parent_version"] == policy.version[parent]
        assert v.role == policy.roles[policy.role[row]].name and policy.skills[row][-1] == v.name


def test_a_killed_and_resumed_run_ends_with_the_library_and_ledger_of_an_uninterrupted_one(tmp_path, monkeypatch,
                                                                                          scripted):
    exp = load("wordmath", BIRTHS + ["run.checkpoint_every=1"])
    whole = runner.run_experiment(exp, f"sqlite:///{tmp_path / 'a.db'}", progress=False, run_id="whole")

    url = f"sqlite:///{tmp_path / 'b.db'}"
    run_killed(exp, url, monkeypatch)
    engine = make_engine(url)
    with Session(engine) as s:
        checkpointed = decode(s.get(Checkpoint, "cut").state)["policy"]["catalogue"]["marks"]
    assert marks(SkillLibrary(engine, "cut"))[0] > checkpointed[0]  # the cut round wrote births past its checkpoint
    resumed = runner.resume_experiment("cut", url, progress=False)

    assert resumed["ledger_hash"] == whole["ledger_hash"] and resumed["rewrites"] == whole["rewrites"] > 0
    a, b = SkillLibrary(make_engine(f"sqlite:///{tmp_path / 'a.db'}"), "whole"), SkillLibrary(make_engine(url), "cut")
    assert skills_of(a) == skills_of(b)
    births = [json.loads(d) for *_, d in skills_of(a) if json.loads(d)["origin"] != "pool"]
    assert births and {b["origin"] for b in births} <= {"exploit", "explore"}


def run_killed(exp, url: str, monkeypatch, at: int = 3) -> None:
    """Run ``exp`` as "cut" until the process dies in its ``at``-th write (with checkpoint_every=1, that round's:
    its births are in the library, its checkpoint is not); write_rounds is restored afterwards, for the resume."""
    write_rounds, calls = runner.RunStore.write_rounds, []

    def killed(store, *args, **kwargs):
        calls.append(1)
        if len(calls) == at:
            raise RuntimeError("killed")
        return write_rounds(store, *args, **kwargs)

    monkeypatch.setattr(runner.RunStore, "write_rounds", killed)
    with pytest.raises(RuntimeError, match="killed"):
        runner.run_experiment(exp, url, progress=False, run_id="cut")
    monkeypatch.setattr(runner.RunStore, "write_rounds", write_rounds)


def final_population(engine, run_id: str) -> tuple[list[str], dict]:
    """(the names of every skill a live agent holds at the run's end, the policy's state) from its last checkpoint."""
    with Session(engine) as s:
        state = decode(s.get(Checkpoint, run_id).state)
    policy, alive = state["policy"], state["population"]["alive"]
    held = sorted({n for row in np.flatnonzero(alive).tolist() for n in policy["skills"][row]})
    return held, policy


def cli(*args, timeout=900):
    done = subprocess.run([sys.executable, "-m", "scenarios.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_skills_commands_on_a_wordmath_run_and_the_export_re_imports_exactly(tmp_path):
    """A tiny real run with births, then list, show, lineage and export on it; the export, imported into a fresh
    database, lists the same skills; every skill a live agent holds is a current one; each rewrite that made a
    new line is an add edit naming its birth, whose parent agent is the child's parent in the agent table."""
    sets = [x for kv in ["run.episodes=16", "market.batch=8", "wordmath.heldout=4", "population.p_exploit=0.5",
                         "population.p_explore=0.5"] for x in ("--set", kv)]
    summary_ = json.loads(cli("run", "wordmath", "--json", "--out", str(tmp_path), *sets).strip().splitlines()[-1])
    run = summary_["run_id"]
    at = ["--out", str(tmp_path), "--run", run, "--json"]

    listed = json.loads(cli("skills", "list", *at).strip().splitlines()[-1])
    engine = make_engine(f"sqlite:///{tmp_path / 'catallax.db'}")
    held, policy = final_population(engine, run)
    current = {r["name"] for r in listed}
    assert set(held) <= current and all(r["current"] and r["operator"] == "add" for r in listed)
    lines = {name: line for _, line, name in policy["catalogue"]["names"]}
    assert len(current) == len(lines) and current == set(lines)
    for r in listed:
        assert check("name", r["name"]) is None and len(r["description"]) <= MAX_DESCRIPTION

    name = held[0]
    shown = json.loads(cli("skills", "show", name, *at).strip().splitlines()[-1])
    assert shown["skill_md"].startswith(f"---\nname: {name}\n") and shown["skill_md"].endswith(f"\n{lines[name]}\n")

    lineage = json.loads(cli("skills", "lineage", *at).strip().splitlines()[-1])
    origins = {n["id"]: n.get("origin") for n in lineage["nodes"]}
    assert len(origins) == len(current) and set(origins.values()) >= {"pool"}
    with Session(engine) as s:
        agents = {a.agent_id: a for a in s.exec(select(Agent).where(Agent.run_id == run))}
    library = SkillLibrary(engine, run)
    births = [(v, json.loads(e.diagnosis)) for v in library.versions()
              if (e := library.edits()[v.edit_id]) and json.loads(e.diagnosis)["origin"] != "pool"]
    assert summary_["rewrites"] > 0 and births  # this seed's rewrites make new lines
    for v, birth in births:
        assert birth["origin"] in ("exploit", "explore") and origins[v.label] == birth["origin"]
        assert agents[birth["agent"]].parent_id == birth["parent_agent"] and birth["raw"].strip()
        assert set(birth["parent_skills"]) <= set(lines)
    text = cli("skills", "lineage", "--out", str(tmp_path), "--run", run)
    assert f"{births[0][0].label} <- agent {births[0][1]['parent_agent']} ({births[0][1]['origin']})" in text

    folder = tmp_path / "export"
    cli("skills", "export", str(folder), *at)
    for md in folder.glob("*/SKILL.md"):
        assert md.parent.name in current
    fresh = ["--db", f"sqlite:///{tmp_path / 'fresh.db'}", "--json"]
    cli("skills", "import", str(folder), *fresh)
    again = json.loads(cli("skills", "list", *fresh).strip().splitlines()[-1])
    key = lambda r: (r["name"], r["description"], r["role"], r["status"])  # noqa: E731
    assert sorted(map(key, again)) == sorted(map(key, listed))
    imported = SkillLibrary(make_engine(f"sqlite:///{tmp_path / 'fresh.db'}"), "default")
    assert {v.name: v.body for v in imported.versions()} == {v.name: v.body for v in library.versions()}
    assert {v.name: imported.edits()[v.edit_id].diagnosis for v in imported.versions()} == \
        {v.name: library.edits()[v.edit_id].diagnosis for v in library.versions()}
