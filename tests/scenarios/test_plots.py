"""scenarios/report: the series rebuilt from the tables, the figures, and ``catallax report``.

One small relay run (real, stored in SQLite) feeds every test: the replayed
balances are checked against the ledger's own replay and the stored final
balances, the figures for labels, legends and text that collides.
"""

import itertools
import json

import networkx as nx
import numpy as np
import pytest
from matplotlib.text import Text
from sqlalchemy import inspect
from sqlmodel import Session, select

from market import gini, replay
from market.store import Agent, make_engine
from scenarios.cli.main import main
from scenarios.run.config import load
from scenarios.report import (agent_tree_figure, edit_history, flows, flows_figure, load_run, market_evolution_figure,
                             rule_tree, rule_tree_figure, skill_evolution_figure, skill_tree_figure, timeline,
                             wealth_figure)
from scenarios.report.data import CREDITS, rule_operator
from scenarios.run.runner import run_experiment
from skills import Edit, GateResult, SkillLibrary, skill_graph


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(db url, summary) of a 200-episode relay run."""
    url = f"sqlite:///{tmp_path_factory.mktemp('plots') / 'catallax.db'}"
    summary = run_experiment(load("relay", ["run.episodes=200"], seed=1), url, progress=False)
    return url, summary


@pytest.fixture(scope="module")
def data(run):
    return load_run(make_engine(run[0]), run[1]["run_id"])


def test_timeline_ends_at_the_stored_final_balances(run, data):
    tl = timeline(data, points=50)
    with Session(make_engine(run[0])) as s:
        stored = {a.agent_id: a for a in s.exec(select(Agent).where(Agent.run_id == data.run.id))}
    for i, agent_id in enumerate(data.ids.tolist()):
        if stored[agent_id].died_episode is None:
            assert tl.wealth[-1, i] == pytest.approx(stored[agent_id].final_wealth * CREDITS)
        else:
            assert np.isnan(tl.wealth[-1, i])
    assert tl.population[-1] == run[1]["population"]
    assert tl.house[-1] == pytest.approx(-np.nansum(tl.wealth[-1]))  # money is only moved
    assert tl.births.sum() == (data.born > 0).sum() and tl.deaths.sum() == (data.died >= 0).sum()


def test_every_bin_equals_the_ledger_replayed_up_to_it(data):
    tl = timeline(data, points=7)
    for t, last_episode in enumerate(tl.episode - 1):
        balances = replay(data.transfers[data.transfers["episode"] <= last_episode])
        for i in np.flatnonzero(tl.alive[t]):
            assert tl.wealth[t, i] == pytest.approx(balances.get(int(data.ids[i]), 0) * CREDITS)
        assert tl.gini()[t] == pytest.approx(gini(tl.wealth[t, tl.alive[t]]))


def test_lineage_roots_are_the_graphs_sources(data):
    g = data.agents_graph
    for agent_id, root in zip(data.ids.tolist(), data.roots().tolist()):
        sources = {a for a in nx.ancestors(g, agent_id) | {agent_id} if g.in_degree(a) == 0}
        assert sources == {root}


def test_flows_add_up_to_the_ledger(data):
    groups, matrix, by_reason = flows(data, top=3)
    total = data.transfers["amount"].sum() * CREDITS
    assert matrix.sum() == pytest.approx(total) and sum(by_reason.values()) == pytest.approx(total)
    assert groups[0] == "house" and groups[-1] == "other" and len(groups) == 5
    house_paid = data.transfers["amount"][data.transfers["src"] == 0].sum() * CREDITS
    assert matrix[0].sum() == pytest.approx(house_paid)


def test_rule_tree_counts_every_agent_once(data):
    tree, first = rule_tree(data)
    assert set(tree) == set(data.skill)
    assert sum(d["carriers"] for _, d in tree.nodes(data=True)) == data.ids.size
    assert sum(d["profit"] for _, d in tree.nodes(data=True)) == pytest.approx(data.profit().sum() * CREDITS)
    for u, v in tree.edges:  # a rule's parent appeared first
        assert first[u] < first[v]
    assert rule_operator("stage == 1 -> advance_1", "stage == 2 -> advance_1") == "condition"
    assert rule_operator("stage == 1 -> advance_1", "stage == 1 -> noop") == "action"
    assert rule_operator("recall: knn", "recall: popular") == "edit"


def drawn_texts(fig) -> list[Text]:
    """Every text the figure draws: titles, labels, legends, annotations, and the tick labels in view
    (an axis keeps spare ticks outside its view; they are not drawn)."""
    fig.canvas.draw()
    axes = [a for ax in fig.axes for a in (ax.xaxis, ax.yaxis)]
    pooled = {id(t) for a in axes for tick in a.get_major_ticks() + a.get_minor_ticks()
              for t in (tick.label1, tick.label2)}
    shown = [t for a in axes if a.get_visible() and a.axes.get_visible()  # a twin hides the axis it shares
             for tick in a._update_ticks() for t in (tick.label1, tick.label2)]
    texts = [t for t in fig.findobj(Text) if id(t) not in pooled] + shown
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose boxes overlap."""
    renderer = fig.canvas.get_renderer()
    boxes = [(t, t.get_window_extent(renderer)) for t in drawn_texts(fig)]
    return [(a.get_text(), b.get_text()) for (a, ba), (b, bb) in itertools.combinations(boxes, 2)
            if ba.overlaps(bb) and ba.width and bb.width]


