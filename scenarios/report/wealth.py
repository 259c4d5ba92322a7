"""Wealth over a run: per-agent balances by lineage, the distribution and its Gini, births and deaths, money flows.

Everything is drawn from :func:`scenarios.report.data.timeline` (the transfer
log replayed) and :func:`scenarios.report.data.flows`, so the figures show the
ledger itself, not what a scenario chose to report.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from market.escape import terminal
from scenarios.report.data import RunData, Timeline, flows, timeline
from scenarios.report.style import OTHER, figure, lineage_colours, short


def wealth_figure(data: RunData, tl: Timeline | None = None, top: int = 8) -> Figure:
    """Four panels on one episode axis: agents' wealth by lineage, quantiles, Gini, births/deaths and population."""
    tl = tl or timeline(data)
    roots = data.roots()
    colours, ranked = lineage_colours(roots, np.nansum(tl.wealth.clip(min=0), axis=0), top)
    fig = figure(11, 11)
    ax_w, ax_q, ax_g, ax_b = fig.subplots(4, 1, sharex=True, height_ratios=[3, 2, 1.2, 1.6])
    x = tl.episode

    # 1. one line per agent, coloured by the lineage it descends from (grey: smaller lineages, drawn first)
    for coloured in (False, True):
        segments, cols = [], []
        for i in range(data.ids.size):
            c = colours.get(int(roots[i]))
            if (c is not None) != coloured:
                continue
            y = tl.wealth[:, i]
            keep = ~np.isnan(y)
            if keep.sum() >= 2:
                segments.append(np.column_stack([x[keep], y[keep]]))
                cols.append(c or OTHER)
            elif keep.sum() == 1:  # lived inside one bin: a dot
                ax_w.plot(x[keep], y[keep], ".", color=c or OTHER, ms=2)
        ax_w.add_collection(LineCollection(segments, colors=cols, linewidths=1.1 if coloured else 0.6,
                                           alpha=0.9 if coloured else 0.6))
    ax_w.autoscale_view()
    skill = dict(zip(data.ids.tolist(), data.skill))
    size = {r: int((roots == r).sum()) for r in ranked}
    handles = [ax_w.plot([], [], color=colours[r], lw=2,
                         label=f"#{r} ({size[r]} agent{'s' * (size[r] > 1)}) {short(skill.get(r), 28)}")[0] for r in ranked]
    if len(np.unique(roots)) > len(ranked):
        handles.append(ax_w.plot([], [], color=OTHER, lw=2, label="other lineages")[0])
    ax_w.legend(handles=handles, title="lineage root (agents) rule", fontsize=7, title_fontsize=8,
                loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax_w.set_ylabel("wealth (credits)")
    _symlog_if_skewed(tl, ax_w)
    ax_w.set_title(f"Run {data.run.id} ({terminal(data.run.scenario)}, seed {data.run.seed}): wealth of every agent, "
                   f"coloured by lineage")

    # 2. the distribution over the live agents
    q = tl.quantiles((0.1, 0.25, 0.5, 0.75, 0.9))
    ax_q.fill_between(x, q[0], q[4], color="#9ecae1", alpha=0.6, lw=0, label="10-90%")
    ax_q.fill_between(x, q[1], q[3], color="#3182bd", alpha=0.6, lw=0, label="25-75%")
    ax_q.plot(x, q[2], color="#08306b", lw=1.2, label="median")
    ax_q.plot(x, np.nanmax(np.where(tl.alive, tl.wealth, -np.inf), axis=1).clip(min=q[4]), color="#d62728",
              lw=0.8, label="richest")
    ax_q.set_ylabel("wealth (credits)")
    _symlog_if_skewed(tl, ax_q)
    ax_q.set_title("Wealth distribution of live agents", fontsize=10)
    ax_q.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)

    # 3. inequality
    ax_g.plot(x, tl.gini(), color="#6a3d9a", lw=1.2, label="Gini")
    ax_g.set_ylim(0, 1)
    ax_g.set_ylabel("Gini")
    ax_g.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)

    # 4. demography: births up, deaths down, population on the right axis
    width = np.diff(np.concatenate([[0], x])) * 0.9
    ax_b.bar(x, tl.births, width=width, color="#2ca02c", label="births")
    ax_b.bar(x, -tl.deaths, width=width, color="#d62728", label="deaths")
    ax_b.axhline(0, color="black", lw=0.5)
    ax_b.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax_b.set_ylim(min(-1, -tl.deaths.max() * 1.1), max(1, tl.births.max() * 1.1))
    per = data.n_episodes / x.size
    ax_b.set_ylabel("births / deaths\n" + ("per episode" if per == 1 else f"per {per:.3g} episodes"))
    ax_p = ax_b.twinx()
    ax_p.plot(x, tl.population, color="black", lw=1.2, label="population")
    ax_p.set_ylabel("population")
    ax_p.set_ylim(0, max(1, tl.population.max()) * 1.1)
    lines = ax_b.get_legend_handles_labels()
    more = ax_p.get_legend_handles_labels()
    ax_p.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8, loc="upper left", bbox_to_anchor=(1.08, 1.0),
                frameon=False)
    ax_b.set_xlabel("episode")
    ax_b.set_xlim(0, x[-1])
    return fig


