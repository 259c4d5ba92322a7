"""Regenerate the example figures of the README and the docs site (docs/*.png): `python docs/make_figures.py`.

Runs `relay` (1000 episodes, seed 0) and `recsys` (the scenario file's settings, seed 0) into a
throwaway database and draws one figure per topic with scenarios.report: wealth.png (the README's figure,
the home page, reports), flows.png and agent_lineage.png (reports), skill_lineage.png and
skill_evolution.png (skills). docs/howto/figures.md lists them, and the two figures made elsewhere.
"""

import tempfile
from pathlib import Path

from market.store import make_engine
from scenarios.run.config import load
from scenarios.report import agent_tree_figure, flows_figure, load_run, skill_evolution_figure, skill_tree_figure, \
    timeline, wealth_figure
from scenarios.run.runner import run_experiment
from skills import SkillLibrary, skill_graph

DOCS = Path(__file__).parent
DPI = 80


def main() -> None:
    url = f"sqlite:///{Path(tempfile.mkdtemp()) / 'catallax.db'}"
    engine = make_engine(url)
    relay = run_experiment(load("relay", [], seed=0), url, progress=False)
    data = load_run(engine, relay["run_id"])
    tl = timeline(data)
    recsys = run_experiment(load("recsys", [], seed=0), url, progress=False)
    library = SkillLibrary(engine, recsys["run_id"])
    figures = {
        "wealth": wealth_figure(data, tl),
        "flows": flows_figure(data),
        "agent_lineage": agent_tree_figure(data, tl, max_rows=90),
        "skill_lineage": skill_tree_figure(skill_graph(library), title="recsys skill library"),
        "skill_evolution": skill_evolution_figure(library, metric="validation NDCG@10"),
    }
    for name, fig in figures.items():
        fig.savefig(DOCS / f"{name}.png", dpi=DPI)
        print(DOCS / f"{name}.png")


if __name__ == "__main__":
    main()
