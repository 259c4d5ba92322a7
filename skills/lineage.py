"""Lineage as networkx DiGraphs, built from the database.

* Skill versions: one node per version, labelled ``name@version``; an edge from
  each parent to its child, carrying the child's edit operator (a merge's child
  has two incoming edges, the second marked ``merge=True``). Rejected
  candidates are nodes too, so a failed edit stays visible in the lineage.
* Agents: one node per agent of a run (``agent`` table), an edge from
  ``parent_id`` to the child; random newcomers (parent -1) are roots.
"""

from __future__ import annotations

import networkx as nx
from sqlmodel import Session, select

from market.store import Agent
from skills.library import SkillLibrary, current_of


def skill_graph(library: SkillLibrary) -> nx.DiGraph:
    """A skill library's version tree: every version a node, every edit an edge from the version(s) it edited.

    Args:
        library: The library (its ``versions()`` and ``edits()``).

    Returns:
        A networkx DiGraph keyed by ``name@version`` labels; each node carries ``name``, ``version``, ``role``,
        ``status``, ``current`` (the live version of its skill), the edit's ``operator`` and ``gate``; each edge
        its ``operator`` and ``merge`` (True for a merge's second parent).
    """
    versions, edits = library.versions(), library.edits()
    labels = {v.id: v.label for v in versions}
    current = {v.id for v in current_of(versions)}
    g = nx.DiGraph()
    for v in versions:
        edit = edits.get(v.edit_id)
        operator = edit.operator if edit else None
        g.add_node(v.label, name=v.name, version=v.version, role=v.role, status=v.status, current=v.id in current,
                   operator=operator, gate=edit.gate if edit else None)
        if v.parent_id is not None:
            g.add_edge(labels[v.parent_id], v.label, operator=operator, merge=False)
        if v.merge_parent_id is not None:
            g.add_edge(labels[v.merge_parent_id], v.label, operator=operator, merge=True)
    return g


def agent_graph(engine, run_id: str) -> nx.DiGraph:
    with Session(engine) as s:
        agents = s.exec(select(Agent).where(Agent.run_id == run_id).order_by(Agent.agent_id)).all()
    g = nx.DiGraph()
    for a in agents:
        g.add_node(a.agent_id, born=a.born_episode, died=a.died_episode, wealth=a.final_wealth, skill=a.skill)
    for a in agents:
        if a.parent_id is not None and a.parent_id in g:
            g.add_edge(a.parent_id, a.agent_id)
    return g


def _known(g: nx.DiGraph, node) -> None:
    if node not in g:
        raise KeyError(f"{node}: not in the lineage")


def _oldest_first(g: nx.DiGraph, nodes: set) -> list:
    """Parents before children; otherwise in the order the graph was built (the database's)."""
    order = {n: i for i, n in enumerate(g)}
    return list(nx.lexicographical_topological_sort(g.subgraph(nodes), key=order.__getitem__))


def ancestors(g: nx.DiGraph, node) -> list:
    """Every version (or agent) ``node`` descends from, oldest first."""
    _known(g, node)
    return _oldest_first(g, nx.ancestors(g, node))


def descendants(g: nx.DiGraph, node) -> list:
    """Every version (or agent) descending from ``node``, oldest first."""
    _known(g, node)
    return _oldest_first(g, nx.descendants(g, node))


def edit_path(g: nx.DiGraph, source, target) -> list[tuple]:
    """The edits that lead from ``source`` to ``target``: [(parent, child, operator), ...], shortest.

    Raises ValueError when ``target`` does not descend from ``source``.
    """
    _known(g, source)
    _known(g, target)
    try:
        path = nx.shortest_path(g, source, target)
    except nx.NetworkXNoPath:
        raise ValueError(f"{target} does not descend from {source}") from None
    return [(u, v, g.edges[u, v].get("operator")) for u, v in zip(path, path[1:])]
