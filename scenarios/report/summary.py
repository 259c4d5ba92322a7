"""``catallax report``: every figure of one run as PNG, plus a short Markdown summary that embeds them.

Generic by construction: it reads only the run's tables (``run``, ``agent``,
``transfer``, ``episode``, and the ``skill`` tables when the run has a library
named by its id), so it works on any scenario's runs. A scenario that computes
skill credit can leave it in its summary as ``"credit": {skill: value}``
(and ``"credit_baseline"`` for the presence baseline) and it is drawn too.
Opening the report never writes to the database.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from sqlalchemy import inspect, select as sa_select

from market.escape import markdown as md, markdown_code as code
from market.store import Agent, connected, snapshot
from scenarios.report.curve import curve_figure, curve_table, run_curves
from scenarios.report.data import CREDITS, flows, load_run, timeline
from scenarios.report.evolution import market_evolution_figure, skill_evolution_figure
from scenarios.report.lineage import agent_tree_figure, rule_tree_figure, skill_tree_figure
from scenarios.report.style import short
from scenarios.report.wealth import flows_figure, wealth_figure
from skills import files
from skills.library import SkillLibrary
from skills.lineage import skill_graph

DPI = 110
CAPTIONS = {
    "wealth": "Per-agent wealth by lineage, the distribution, Gini, births/deaths and population",
    "flows": "Who pays whom, by role, and transfers by reason",
    "agent_lineage": "Agent family tree (node area: peak wealth)",
    "rule_lineage": "Rule versions (node area: carriers; colour: credits earned)",
    "evolution": "Success over episodes with rule edits marked; credit per rule",
    "skill_lineage": "Skill-version tree of the run's library",
    "skill_evolution": "Validation score over gate decisions; credit per skill",
    "learning_curve": "Held-out success over training episodes (the frozen market, greedy; one line per run)",
}


def run_library(engine, run_id: str) -> SkillLibrary | None:
    """The run's skill library (named by the run id), or None; never creates the skill tables."""
    if not inspect(engine).has_table("skill"):
        return None
    library = SkillLibrary(engine, run_id)  # its tables exist, so the constructor creates nothing
    return library if library.versions() else None


def write_report(engine, run_id: str, out: Path, compare: list[str] = ()) -> dict:
    """Write ``out/*.png`` and ``out/summary.md``; return {"summary": path, "figures": {name: path}}.

    ``compare``: other runs of the database whose learning curves (``run.eval_every``) the learning-curve figure
    draws beside this run's, one line each (arms and seeds of one scenario share its held-out problems).

    Raises KeyError if the database has no run ``run_id``. Everything is read in one transaction
    (:func:`market.store.snapshot`): a run being written is reported as of its last committed round.
    """
    with snapshot(engine) as conn:
        return _write(conn, run_id, out, compare)


def _write(engine, run_id: str, out: Path, compare: list[str] = ()) -> dict:
    data = load_run(engine, run_id)
    curves = run_curves(engine, [run_id, *[r for r in compare if r != run_id]])
    files.make_folders(out.parent, out / "summary.md")  # a symlink planted as the report's folder is not followed
    tl = timeline(data)
    figures, notes = {}, []
    if data.transfers.size:  # a run where no money moved (a team without a market) has no wealth to plot
        figures["wealth"] = wealth_figure(data, tl)
        figures["flows"] = flows_figure(data)
    else:
        notes.append("No money moved in this run (no transfers): no wealth or flow figures.")
    if (data.parent > 0).any():  # lineages need births from parents
        figures["agent_lineage"] = agent_tree_figure(data, tl)
        figures["rule_lineage"] = rule_tree_figure(data)
        figures["evolution"] = market_evolution_figure(data)
    else:
        notes.append("No agent was born from a parent: no agent or rule lineage.")
    library = run_library(engine, run_id)
    credit = data.summary.get("credit") if isinstance(data.summary.get("credit"), dict) else None
    if library is not None:
        figures["skill_lineage"] = skill_tree_figure(skill_graph(library), credit, title=f"Skill library {run_id!r}")
        figures["skill_evolution"] = skill_evolution_figure(library, credit, data.summary.get("credit_baseline"))
    if curves:
        figures["learning_curve"] = curve_figure(curves)
    for stale in CAPTIONS.keys() - figures.keys():  # left over from an earlier report of this run (a symlink
        (out / f"{stale}.png").unlink(missing_ok=True)  # there: the link goes, its target stays)
    paths = {}
    for name, fig in figures.items():
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=DPI, bbox_inches="tight")  # nothing clipped at the edges (a colour bar)
        paths[name] = files.write(out, out / f"{name}.png", png.getvalue())  # replaces a planted symlink, unfollowed
    summary = files.write(out, out / "summary.md", markdown(engine, data, tl, paths, library, notes, curves))
    return {"summary": summary, "figures": paths}


def _ledger_check(engine, data) -> str:
    """The transfer log replayed from zero against the final balances the run stored in ``agent``."""
    with connected(engine) as conn:
        stored = dict(conn.execute(sa_select(Agent.agent_id, Agent.final_wealth)
                                   .where(Agent.run_id == data.run.id)).all())
    replayed = dict(zip(data.ids.tolist(), data.final_balance().tolist()))
    if any(v is None for v in stored.values()):
        return "not checked: the run has not finished (no final balances stored)"
    bad = [a for a, w in stored.items() if replayed.get(a) != w]
    total = int(data.transfers["amount"].sum()) if data.transfers.size else 0
    if bad:
        return f"**MISMATCH** for {len(bad)} of {len(stored)} agents (first: #{bad[0]})"
    return (f"ok: replaying {_count(data.transfers.size, 'transfer')} ({total * CREDITS:,.2f} credits moved) gives "
            f"the stored final balance of {_count(len(stored), 'agent')}")