def check(fig, min_axes: int = 1) -> None:
    data_axes = [ax for ax in fig.axes if ax.has_data() and ax.get_label() != "<colorbar>"]
    assert len(data_axes) >= min_axes
    for ax in data_axes:  # stacked panels share one x label; an axis without y ticks needs no y label
        assert any(a.get_xlabel() for a in ax.get_shared_x_axes().get_siblings(ax)), ax.get_title()
        named = any(a.get_ylabel() for a in ax.get_shared_y_axes().get_siblings(ax))
        categories = any(t.get_text() and not t.get_text().lstrip("−-").replace(".", "").isdigit()
                         for t in ax.get_yticklabels())  # bars named by their tick labels
        assert named or categories or not ax.get_yticks().size, ax.get_title()
    assert any(ax.get_legend() or ax.get_label() == "<colorbar>" for ax in fig.axes), "no legend or colour bar"
    assert not overlaps(fig), overlaps(fig)


def test_wealth_and_flow_figures(data):
    check(wealth_figure(data), 4)
    check(flows_figure(data), 2)


def test_lineage_figures(data):
    fig = agent_tree_figure(data)
    check(fig)
    ax = fig.axes[0]
    drawn = sum(len(c.get_offsets()) for c in ax.collections if hasattr(c, "get_sizes") and len(c.get_sizes()))
    assert 0 < drawn <= data.ids.size
    check(rule_tree_figure(data))
    check(market_evolution_figure(data), 2)


def evolved_library() -> SkillLibrary:
    library = SkillLibrary(make_engine("sqlite://"), "team")
    for name in ("recall-a", "recall-b", "rank-a"):
        library.add(name, f"Skill {name}.", f"Do {name}.\n", role=name.split("-")[0])
    library.apply([Edit("prune", "recall-b")], gate=GateResult(True, 0.40, 0.45, np.zeros(1)))
    library.apply([Edit("revise", "rank-a", body="Do it better.\n")], gate=GateResult(False, 0.45, 0.30, np.zeros(1)))
    library.apply([Edit("merge", "recall-a", partner="rank-a", name="blend")],
                  gate=GateResult(True, 0.45, 0.50, np.zeros(1)))
    return library


def test_skill_figures_mark_every_gate_decision():
    library = evolved_library()
    history = edit_history(library)
    assert [(h["gate"], h["before"], h["after"]) for h in history] == [
        ("accepted", 0.40, 0.45), ("rejected", 0.45, 0.30), ("accepted", 0.45, 0.50)]
    credit = {"recall-a@1": 0.5, "rank-a@1": -0.2, "recall-b@1": 0.1}
    fig = skill_evolution_figure(library, credit, {"recall-a@1": 0.6, "rank-a@1": 0.7})
    check(fig, 2)
    markers = {c.get_label(): len(c.get_offsets()) for c in fig.axes[0].collections if c.get_label()}
    assert markers == {"accepted candidate": 2, "rejected candidate": 1}
    g = skill_graph(library)
    fig = skill_tree_figure(g, credit)
    check(fig)
    merge_edges = [line for line in fig.axes[0].lines if line.get_linestyle() == "--"]
    assert len(merge_edges) == 1  # the merge's second parent


