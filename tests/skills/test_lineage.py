"""Lineage graphs from the database: skill versions (with a merge: two parents) and a run's agents."""

import pytest
from sqlmodel import Session, select

from market.store import Agent, make_engine
from scenarios.run.config import load
from scenarios.run.runner import run_experiment
from skills import ancestors, descendants, edit_path, skill_graph
from skills.lineage import agent_graph
from tests.skills.team import evolve


def test_queries_on_a_library_with_a_merge(library):
    evolve(library)
    g = skill_graph(library)
    merged = "recall-broad@2"
    assert sorted(g.predecessors(merged)) == ["recall-broad@1", "recall-sloppy@1"]
    assert {g.edges[p, merged]["merge"] for p in g.predecessors(merged)} == {False, True}
    assert g.edges["recall-sloppy@1", merged] == {"operator": "merge", "merge": True}
    assert sorted(ancestors(g, merged)) == ["recall-broad@1", "recall-sloppy@1"]
    assert descendants(g, "recall-sloppy@1") == [merged]
    assert edit_path(g, "recall-sloppy@1", merged) == [("recall-sloppy@1", merged, "merge")]

    assert descendants(g, "rank-strong@1") == ["rank-strong@2", "rank-strong@3"]
    assert edit_path(g, "rank-strong@1", "rank-strong@3") == [
        ("rank-strong@1", "rank-strong@2", "revise"), ("rank-strong@2", "rank-strong@3", "revise")]
    assert dict(g.nodes["rank-strong@3"]) == {"name": "rank-strong", "version": 3, "role": "rank", "status": "rejected",
                                                "current": False, "operator": "revise", "gate": "rejected"}
    assert g.nodes["rank-harmful@2"]["status"] == "pruned" and not g.nodes["rank-harmful@2"]["current"]
    assert {n for n, d in g.nodes(data=True) if d["current"]} == {v.label for v in library.current()}
    with pytest.raises(ValueError, match="recall-broad@1 does not descend from rank-strong@1"):
        edit_path(g, "rank-strong@1", "recall-broad@1")
    with pytest.raises(KeyError, match="ghost@1: not in the lineage"):
        ancestors(g, "ghost@1")


def test_agent_lineage_of_a_real_run(tmp_path):
    url = f"sqlite:///{tmp_path / 'run.db'}"
    summary = run_experiment(load("relay", ["run.episodes=40", "population.p_exploit=0.5"]), url, progress=False)
    engine = make_engine(url)
    g = agent_graph(engine, summary["run_id"])
    with Session(engine) as s:
        agents = s.exec(select(Agent).where(Agent.run_id == summary["run_id"])).all()
    children = {(a.parent_id, a.agent_id) for a in agents if a.parent_id is not None and a.parent_id >= 0}
    assert children and set(g.edges) == children
    assert set(g.nodes) == {a.agent_id for a in agents}
    for parent, child in g.edges:
        assert g.nodes[parent]["born"] <= g.nodes[child]["born"]
    child = max(children)[1]
    lineage = ancestors(g, child)
    assert lineage and g.in_degree(lineage[0]) == 0  # every line goes back to a random newcomer
    assert child in descendants(g, lineage[0])
