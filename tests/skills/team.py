"""A two-role team (recall -> rank) whose skills move its odds of success: small real data for the skills tests.

Each question has a base success probability. In a rollout the recall agent
uses each of its skills with probability 1/2, and so does the rank agent with
``rank-strong``; ``rank-harmful`` is planted: the rank agent uses it (again
with probability 1/2) only in rollouts where it also uses ``rank-strong``, so it
rides along with success. Every used skill adds its effect to the success
probability. ``recall-sloppy`` makes the recall output invalid half the time,
which fails the trace's recall step and costs the team 0.2.

All randomness of a rollout is one row of uniforms, so two libraries evaluated
on the same (question, seed) see the same draws (paired evaluation).
"""

from __future__ import annotations

import numpy as np

from skills import Edit, GateResult, Rollout, SkillLibrary, Trace

SKILLS = {  # name -> (role, effect on the success probability, description, body)
    "recall-broad": ("recall", 0.1, "Recall widely when the query is vague.", "Take the top 50 by popularity too.\n"),
    "recall-sloppy": ("recall", 0.0, "Recall fast by skipping the format checks.", "Do not validate the item ids.\n"),
    "rank-strong": ("rank", 0.5, "Rank by the user's recent history.", "Score items by overlap with the last 10.\n"),
    "rank-harmful": ("rank", -0.2, "Promote the newest items.", "Move the three newest items to the top.\n"),
}
AGENT = {"recall": "recall-1", "rank": "rank-1"}
DRAWS = 6  # uniforms per rollout


def seed_library(library: SkillLibrary) -> None:
    for name, (role, _, description, body) in SKILLS.items():
        library.add(name, description, body, role=role)


def rollout(available: set[str], base: float, u: np.ndarray) -> Rollout:
    trace = Trace()
    recall = [s for s, x in zip(("recall-broad", "recall-sloppy"), u[:2]) if s in available and x < 0.5]
    broken = "recall-sloppy" in recall and u[2] < 0.5
    step = trace.invoke("recall", "invalid_output" if broken else "ok", agent=AGENT["recall"], skills=recall)
    rank = ["rank-strong"] if "rank-strong" in available and u[3] < 0.5 else []
    if rank and "rank-harmful" in available and u[4] < 0.5:
        rank.append("rank-harmful")
    trace.invoke("rank", agent=AGENT["rank"], skills=rank, after=[step])
    p = base + sum(SKILLS[s][1] for s in recall + rank) - 0.2 * broken
    return Rollout(reward=float(u[5] < p), trace=trace)


def groups(available: set[str], questions: int, group_size: int = 4, seed: int = 0) -> list:
    """``questions`` groups of ``group_size`` rollouts each: [(question id, [Rollout])]."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.1, 0.4, size=questions)
    u = rng.random((questions, group_size, DRAWS))
    return [(q, [rollout(available, base[q], u[q, g]) for g in range(group_size)]) for q in range(questions)]


def evaluate(skills, questions: np.ndarray, seeds: np.ndarray, rollouts: int = 8) -> np.ndarray:
    """Mean reward of ``rollouts`` rollouts per (question, seed): the validation score the gate compares."""
    available = {s.name for s in skills}
    scores = []
    for q, s in zip(questions.tolist(), seeds.tolist()):
        rng = np.random.default_rng([q, s])
        base, u = rng.uniform(0.1, 0.4), rng.random((rollouts, DRAWS))
        scores.append(np.mean([rollout(available, base, row).reward for row in u]))
    return np.array(scores)


def evolve(library: SkillLibrary) -> None:
    """A short history with every operator: revise, merge (two parents), prune, add, and a rejected candidate."""
    seed_library(library)
    library.apply([Edit("revise", "rank-strong", body="Score by overlap with the last 20 items.\n",
                        rule="history >= 1 -> rank_overlap")])
    library.apply([Edit("merge", "recall-broad", partner="recall-sloppy",
                        diagnosis={"failure": "redundant_skill", "step": 0})])
    library.apply([Edit("prune", "rank-harmful", diagnosis={"failure": "harmful_skill", "step": 1})],
                  gate=GateResult(True, 0.41, 0.47, np.array([0.1, 0.02])))
    library.apply([Edit("revise", "rank-strong", body="Only look at the last item.\n")],
                  gate=GateResult(False, 0.5, 0.25, np.array([-0.25])))
    library.add("rerank-diverse", "Spread the top ten over genres.", "No genre twice in the top three.\n",
                role="rerank")