def test_report_command_writes_figures_and_summary(run, tmp_path):
    url, summary = run
    assert main(["report", summary["run_id"], "--db", url, "--out", str(tmp_path), "--json"]) == 0
    folder = tmp_path / f"report-{summary['run_id']}"
    text = (folder / "summary.md").read_text()
    assert "**Ledger.** ok" in text and summary["ledger_hash"] in text
    for name in ("wealth", "flows", "agent_lineage", "rule_lineage", "evolution"):
        png = (folder / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
        assert f"]({name}.png)" in text
    assert not inspect(make_engine(url)).has_table("skill")  # reading a run writes nothing


def test_report_of_an_unknown_run_is_one_line_and_exit_2(run, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["report", "nosuchrun", "--db", run[0], "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "run nosuchrun: not found" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
    with pytest.raises(SystemExit) as exc:
        main(["report", "x", "--out", str(tmp_path / "nowhere")])
    assert exc.value.code == 2


def test_report_reads_a_library_and_credit_stored_with_the_run(tmp_path):
    """A run whose summary carries credit and whose library is named by its id gets the skill figures too."""
    url = f"sqlite:///{tmp_path / 'catallax.db'}"
    summary = run_experiment(load("relay", ["run.episodes=20"], seed=0), url, progress=False)
    engine = make_engine(url)
    library = SkillLibrary(engine, summary["run_id"])
    library.add("solo", "One skill.", "Do it.\n")
    library.apply([Edit("revise", "solo", body="Do it twice.\n")], gate=GateResult(True, 0.1, 0.2, np.zeros(1)))
    from skills.editor import Malformed

    library.record_failures([Malformed("solo@1", '{"failure": "wrong `kind`"}', "failure 'wrong' is not one of ...")])
    verdicts = {"diagnoses_llm": 3, "diagnoses_fallback": 1, "diagnoses_malformed": 1}
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE run SET summary = ? WHERE id = ?",
                             (json.dumps({**summary, "credit": {"solo": 0.3}, **verdicts}), summary["run_id"]))
    from scenarios.report import write_report

    written = write_report(engine, summary["run_id"], tmp_path / "report")
    assert {"skill_lineage", "skill_evolution"} <= written["figures"].keys()
    text = written["summary"].read_text()
    assert "2 versions, 1 current, 0 rejected" in text
    assert ("**Diagnoses.** 3 by the language model, 1 by the rule fallback (verdicts parsed: 75%); 1 unusable verdict "
            "kept in `skill_diagnosis_failure` (the first, on `solo@1`: failure 'wrong' is not one of ...; it wrote "
            "`{\"failure\": \"wrong 'kind'\"}`).") in text
    assert "the run's summary counts" not in text
    from scenarios.report.summary import diagnoses

    assert "**the run's summary counts 2**" in diagnoses({**verdicts, "diagnoses_malformed": 2}, library)[0]
    assert diagnoses({}, SkillLibrary(engine, "no-llm")) == []


def test_report_on_a_blocks_run(tmp_path):
    """Blocks' rule agents get the same report: every figure drawn, labelled, nothing overlapping."""
    url = f"sqlite:///{tmp_path / 'catallax.db'}"
    summary = run_experiment(load("blocks", ["run.episodes=400", "blocks.heldout_count=5"], seed=0), url, progress=False)
    assert main(["report", summary["run_id"], "--db", url, "--out", str(tmp_path)]) == 0
    folder = tmp_path / f"report-{summary['run_id']}"
    assert "**Ledger.** ok" in (folder / "summary.md").read_text()
    assert {p.stem for p in folder.glob("*.png")} == {"wealth", "flows", "agent_lineage", "rule_lineage", "evolution"}
    data = load_run(make_engine(url), summary["run_id"])
    check(wealth_figure(data), 4)
    check(rule_tree_figure(data))
    check(market_evolution_figure(data), 2)
