"""Figures of runs, read from the results database (``catallax report``, the notebooks).

Wealth (scenarios/report/wealth.py), lineage trees (lineage.py), skill evolution
(evolution.py), learning curves (curve.py), all built from the run's tables by data.py; report.py writes
them as PNG files with a Markdown summary. Figures are matplotlib ``Figure``
objects on the Agg canvas (style.py): they need no display.
"""

from scenarios.report.curve import curve_figure, run_curves
from scenarios.report.data import RunData, Timeline, flows, load_run, open_run, timeline
from scenarios.report.evolution import arms_figure, edit_history, market_evolution_figure, skill_evolution_figure
from scenarios.report.lineage import agent_tree_figure, rule_tree, rule_tree_figure, skill_tree_figure
from scenarios.report.summary import write_report
from scenarios.report.wealth import flows_figure, wealth_figure

__all__ = [
    "RunData", "Timeline", "agent_tree_figure", "arms_figure", "curve_figure", "edit_history", "flows", "flows_figure", "load_run",
    "market_evolution_figure", "open_run", "rule_tree", "rule_tree_figure", "run_curves", "skill_evolution_figure", "skill_tree_figure",
    "timeline", "wealth_figure", "write_report",
]
