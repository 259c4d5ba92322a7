"""Every notebook under notebooks/ runs top to bottom in a fresh kernel; a failing cell fails the suite.

nbclient executes them (what nbmake does under ``pytest --nbmake notebooks/``), in their own folder as a
user (or ``make docs``) runs them; on top, each notebook must have drawn at least one figure and written
nothing beside itself (whatever it writes goes into a temporary folder).
"""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert {p.stem for p in NOTEBOOKS} >= {"wealth", "lineage"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path):
    nb = nbformat.read(path, as_version=4)
    before = {p.name for p in path.parent.iterdir()}
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    assert {p.name for p in path.parent.iterdir()} == before, f"{path.name} wrote files beside itself"
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert figures, f"{path.name} drew no figure"
