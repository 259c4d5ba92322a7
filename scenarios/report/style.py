"""Shared look of the figures: the canvas (Agg, no pyplot state), lineage colours, operator colours.

Figures are built as ``matplotlib.figure.Figure`` on an Agg canvas rather than
through ``pyplot``: no global state, no display needed, safe in threads (the
dashboard) and in a CLI; notebooks still show them inline.
"""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

LINEAGE_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                   "#bcbd22", "#7f7f7f"]
OTHER = "#c8c8c8"  # lineages beyond the top few
# Edit operator -> (colour, line style) of the edge from parent to child: skill edits (skills/library.py) and rule
# mutations (data.rule_operator). Dark colours and distinct dashes, so they never read as a lineage's colour.
OPERATORS = {
    "add": ("#006d2c", "solid"), "revise": ("#111111", "solid"), "merge": ("#54278f", "dashed"),
    "prune": ("#a50f15", "dotted"),
    "condition": ("#111111", "solid"), "action": ("#a63603", "dashed"), "both": ("#54278f", "dashdot"),
    "edit": ("#a63603", "dashdot"), "copy": ("#9a9a9a", "dotted"),
}
STATUS = {"current": "#2ca02c", "retired": "#9ecae1", "pruned": "#7f7f7f", "rejected": "#d62728"}


def figure(width: float, height: float, **kwargs) -> Figure:
    """A figure on an Agg canvas, laid out with constrained layout (no overlapping labels)."""
    fig = Figure(figsize=(width, height), layout="constrained", **kwargs)
    FigureCanvasAgg(fig)
    return fig


def lineage_colours(roots: np.ndarray, weight: np.ndarray, top: int = 8) -> tuple[dict[int, str], list[int]]:
    """Colours for the ``top`` lineages by total ``weight`` (e.g. wealth over time); the rest get :data:`OTHER`.

    Returns (root id -> colour for the top lineages, those roots heaviest first).
    """
    totals: dict[int, float] = {}
    for r, w in zip(roots.tolist(), np.nan_to_num(np.asarray(weight, dtype=float)).tolist()):
        totals[r] = totals.get(r, 0.0) + w
    ranked = sorted(totals, key=lambda r: (-totals[r], r))[: min(top, len(LINEAGE_PALETTE) - 1)]
    return {r: to_hex(LINEAGE_PALETTE[i]) for i, r in enumerate(ranked)}, ranked


def short(text: str | None, width: int = 32) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"
