"""A team rollout's workflow trace (skills/workflow.py) as a trajectory: the recsys pipeline's signals.

Each invocation node of the trace is one step, in the order it ran:

* ``agent`` / ``role`` / ``skill``: who played the role, which role, the skills it used (joined);
* ``deps``: the steps whose output it read (the trace's edges);
* ``checked``: the sinks of the DAG, whose output the verifier scores (recsys: the rerank);
* ``criteria``: the role's own check, [1, 0] when the node is ``ok``, [0, 1] when it failed
  (invalid, empty, constraint violated, timeout): draco's per-step criteria;
* ``evidence``: the same check as a stage reward in [0, 1] (credo);
* ``outcome``: the rollout's reward (recsys: NDCG, minus the workflow penalty when ``penalty`` > 0).

So a recsys group feeds grpo, depgpo, draco, credo and grse.
"""

from __future__ import annotations

import numpy as np

from agents.credit.base import Trajectory

PROVIDES = ("outcome", "role", "skill", "deps", "checked", "criteria", "evidence")


def from_rollout(rollout, penalty: float = 0.0) -> Trajectory:
    """``rollout``: a skills.credit.Rollout (reward + workflow Trace)."""
    g = rollout.trace.graph
    steps = sorted(g.nodes)
    data = [g.nodes[s] for s in steps]
    ok = np.array([d["status"] == "ok" for d in data], dtype=np.float64)
    sinks = tuple(s for s in steps if g.out_degree(s) == 0)
    return Trajectory(
        outcome=float(rollout.reward - (rollout.trace.penalty(penalty) if penalty else 0.0)),
        agent=np.array([d["agent"] or d["role"] for d in data], dtype=object),
        action=np.arange(len(steps)), role=[d["role"] for d in data],
        skill=["+".join(d["skills"]) or "-" for d in data],
        deps=[tuple(sorted(g.predecessors(s))) for s in steps], checked=sinks,
        criteria=np.stack([ok, 1 - ok], axis=1).reshape(len(steps), 2), evidence=ok,
    )


def from_groups(groups, penalty: float = 0.0) -> list[list[Trajectory]]:
    """[(question, [Rollout])] (recsys's Arm.window entries) -> groups of trajectories."""
    return [[from_rollout(r, penalty) for r in rollouts] for _, rollouts in groups]
