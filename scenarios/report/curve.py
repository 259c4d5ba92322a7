"""Learning curves: held-out success over training episodes, one line per run (an arm and seed).

A run with ``run.eval_every`` stores its curve's points in ``heldout_eval`` (scenarios/run/curve.py): the frozen
market's success on the scenario's fixed held-out problems, the same problems for every arm and seed, so the lines
of runs of one scenario are paired. Each line is labelled by its run and what its arm sets (bids, learned actions,
skill credit), read from the run's stored config.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from sqlalchemy import inspect, select

from market.reading import connected
from market.store import HeldoutEval, Run, StoreError, stored_json
from scenarios.report.style import LINEAGE_PALETTE, figure, short


def load_curve(conn, run_id: str) -> list[dict]:
    """The run's stored points, in episode order: {round, episode, success, reward, problems, seconds}; none for a
    run without ``run.eval_every`` (or a database from before the table)."""
    with connected(conn) as c:
        if not inspect(c).has_table(HeldoutEval.__tablename__):
            return []
        t = HeldoutEval.__table__.c
        rows = c.execute(select(t.round, t.episode, t.success, t.reward, t.problems, t.seconds)
                         .where(t.run_id == run_id).order_by(t.episode)).mappings().all()
    out = []
    for row in rows:
        if not all(isinstance(row[k], int) for k in ("round", "episode", "problems")) or not all(
                isinstance(row[k], (int, float)) and np.isfinite(row[k]) for k in ("success", "reward", "seconds")):
            raise StoreError(f"heldout_eval of run {run_id}: a row that is not numbers ({dict(row)!r:.80})")
        out.append(dict(row))
    return out


def arm_label(run_id: str, seed: int, config: dict) -> str:
    """``RUN seed S: bids B, actions A, credit C`` from the run's stored config (the keys that tell the arms apart)."""
    market, agents, skills = (config.get(k) if isinstance(config.get(k), dict) else {} for k in ("market", "agents", "skills"))
    parts = [f"bids {market.get('bid_scheme', '?')}"]
    if agents.get("actions") not in (None, "rule"):
        parts.append(f"actions {agents['actions']}")
    if skills.get("credit") not in (None, "none"):
        parts.append(f"credit {skills['credit']}")
    return short(f"{run_id} seed {seed}: {', '.join(parts)}", 64)


def run_curves(conn, run_ids: list[str]) -> list[tuple[str, list[dict]]]:
    """(label, points) of each run that has a curve, in the order given; KeyError for a run the database lacks."""
    out = []
    with connected(conn) as c:
        for run_id in run_ids:
            row = c.execute(select(Run.seed, Run.config).where(Run.id == run_id)).first()
            if row is None:
                raise KeyError(f"run {run_id}: not found")
            points = load_curve(c, run_id)
            if points:
                config = stored_json(row.config, f"run.config of run {run_id}")
                out.append((arm_label(run_id, row.seed, config if isinstance(config, dict) else {}), points))
    return out


def curve_figure(curves: list[tuple[str, list[dict]]]) -> Figure:
    """Held-out success against training episodes, one line (with markers at the points) per (label, points)."""
    fig = figure(7.5, 4.2)
    ax = fig.add_subplot()
    for i, (label, points) in enumerate(curves):
        x = [p["episode"] for p in points]
        y = [p["success"] for p in points]
        ax.plot(x, y, marker="o", ms=3.5, lw=1.6, color=LINEAGE_PALETTE[i % len(LINEAGE_PALETTE)], label=label)
    problems = sorted({p["problems"] for _, points in curves for p in points})
    ax.set_xlabel("training episodes")
    ax.set_ylabel(f"held-out success ({'/'.join(map(str, problems))} problems, greedy)")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    ax.set_title("Learning curves: the frozen market on the fixed held-out problems")
    return fig


def curve_table(curves: list[tuple[str, list[dict]]]) -> list[str]:
    """Markdown: per run, its points' count, the first and last success and the change."""
    lines = ["| run | points | first | last | change |", "|---|---|---|---|---|"]
    for label, points in curves:
        first, last, shown = points[0]["success"], points[-1]["success"], label.replace("`", "'")
        lines.append(f"| `{shown}` | {len(points)} | {first:.3f} | {last:.3f} | {last - first:+.3f} |")
    return lines
