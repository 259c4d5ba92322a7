"""Births (scenarios/recsys/births.py): new skills bred from the library's clauses, admitted only by the gate, in the
lineage; and each planted skill's measured harm (scenarios/recsys/harm.py).

The loop's evaluator here is a known truth (a library scores by how many rank terms it holds, or the same whatever
it holds), so the gate must admit the births in one case and refuse every one in the other; the writer, the loop,
the gate and the lineage are the real ones."""

import numpy as np
import pytest
from sqlalchemy import create_engine

from scenarios.recsys import births, harm, ops, rules, seeds
from scenarios.run.config import load
from skills import SkillLibrary, SkillsConfig
from skills.loop import EditLoop, World
from tests.scenarios.recsys_small import small_world

AGENTS = {"recall": "recall-agent", "rank": "rank-agent", "rerank": "rerank-agent"}
START = (("recall-ease", "recall", "always -> ease(weight=1)"), ("rank-ease", "rank", "always -> ease(weight=3)"),
         ("rank-mf", "rank", "always -> mf(weight=1)"), ("rank-surprise", "rank", "novelty >= 30 -> noise(weight=6)"),
         ("rerank-fresh", "rerank", "always -> boost_new(n=2, days=30)"))
MEDIANS = {"history": 20, "genres": 3, "mainstream": 40, "novelty": 10}


def library() -> SkillLibrary:
    lib = SkillLibrary(create_engine("sqlite://"), "births")
    for name, role, rule in START:
        lib.add(name, f"{name}.", rules.body(rules.parse(rule, role), role), rule=rule, role=role)
    return lib


def loop(lib: SkillLibrary, evaluate, count: int = 2) -> tuple[EditLoop, births.Births]:
    bred = births.Births(lib, count, MEDIANS, AGENTS)
    rng = np.random.default_rng(0)
    n = 40
    world = World(lambda skills, q, s: evaluate(skills) + np.linspace(-0.01, 0.01, n), np.arange(n),
                  np.zeros(n, dtype=np.int64), write=lambda d, trace, r: bred.write(d),
                  propose=lambda done: bred.propose(rng))
    return EditLoop(lib, SkillsConfig(credit="grse"), world), bred


def test_a_child_copies_no_harm_operator_and_a_weighted_one_is_unconditional_at_a_share_of_its_role():
    lib = library()
    pool = [(s, c) for s in lib.current() for c in births._breedable(s)]
    assert "noise" not in {c.operator for _, c in pool}  # the planted operator is never bred
    rng, totals = np.random.default_rng(1), {"recall": 1.0, "rank": 4.0}
    kinds = set()
    for _ in range(60):
        kind, parents, clause = births.child(pool, rng, MEDIANS, totals)
        role = parents[0].role
        kinds.add(kind)
        rules.parse(clause.text(), role)  # a valid rule of its role
        assert all(p.role == role for p in parents) and len(parents) == (2 if kind == "recombine" else 1)
        if role in births.WEIGHTED:
            assert clause.condition == "always"
            assert min(abs(clause.param("weight") / totals[role] - x) for x in births.SHARES) < 1e-9
    assert kinds == {"mutate", "recombine"}


def test_births_the_gate_admits_are_in_the_lineage_with_their_parents_and_carry_their_gain():
    lib = library()
    edit_loop, _ = loop(lib, lambda skills: 0.2 + 0.01 * sum(s.role == "rank" for s in skills))
    for _ in range(3):
        edit_loop.run(np.random.default_rng(0), budget=1)
    born = births.born_names(lib) & {s.name for s in lib.current()}
    assert any(n.startswith("rank-born-") for n in born)  # a rank birth raises the score: admitted
    g = births.lineage(lib)
    for name in born:
        parents = [p for p in g.predecessors(f"{name}@1") if g.edges[p, f"{name}@1"]["operator"] == births.BIRTH]
        assert parents and all(p.partition("@")[0] in {n for n, *_ in START} | born for p in parents)
    carried = births.carried(lib, lambda skills: 0.2 + 0.01 * sum(s.role == "rank" for s in skills) * np.ones(5))
    assert {c["skill"].partition("@")[0] for c in carried} == born
    assert all(c["gain"] == pytest.approx(0.01 if c["skill"].startswith("rank") else 0.0) for c in carried)


def test_births_a_flat_validation_set_cannot_tell_are_refused_and_not_proposed_again():
    lib = library()
    edit_loop, bred = loop(lib, lambda skills: 0.2, count=3)
    for _ in range(4):
        done = edit_loop.run(np.random.default_rng(0), budget=1)
        assert done.accepted == 0
    refused = [v for v in lib.versions() if v.status == "rejected"]
    assert refused and not births.born_names(lib) & {s.name for s in lib.current()}
    assert len({(v.role, v.rule) for v in refused}) == len(refused)  # no refused rule drawn twice


def test_each_planted_skill_has_a_measured_harm_its_interval_and_the_gates_power():
    world = small_world(0)
    start = seeds.start("best_baseline", world.signals.tuned.best)
    planted = seeds.harmful("any_data", world.pipeline.features)
    lib = SkillLibrary(create_engine("sqlite://"), "harm")
    seeds.seed(lib, 3, start, planted)
    rows = harm.measure(world, lib.current(), seeds.planted(3, "any_data") + ["not-held"], 0.9)
    assert [r["skill"] for r in rows] == seeds.planted(3, "any_data")  # a name the library does not hold is skipped
    for r in rows:
        assert r["low"] <= r["harm"] <= r["high"] and 0 <= r["power"] <= 1
        assert r["detectable"] == (r["power"] >= harm.DETECTABLE)
    assert any(r["detectable"] for r in rows)  # ranking by noise / pinning consumed items costs at this size


def test_the_births_key_is_validated():
    assert load("recsys", ["recsys.births=0"]).scenario.births == 0
    with pytest.raises(Exception, match="births"):
        load("recsys", ["recsys.births=-1"])
    assert ops.CATALOGUE["rank"]["noise"]  # the operator the first test checks is never bred exists
