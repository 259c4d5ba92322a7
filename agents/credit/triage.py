r"""``triage``: label each step, add a fixed process reward to the outcome advantage (TRIAGE).

    A_{g,t} = A_g + b(label_t),   b = {progress: +0.5, exploration: +0.2, noop: 0, regression: -0.5}

A_g is the grpo advantage. The paper fixes +0.2 for exploration and -0.5 for regression;
+0.5 for progress is our choice (symmetric with regression). Worlds with a progress signal get
labels from :func:`labels_from_progress`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from agents.credit.base import EPS, Credit, group_advantage

NEEDS = frozenset({"outcome", "labels"})
LABELS = ("progress", "exploration", "noop", "regression")


@dataclass
class Config:
    bonus: dict = field(default_factory=lambda: {"progress": 0.5, "exploration": 0.2, "noop": 0.0, "regression": -0.5})
    eps: float = EPS


def labels_from_progress(progress, state) -> list[str]:
    """Progress up: progress; down: regression; same progress, new state: exploration; same state: noop."""
    p = np.asarray(progress, dtype=np.float64)
    out = []
    for t in range(len(p) - 1):
        if p[t + 1] > p[t]:
            out.append("progress")
        elif p[t + 1] < p[t]:
            out.append("regression")
        else:
            out.append("noop" if state[t + 1] == state[t] else "exploration")
    return out


def estimate(group, cfg: Config) -> Credit:
    unknown = {l for t in group for l in t.labels} - set(cfg.bonus)
    if unknown:
        raise ValueError(f"triage: unknown step labels {sorted(unknown)}; expected {LABELS}")
    return Credit([a + np.array([cfg.bonus[l] for l in t.labels], dtype=np.float64)
                   for t, a in zip(group, group_advantage(group, cfg.eps))])
