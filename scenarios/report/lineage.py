"""Lineage trees: agents (who descends from whom), rule versions, and a skill library's versions.

All three are drawn as a *phylogeny* on a time axis, which stays readable at
hundreds of nodes where a force layout turns into a hairball: each node gets
its own row (depth-first, so a family is a contiguous block of rows), sits at
the x of its birth, and a horizontal line runs for as long as it lived; a
child hangs off its parent by an elbow whose colour is the edit operator that
made it (a legend names them; text labels only on small trees). The graphs
are networkx DiGraphs from :mod:`skills.lineage`; positions go to
``networkx.draw_networkx_nodes``.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from market.escape import terminal
from scenarios.report.data import RunData, Timeline, rule_operator, timeline
from scenarios.report.style import OPERATORS, OTHER, STATUS, figure, lineage_colours, short

LABEL_NODES = 80  # label every node up to this many; beyond, only the roots of the coloured lineages
UNKNOWN = ("black", "solid")  # an operator this module has no style for
LABEL_EDGES = 40  # write the operator on every edge up to this many; beyond, colour and legend only


def rows(tree: nx.DiGraph, roots: list) -> dict:
    """Depth-first preorder rows: each subtree is a contiguous block, children in the order they were added."""
    y, stack = {}, list(reversed(roots))
    while stack:
        n = stack.pop()
        if n in y:
            continue
        y[n] = len(y)
        stack.extend(reversed([c for c in tree.successors(n) if c not in y]))
    return y


def phylogeny(ax, tree: nx.DiGraph, roots: list, start: dict, end: dict, size: dict, colour: dict,
              outline: dict | None = None, extra: list[tuple] = (), labels: dict | None = None) -> dict:
    """Draw ``tree`` (edges carry ``operator``) on ``ax``; return the (x, y) positions.

    ``start``/``end``: x of a node's birth and death; ``extra``: (u, v, operator)
    edges drawn dashed that are not part of the layout (a merge's second parent).
    """
    y = rows(tree, roots)
    pos = {n: (start[n], y[n]) for n in y}
    ax.add_collection(LineCollection([[(start[n], y[n]), (end[n], y[n])] for n in y],
                                     colors=[colour[n] for n in y], linewidths=1.0, alpha=0.55))
    elbows, styles, ops = [], [], set()
    for u, v, d in tree.edges(data=True):
        if u in y and v in y:
            op = d.get("operator") or "copy"
            ops.add(op)
            elbows.append([(start[v], y[u]), (start[v], y[v])])  # the parent's own line carries it across
            styles.append(OPERATORS.get(op, UNKNOWN))
    ax.add_collection(LineCollection(elbows, colors=[c for c, _ in styles], linestyles=[ls for _, ls in styles],
                                     linewidths=0.9))
    for u, v, op in extra:
        if u in y and v in y:
            ops.add(op)
            colour_, ls = OPERATORS.get(op, UNKNOWN)
            ax.plot([start[u], start[v]], [y[u], y[v]], ls=ls, lw=0.9, color=colour_)
    nodes = list(y)
    nx.draw_networkx_nodes(tree, pos, nodelist=nodes, ax=ax, node_size=[size[n] for n in nodes],
                           node_color=[colour[n] for n in nodes],
                           edgecolors=[(outline or {}).get(n, "none") for n in nodes], linewidths=1.0)
    if len(elbows) <= LABEL_EDGES:
        for u, v, d in tree.edges(data=True):
            if u in y and v in y and d.get("operator"):
                # left of the child, on its own row: nothing else of any node is drawn there
                ax.annotate(d["operator"], (start[v], y[v]), xytext=(-(np.sqrt(size[v]) / 2 + 2), 0),
                            textcoords="offset points", fontsize=6, va="center", ha="right",
                            color=OPERATORS.get(d["operator"], UNKNOWN)[0])
    if labels:
        for n, text in labels.items():
            if n in pos:
                ax.annotate(text, pos[n], xytext=(np.sqrt(size[n]) / 2 + 3, 0), textcoords="offset points",
                            fontsize=6.5, va="center",
                            bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.75))
    ax.set_ylim(len(y) + 0.5, -0.03 * len(y) - 2)
    ax.set_yticks([])
    ax.tick_params(bottom=True, labelbottom=True)  # networkx's drawing switches the axis ticks off
    ax.spines[["left", "right", "top"]].set_visible(False)
    ax.autoscale(axis="x")
    ax.legend(handles=[Line2D([], [], color=OPERATORS.get(op, UNKNOWN)[0], ls=OPERATORS.get(op, UNKNOWN)[1], lw=1.5,
                              label=op) for op in sorted(ops)],
              title="edit operator", fontsize=8, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False)
    return pos


def _sizes(values: dict, smallest: float = 8, largest: float = 220) -> dict:
    """Node areas proportional to value (clipped at zero), between ``smallest`` and ``largest`` points^2."""
    top = max([v for v in values.values() if v > 0], default=1.0)
    return {n: smallest + (largest - smallest) * max(v, 0) / top for n, v in values.items()}


def _height(n_rows: int) -> float:
    return float(np.clip(0.12 * n_rows + 2.0, 4.5, 24))


def _largest(n_rows: int, cap: float = 220) -> float:
    """The largest node area (points^2) whose disc still fits its row, so neighbours never overlap."""
    row = 72 * (_height(n_rows) - 1.5) / max(n_rows, 1)
    return float(min(cap, (1.2 * row) ** 2))


# --------------------------------------------------------------------------------------------- agents


def agent_tree_figure(data: RunData, tl: Timeline | None = None, top: int = 8, singletons: bool | None = None,
                      max_rows: int = 150) -> Figure:
    """The run's family tree: one row per agent, from birth to death; size = peak wealth; colour = lineage.

    The ``top`` lineages by wealth are always drawn; other families follow,
    largest first, while they fit in ``max_rows`` rows. Random newcomers that
    never had a child are left out (``singletons``) when there are many: they
    are single dots that would bury the families.
    """
    tl = tl or timeline(data)
    g = data.agents_graph
    roots_of = dict(zip(data.ids.tolist(), data.roots().tolist()))
    peak = dict(zip(data.ids.tolist(), np.nan_to_num(np.nanmax(np.where(tl.alive, tl.wealth, np.nan), axis=0,
                                                                initial=0.0)).tolist()))
    colours, ranked = lineage_colours(data.roots(), np.nansum(tl.wealth.clip(min=0), axis=0), top)
    roots = [n for n in g if g.in_degree(n) == 0]
    family = {r: 1 + len(nx.descendants(g, r)) for r in roots}
    if singletons is None:
        singletons = len(g) <= LABEL_NODES
    order = {r: i for i, r in enumerate(ranked)}
    # the coloured lineages first, then the others largest first, until max_rows rows are used
    candidates = sorted(roots, key=lambda r: (order.get(r, len(order)), -family[r], r))
    shown, n_rows = [], 0
    for r in candidates:
        if r in colours or ((singletons or family[r] > 1) and n_rows + family[r] <= max_rows):
            shown.append(r)
            n_rows += family[r]
    end_x = data.n_episodes
    start = {a: g.nodes[a]["born"] for a in g}
    end = {a: (g.nodes[a]["died"] + 1 if g.nodes[a]["died"] is not None else end_x) for a in g}
    tree = g.copy()
    skill = nx.get_node_attributes(g, "skill")
    for u, v in tree.edges:
        tree.edges[u, v]["operator"] = rule_operator(skill.get(u), skill.get(v))
    alive = {a: "black" for a in g if g.nodes[a]["died"] is None}
    labels = ({a: str(a) for a in g} if n_rows <= LABEL_NODES else
              {r: f"#{r} {short(skill.get(r), 30)}" for r in ranked if r in shown})
    fig = figure(12, _height(n_rows))
    ax = fig.subplots()
    colour = {a: colours.get(roots_of[a], OTHER) for a in g}
    phylogeny(ax, tree, shown, start, end, _sizes(peak, 6, _largest(n_rows)), colour, alive, labels=labels)
    ax.set_xlim(-0.01 * end_x, end_x * 1.01)
    ax.set_xlabel("episode (a node sits at the agent's birth; its line runs until it died)")
    hidden = [r for r in roots if r not in shown]
    left_out = (f"; not shown: {len(hidden)} smaller lineages ({sum(family[r] for r in hidden)} agents)"
                if hidden else "")
    ax.set_title(f"Agent lineage, run {data.run.id} ({terminal(data.run.scenario)}): {len(g)} agents, "
                 f"{len(roots)} roots{left_out}\nnode area = peak wealth, colour = lineage (as in the wealth "
                 f"figure), black outline = alive at the end", fontsize=10)
    return fig


# ---------------------------------------------------------------------------------------- rule versions


def rule_tree(data: RunData) -> tuple[nx.DiGraph, dict]:
    """Distinct rules (the skill texts agents carry) as versions: a rule's parent is the parent rule of the
    first agent that carried it. Node attributes: first/last episode, carriers, profit (credits earned).

    Returns (tree, first carrier of each rule).
    """
    end_x = data.n_episodes
    parent_of = dict(zip(data.ids.tolist(), data.parent.tolist()))
    skill_of = dict(zip(data.ids.tolist(), data.skill))
    profit = data.profit() * 1e-6
    tree, first = nx.DiGraph(), {}
    for i, a in enumerate(data.ids.tolist()):  # ascending ids: a parent is met before its children
        rule = data.skill[i] or "(no rule)"
        died = data.died[i] + 1 if data.died[i] >= 0 else end_x
        if rule not in tree:
            first[rule] = a
            tree.add_node(rule, first=int(data.born[i]), last=int(died), carriers=0, profit=0.0)
            parent_rule = skill_of.get(parent_of[a]) if parent_of[a] > 0 else None
            if parent_rule is not None and parent_rule != rule and parent_rule in tree:
                tree.add_edge(parent_rule, rule, operator=rule_operator(parent_rule, rule))
        node = tree.nodes[rule]
        node["carriers"] += 1
        node["profit"] += float(profit[i])
        node["last"] = max(node["last"], int(died))
    return tree, first


def rule_tree_figure(data: RunData, min_carriers: int | None = None) -> Figure:
    """Rule versions of a market run: size = agents that carried it, colour = credits they earned together.

    Rules carried by fewer than ``min_carriers`` agents and with no descendants
    are left out when the tree is large (default: 2 beyond 80 rules).
    """
    tree, _ = rule_tree(data)
    roots = [n for n in tree if tree.in_degree(n) == 0]
    if min_carriers is None:
        min_carriers = 1 if len(tree) <= LABEL_NODES else 2
    keep = [r for r in roots if tree.nodes[r]["carriers"] >= min_carriers or tree.out_degree(r) > 0]
    keep.sort(key=lambda r: (-tree.nodes[r]["profit"], r))
    shown = set().union(*[{r} | nx.descendants(tree, r) for r in keep]) if keep else set()
    profit = {n: tree.nodes[n]["profit"] for n in tree}
    span = max([abs(v) for v in profit.values()] + [1e-9])
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-span, vmax=span)
    cmap = colormaps["RdYlGn"]
    colour = {n: cmap(norm(profit[n])) for n in tree}
    best = sorted(shown, key=lambda n: -abs(profit[n]))[:12]
    labels = {n: short(n, 40) for n in (shown if len(shown) <= 40 else best)}
    fig = figure(12, _height(len(shown)))
    ax = fig.subplots()
    phylogeny(ax, tree, keep, nx.get_node_attributes(tree, "first"), nx.get_node_attributes(tree, "last"),
              _sizes(nx.get_node_attributes(tree, "carriers"), 8, _largest(len(shown), 260)), colour, labels=labels)
    fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, shrink=0.5,
                 label="credits earned by its carriers", location="bottom", aspect=40)
    ax.set_xlabel("episode (a rule sits where it first appeared; its line runs while an agent carried it)")
    hidden = len(tree) - len(shown)
    ax.set_title(f"Rule versions, run {data.run.id} ({terminal(data.run.scenario)}): {len(tree)} distinct rules"
                 + (f", {hidden} carried by fewer than {min_carriers} agents without descendants not shown"
                    if hidden else "")
                 + "\nnode area = agents that carried it; labels: the rules that earned or lost the most",
                 fontsize=10)
    return fig


# ----------------------------------------------------------------------------------------- skill library


def skill_tree_figure(g: nx.DiGraph, credit: dict[str, float] | None = None, title: str = "") -> Figure:
    """A skill library's version tree (:func:`skills.lineage.skill_graph`): x = order written, colour = status.

    Node area is the skill's credit (``credit``: name@version -> value, e.g.
    group-relative credit; a bare name stands for its current version), else constant; rejected candidates stay in the
    tree, red; a merge's second parent is a dashed edge.
    """
    order = {n: i for i, n in enumerate(g)}
    tree = nx.DiGraph()
    tree.add_nodes_from(g.nodes(data=True))
    extra = []
    for u, v, d in g.edges(data=True):
        (extra.append((u, v, d.get("operator"))) if d.get("merge") else tree.add_edge(u, v, **d))
    roots = [n for n in tree if tree.in_degree(n) == 0]

    def status(n):
        a = g.nodes[n]
        return "current" if a.get("current") else {"active": "retired"}.get(a.get("status"), a.get("status"))

    credit = credit or {}
    value = {n: credit.get(n, credit.get(g.nodes[n].get("name")) if g.nodes[n].get("current") else None) for n in g}
    sized = any(v is not None for v in value.values())
    largest = _largest(len(g), 320)
    size = (_sizes({n: abs(v or 0.0) for n, v in value.items()}, min(25, largest / 4), largest) if sized
            else {n: min(60, largest) for n in g})
    colour = {n: STATUS.get(status(n), "black") for n in g}
    start = {n: float(order[n]) for n in g}
    end = {n: float(max([order[c] for c in g.successors(n)] + [order[n]])) for n in g}
    labels = {n: n + (f" ({value[n]:+.2f})" if value[n] is not None else "") for n in g} if len(g) <= LABEL_NODES \
        else {n: n for n in g if g.nodes[n].get("current")}
    fig = figure(12, _height(len(g)))
    ax = fig.subplots()
    phylogeny(ax, tree, roots, start, end, size, colour, extra=extra, labels=labels)
    ax.set_xlim(-0.5, max(len(g) - 0.5, 1) * 1.15)
    ax.set_xlabel("version, in the order written (a line runs until the version was replaced)")
    for name, c in STATUS.items():
        ax.scatter([], [], color=c, label=name, s=40)
    handles, names = ax.get_legend_handles_labels()
    old = ax.get_legend()
    ax.add_artist(old)
    ax.legend(handles[-len(STATUS):], names[-len(STATUS):], title="version status", fontsize=8, title_fontsize=8,
              loc="upper left", bbox_to_anchor=(1.01, 0.55), frameon=False)
    ax.set_title((title or "Skill versions") + f": {len(g)} versions"
                 + ("; node area = |credit|" if sized else "") + "; dashed = a merge's second parent", fontsize=10)
    return fig

