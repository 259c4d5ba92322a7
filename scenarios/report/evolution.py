"""Skill evolution: the metric over iterations with accepted and rejected edits, and credit per skill.

Two sources, one picture. A *skill library* (skills/library.py) records every
gated edit with the validation score before and after: the line is the score
of the library in use, each candidate a marker, green if the gate accepted it,
red if it turned it down. A *market run* has no gate: the market itself
selects. There the metric is the episode success rate, each birth that
changed its parent's rule is an edit, and the market "accepts" it when the
child earned money (positive profit, grants left out) and "rejects" it when
it did not; credit is the money a rule's carriers earned together.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from market.escape import terminal
from scenarios.report.data import CREDITS, RunData, rule_operator
from scenarios.report.lineage import rule_tree
from scenarios.report.style import figure, short

ACCEPTED, REJECTED, UNGATED = "#2ca02c", "#d62728", "#7f7f7f"


def edit_history(library) -> list[dict]:
    """One row per gate decision (edits applied together share one), in the order written.

    Keys: iteration, edits ("revise rank-strong, ..."), gate, before, after.
    Ungated edits (plain adds, imports) carry no score and are counted, not listed.
    """
    rows: list[dict] = []
    for e in sorted(library.edits().values(), key=lambda e: e.id):
        if e.gate == "ungated":
            continue
        what = f"{e.operator} {e.target}" + (f"+{e.partner}" if e.partner else "")
        last = rows[-1] if rows else None
        if last and last["gate"] == e.gate and (last["before"], last["after"]) == (e.score_before, e.score_after) \
                and last["last_id"] == e.id - 1:
            last["edits"] += f", {what}"
            last["last_id"] = e.id
            continue
        rows.append({"iteration": len(rows) + 1, "edits": what, "gate": e.gate, "before": e.score_before,
                     "after": e.score_after, "last_id": e.id})
    return rows


def _credit_bars(ax, credit: dict[str, float], baseline: dict[str, float] | None, top: int, xlabel: str) -> None:
    """Horizontal bars, most negative at the bottom; beyond 2 x ``top`` skills, the ``top`` best and worst."""
    names = sorted(credit, key=lambda n: credit[n])
    if len(names) > 2 * top:
        names = names[:top] + names[-top:]
    values = [credit[n] for n in names]
    bars = ax.barh(range(len(names)), values, color=[ACCEPTED if v > 0 else REJECTED for v in values], alpha=0.85,
                   label="credit (bottom axis)")
    handles = [bars]
    if baseline:  # another unit (mean reward where present): its own axis, on top
        top_ax = ax.twiny()
        handles.append(top_ax.scatter([baseline.get(n, np.nan) for n in names], range(len(names)), marker="D", s=26,
                                      facecolors="none", edgecolors="black", label="presence baseline (top axis)"))
        top_ax.set_xlabel("presence baseline: mean reward of rollouts using the skill", fontsize=8)
    ax.set_yticks(range(len(names)), [short(n, 44) for n in names], fontsize=7.5)
    ax.axvline(0, color="black", lw=0.6)
    ax.set_xlabel(xlabel)
    ax.legend(handles=handles, fontsize=8, loc="lower right")


def skill_evolution_figure(library, credit: dict[str, float] | None = None, baseline: dict[str, float] | None = None,
                           metric: str = "validation score", top: int = 12) -> Figure:
    """A library's gated edits over iterations, and (if given) credit per skill with the presence baseline."""
    history = edit_history(library)
    fig = figure(12.5, 5)
    ax, ax_c = fig.subplots(1, 2, width_ratios=[1.5, 1]) if credit else (fig.subplots(), None)
    if history:
        it = np.array([h["iteration"] for h in history])
        before = np.array([h["before"] for h in history], dtype=float)
        after = np.array([h["after"] for h in history], dtype=float)
        ok = np.array([h["gate"] == "accepted" for h in history])
        in_use = np.where(ok, after, before)
        ax.step(np.concatenate([[0], it, [it[-1] + 0.5]]), np.concatenate([[before[0]], in_use, [in_use[-1]]]),
                where="post", color="black", lw=1.4, label="library in use")
        ax.scatter(it[ok], after[ok], marker="^", s=60, color=ACCEPTED, zorder=3, label="accepted candidate")
        ax.scatter(it[~ok], after[~ok], marker="X", s=60, color=REJECTED, zorder=3, label="rejected candidate")
        if len(history) <= 20:
            upright = len(history) > 8  # many decisions: vertical labels, one column each, never overlap
            for h, y, kept in zip(history, after, ok):  # accepted above their marker, rejected below: off the line
                ax.annotate(short(h["edits"], 26), (h["iteration"], y), xytext=(0, 8 if kept else -8),
                            textcoords="offset points", fontsize=6.5, ha="center", va="bottom" if kept else "top",
                            rotation=90 if upright else 20)
        if it.size <= 20:
            ax.set_xticks(np.concatenate([[0], it]), ["start"] + [str(i) for i in it])
        ax.set_xlim(-0.3, it[-1] + 0.9)  # room for the last candidate's label
        ax.margins(y=0.25 if len(history) <= 8 else 0.6)
        ax.legend(fontsize=8, loc="best")
    else:
        ax.text(0.5, 0.5, "no gated edits in this library", ha="center", va="center", transform=ax.transAxes)
    ungated = sum(e.gate == "ungated" for e in library.edits().values())
    ax.set_xlabel("iteration (one gate decision)")
    ax.set_ylabel(metric)
    ax.set_title(f"Skill library {library.name!r}: {len(history)} gate decisions"
                 + (f", {ungated} ungated edits" if ungated else ""), fontsize=10)
    if ax_c is not None:
        _credit_bars(ax_c, credit, baseline, top, "credit (group-relative)")
        ax_c.set_title("Credit per skill", fontsize=10)
    return fig


