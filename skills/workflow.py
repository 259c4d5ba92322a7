"""Structure-aware workflow penalties (after FLOWRIGHT): the trace of a team rollout is a DAG.

A team workflow (e.g. recall -> rank -> rerank) runs roles; each invocation of
a role is a node of the trace, recording the role, the agent that played it,
the skills it used and whether it was ``ok`` or failed, and how:

* ``invalid_output``      the output did not parse into the expected form
* ``empty_output``        the role produced nothing
* ``constraint_violated`` the output parsed but broke a rule of the task
* ``timeout``             the role ran out of its step or time budget

An edge u -> v says v read u's output. With R the rollout's outcome reward and,
per role r, ``failed_r`` of its ``total_r`` nodes failed:

    penalty_r   = lam * failed_r / total_r        (0 for a role that did not run)
    role reward = R - penalty_r
    team reward = R - sum_r penalty_r

The penalty is light (lam ~ 0.1) and needs no reward model: the outcome still
dominates, but of two rollouts with the same outcome the cleaner one ranks
higher, so group-relative credit (skills/credit.py) sees the difference.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

FAILURES = ("invalid_output", "empty_output", "constraint_violated", "timeout")
STATUSES = ("ok", *FAILURES)


def role_penalty(failed: np.ndarray, total: np.ndarray, lam: float) -> np.ndarray:
    """[..., R] per-role penalty lam * failed / total (0 where a role has no nodes)."""
    return lam * np.asarray(failed, dtype=np.float64) / np.maximum(np.asarray(total), 1)


def rewards(reward: np.ndarray, failed: np.ndarray, total: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """(team reward [...], per-role rewards [..., R]) from outcome rewards [...] and counts [..., R]."""
    penalty = role_penalty(failed, total, lam)
    reward = np.asarray(reward, dtype=np.float64)
    return reward - penalty.sum(-1), reward[..., None] - penalty


class Trace:
    """One rollout's execution: nodes numbered by step in the order they ran."""

    def __init__(self, reference: str = ""):
        self.graph = nx.DiGraph()
        self.reference = reference
        """The correct final output of the rollout's question, where the task knows it (shown to diagnosers)."""

    def invoke(self, role: str, status: str = "ok", agent: str | None = None, skills=(), after=(),
               output: str | None = None) -> int:
        """Record one invocation that read the outputs of the steps in ``after``; return its step."""
        if status not in STATUSES:
            raise ValueError(f"trace step of {role}: status {status!r} is not one of {STATUSES}")
        step = self.graph.number_of_nodes()
        for parent in after:
            if parent not in self.graph:
                raise ValueError(f"trace step {step} ({role}): after {parent}: no such step")
        self.graph.add_node(step, role=role, agent=agent, skills=tuple(sorted(skills)), status=status, output=output)
        self.graph.add_edges_from((parent, step) for parent in after)
        return step

    def node(self, step: int) -> dict:
        return self.graph.nodes[step]

    def failed(self) -> list[int]:
        return [n for n, d in self.graph.nodes(data=True) if d["status"] != "ok"]

    def failed_upstream(self, step: int) -> list[int]:
        """Failed steps whose output reached ``step``, earliest first."""
        return sorted(n for n in nx.ancestors(self.graph, step) if self.graph.nodes[n]["status"] != "ok")

    def roles(self) -> list[str]:
        return list(dict.fromkeys(d["role"] for _, d in self.graph.nodes(data=True)))

    def counts(self, roles: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(failed [R], total [R]) nodes per role, in the order of ``roles``."""
        failed, total = np.zeros(len(roles), dtype=np.int64), np.zeros(len(roles), dtype=np.int64)
        index = {r: i for i, r in enumerate(roles)}
        for _, d in self.graph.nodes(data=True):
            total[index[d["role"]]] += 1
            failed[index[d["role"]]] += d["status"] != "ok"
        return failed, total

    def penalties(self, lam: float) -> dict[str, float]:
        roles = self.roles()
        return dict(zip(roles, role_penalty(*self.counts(roles), lam).tolist()))

    def penalty(self, lam: float) -> float:
        """The team's workflow penalty: the sum of the roles' penalties."""
        return float(sum(self.penalties(lam).values()))

    def skills_used(self) -> dict[str, set[str]]:
        """Agent (or role, where no agent is recorded) -> the skills it used anywhere in the trace."""
        used: dict[str, set[str]] = {}
        for _, d in self.graph.nodes(data=True):
            used.setdefault(d["agent"] or d["role"], set()).update(d["skills"])
        return used

    def describe(self) -> str:
        """One line per step, for people and for the LLM diagnoser's prompt."""
        lines = []
        for n, d in self.graph.nodes(data=True):
            after = ",".join(map(str, sorted(self.graph.predecessors(n))))
            who = f"{d['role']}" + (f" ({d['agent']})" if d["agent"] else "")
            line = f"step {n}: {who} skills=[{', '.join(d['skills'])}] after=[{after}] -> {d['status']}"
            lines.append(line + (f": {d['output']!r}" if d["output"] is not None else ""))
        if self.reference:
            lines.append(f"correct: {self.reference}")
        return "\n".join(lines)

    def state_dict(self) -> dict:
        """Plain lists and dicts (JSON-ready): the steps' records in order, and the edges."""
        steps = [dict(d) for _, d in self.graph.nodes(data=True)]
        return {"steps": steps, "edges": [list(e) for e in self.graph.edges], "reference": self.reference}

    def load_state_dict(self, state: dict) -> None:
        self.graph = nx.DiGraph()
        self.graph.add_nodes_from((step, d | {"skills": tuple(d["skills"])}) for step, d in enumerate(state["steps"]))
        self.graph.add_edges_from(map(tuple, state["edges"]))
        self.reference = state.get("reference", "")