def _symlog_if_skewed(tl: Timeline, ax) -> None:
    """A few rich agents beside a crowd near zero: a linear axis flattens the crowd, so go symmetric-log.

    The linear range ends at the decade above the crowd's typical wealth (the median of positive balances).
    """
    w = tl.wealth[tl.alive]
    w = w[w > 0]
    if w.size and w.max() > 20 * np.median(w):
        linthresh = 10.0 ** np.ceil(np.log10(np.median(w)))  # a whole decade: no ticks crowd inside it
        ax.set_yscale("symlog", linthresh=linthresh, linscale=1.0)  # one decade's height for -t..t
        ax.set_ylabel(ax.get_ylabel() + "\n(symmetric log scale)")


def flows_figure(data: RunData, roles: dict[int, str] | None = None, top: int = 10) -> Figure:
    """Who pays whom: a payer x payee matrix of total credits by role (house included), and totals by reason."""
    groups, matrix, by_reason = flows(data, roles, top)
    fig = figure(12, 5.5)
    ax_m, ax_r = fig.subplots(1, 2, width_ratios=[1.6, 1])
    shown = np.where(matrix > 0, matrix, np.nan)
    positive = matrix[matrix > 0]
    norm = LogNorm(vmin=max(positive.min(), positive.max() * 1e-4), vmax=positive.max()) if positive.size else None
    im = ax_m.imshow(shown, cmap="viridis", norm=norm, aspect="auto")
    ax_m.set_xticks(range(len(groups)), groups, rotation=35, ha="right", fontsize=8)
    ax_m.set_yticks(range(len(groups)), groups, fontsize=8)
    what = "role" if roles else "role (read off its rule)"
    ax_m.set_xlabel(f"payee {what}: receives")
    ax_m.set_ylabel(f"payer {what}: pays")
    ax_m.set_title(f"Money flows between roles, run {data.run.id} (credits, all episodes)", fontsize=10)
    if len(groups) <= 12:
        for i in range(len(groups)):
            for j in range(len(groups)):
                if matrix[i, j] > 0:
                    bright = norm is not None and norm(matrix[i, j]) > 0.6
                    ax_m.text(j, i, f"{matrix[i, j]:.3g}", ha="center", va="center", fontsize=7,
                              color="black" if bright else "white")
    if norm is not None:
        fig.colorbar(im, ax=ax_m, label="credits paid")

    names = sorted(by_reason, key=by_reason.get)
    ax_r.barh(names, [by_reason[n] for n in names], color="#3182bd")
    ax_r.set_xscale("log")
    ax_r.set_xlabel("credits moved (log scale)")
    ax_r.set_ylabel("ledger reason")
    ax_r.set_title("Transfers by reason", fontsize=10)
    for i, n in enumerate(names):
        ax_r.text(by_reason[n], i, f" {by_reason[n]:.4g}", va="center", fontsize=8)
    ax_r.margins(x=0.25)
    return fig