def diagnoses(summary: dict, library) -> list[str]:
    """The edit passes' diagnoses, where a language model gave them: how many verdicts it gave and the rule
    diagnoser answered in place of (the verdict parse rate), and the unusable verdicts the library keeps with their
    raw text (``skill_diagnosis_failure``): how many, and the first one's error, so a reader sees why it failed. A
    count that differs from the run summary's ``diagnoses_malformed`` is said."""
    failures = library.diagnosis_failures()
    if "diagnoses_llm" not in summary and not failures:
        return []
    by, fallback = int(summary.get("diagnoses_llm", 0)), int(summary.get("diagnoses_fallback", 0))
    rate = f" (verdicts parsed: {by / (by + fallback):.0%})" if by + fallback else ""
    text = f"**Diagnoses.** {by} by the language model, {fallback} by the rule fallback{rate}; "
    text += f"{_count(len(failures), 'unusable verdict')} kept in `skill_diagnosis_failure`"
    if failures:
        first = failures[0]
        text += f" (the first, on {code(first.skill)}: {md(first.error)}; it wrote {code(short(first.output, 60))})"
    if "diagnoses_malformed" in summary and summary["diagnoses_malformed"] != len(failures):
        text += f"; **the run's summary counts {md(summary['diagnoses_malformed'])}**"
    return [text + ".", ""]


def _count(n: int, noun: str) -> str:
    """``1 episode``, ``0 episodes``: the report is read by people."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def markdown(engine, data, tl, paths: dict[str, Path], library, notes: list[str] = (), curves=()) -> str:
    run, s = data.run, data.summary
    lines = [f"# Run {code(run.id)}: {md(run.scenario)}, seed {md(run.seed)}", "",  # every string a database
             f"Status **{md(run.status)}**, {_count(len(data.episodes), 'episode')} run, "
             f"started {run.started_at:%Y-%m-%d %H:%M} UTC.", ""]
    scalars = {k: v for k, v in s.items() if isinstance(v, (int, float, str, bool)) and k not in ("run_id", "scenario", "seed")}
    if scalars:
        lines += ["| metric | value |", "|---|---|"]
        lines += [f"| {md(k)} | {round(v, 4) if isinstance(v, float) else md(v)} |" for k, v in scalars.items()]
        lines.append("")
    lines += [f"**Ledger.** {_ledger_check(engine, data)}.", ""]
    final = np.nan_to_num(tl.wealth[-1])
    alive = tl.alive[-1]
    born_later = int((data.born > 0).sum())
    died = int((data.died >= 0).sum())
    lines += [f"**Population.** {_count(int((data.born == 0).sum()), 'initial agent')}, {born_later} born later "
              f"({int((data.parent > 0).sum())} with a parent), {died} died; {int(alive.sum())} alive at the end "
              f"(peak {int(tl.population.max())}). Gini of the live agents' wealth at the end: {tl.gini()[-1]:.3f}.", ""]
    roots = data.roots()
    if data.ids.size:
        title = ("**Richest lineages at the end** (a lineage is a random newcomer and its descendants):"
                 if (data.parent > 0).any() else "**Richest agents at the end:**")
        lines += [title, "",
                  "| root | agents | alive | wealth now | root's rule |", "|---|---|---|---|---|"]
        by_root = {}
        for r, w, a in zip(roots.tolist(), final.tolist(), alive.tolist()):
            n, live, total = by_root.get(r, (0, 0, 0.0))
            by_root[r] = (n + 1, live + a, total + w)
        skill = dict(zip(data.ids.tolist(), data.skill))
        for r in sorted(by_root, key=lambda r: -by_root[r][2])[:5]:
            n, live, total = by_root[r]
            rule = code(short(skill.get(r), 48)) if skill.get(r) else "-"
            lines.append(f"| #{r} | {n} | {live} | {total:.3f} | {rule} |")
        lines.append("")
    groups, matrix, by_reason = flows(data)
    if by_reason:
        lines += ["**Money moved, by ledger reason** (credits): "
                  + ", ".join(f"{md(k)} {v:,.2f}" for k, v in sorted(by_reason.items(), key=lambda kv: -kv[1])) + ".", ""]
    if library is not None:
        versions = library.versions()
        lines += [f"**Skill library** {code(library.name)}: {len(versions)} versions, "
                  f"{len(library.current())} current, {sum(v.status == 'rejected' for v in versions)} rejected.", ""]
        lines += diagnoses(s, library)
        if "skill_evolution" in paths and not isinstance(data.summary.get("credit"), dict):
            lines += ["The run's summary has no `credit` (skill -> value): the skill figures show no credit.", ""]
    else:
        lines += ["No skill library is stored under this run's id."
                  + (" The rule figures show the agents' rules as versions." if "rule_lineage" in paths else ""), ""]
    lines += [f"*{note}*" for note in notes] + ([""] if notes else [])
    if curves:
        lines += ["**Learning curves** (held-out success, the frozen market on the fixed held-out problems):", ""]
        lines += curve_table(curves) + [""]
    lines += ["## Figures", ""]
    for name, path in paths.items():
        lines += [f"### {CAPTIONS.get(name, name)}", "", f"![{name}]({path.name})", ""]
    return "\n".join(lines)