def market_evolution_figure(data: RunData, window: int | None = None, top: int = 10) -> Figure:
    """A market run: success rate over episodes with rule edits marked by the market's verdict; credit per rule."""
    fig = figure(13, 5.5)
    ax, ax_c = fig.subplots(1, 2, width_ratios=[1.5, 1])
    success = np.array([e["success"] for e in sorted(data.episodes, key=lambda e: e["episode"])], dtype=float)
    window = window or max(1, len(success) // 50)
    if success.size:
        rolling = np.convolve(success, np.ones(window) / window, mode="valid")
        ax.plot(np.arange(window, success.size + 1), rolling, color="black", lw=1.2,
                label=f"success rate (mean of {window} episodes)")
    skill = dict(zip(data.ids.tolist(), data.skill))
    profit = data.profit() * CREDITS
    edits = [(int(b), p > 0) for a, par, b, p in zip(data.ids.tolist(), data.parent.tolist(), data.born, profit)
             if par > 0 and rule_operator(skill.get(par), skill.get(a)) != "copy"]
    if edits:
        born = np.array([b for b, _ in edits])
        kept = np.array([k for _, k in edits])
        ax.plot(born[kept], np.full(kept.sum(), -0.06), "|", ms=9, color=ACCEPTED,
                label=f"edited rule that earned money ({kept.sum()})")
        ax.plot(born[~kept], np.full((~kept).sum(), -0.12), "|", ms=9, color=REJECTED,
                label=f"edited rule that did not ({(~kept).sum()})")
    ax.set_ylim(-0.18, 1.05)
    ax.set_xlim(0, data.n_episodes)
    ax.set_xlabel("episode")
    ax.set_ylabel("success rate")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="center right")
    ax.set_title(f"Run {data.run.id} ({terminal(data.run.scenario)}): success and the market's verdict on rule edits",
                 fontsize=10)
    tree, _ = rule_tree(data)
    credit = {rule: d["profit"] for rule, d in tree.nodes(data=True)}
    _credit_bars(ax_c, credit, None, top, "credits earned by the rule's carriers")
    ax_c.get_legend().remove()
    ax_c.set_title(f"Credit per rule (best and worst {top})" if len(credit) > 2 * top else "Credit per rule",
                   fontsize=10)
    return fig


def arms_figure(runs: dict[str, RunData], window: int = 2) -> Figure:
    """Runs of one scenario side by side (an arm per label): the training success per round (rolling over
    ``window`` rounds) from the episode log, and the held-out accuracy before training (where the run measured
    it: ``heldout_accuracy_initial``) and at the end (``heldout_accuracy``) as markers at the ends."""
    fig = figure(9, 4.5)
    ax = fig.subplots()
    for i, (label, data) in enumerate(runs.items()):
        colour = f"C{i}"
        batch = data.config.get("market", {}).get("batch", 1)
        success = np.array([e["success"] for e in sorted(data.episodes, key=lambda e: e["episode"])], dtype=float)
        rounds = success[: success.size // batch * batch].reshape(-1, batch).mean(axis=1)
        rolling = np.convolve(rounds, np.ones(window) / window, mode="valid") if rounds.size >= window else rounds
        ax.plot(np.arange(rolling.size) + window, rolling, color=colour, label=f"{label}: training success")
        final, initial = data.summary.get("heldout_accuracy"), data.summary.get("heldout_accuracy_initial")
        if initial is not None:
            ax.scatter([0], [initial], color=colour, marker="o", facecolors="none", s=50)
        if final is not None:
            ax.scatter([rounds.size], [final], color=colour, marker="o", s=50)
    ax.set_xlabel("round (open marker: held-out before training; filled: held-out at the end)")
    ax.set_ylabel("success rate")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8, loc="upper left")
    return fig
