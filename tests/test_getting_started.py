"""The getting-started page shows what its code prints: its Python example, run as a user pastes it in a fresh
folder, prints exactly the output the page shows under it, and the first run's summary is the one shown."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "getting-started.md").read_text()
CATALLAX = Path(sys.executable).parent / "catallax"


def env():
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.slow
def test_the_python_example_prints_what_the_page_shows(tmp_path):
    code, shown = re.search(r"```python\n(.*?)```\n\nprints[^\n]*\n\n```text\n(.*?)```", PAGE, re.S).groups()
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == shown


@pytest.mark.slow
def test_the_first_run_prints_the_summary_the_page_shows(tmp_path):
    shown = json.loads(re.search(r"```text\nrun \w+: resume with `catallax resume \w+`\n(\{.*?\})\n```", PAGE).group(1))
    proc = subprocess.run([str(CATALLAX), "run", "relay", "--json"], cwd=tmp_path, env=env(), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {k: v for k, v in summary.items() if k != "run_id"} == {k: v for k, v in shown.items() if k != "run_id"}


def test_notebooks_are_stored_executed_with_their_figures():
    """The site renders the notebooks as stored (tests/test_notebooks.py executes them apart), so each is stored
    with its outputs: the tutorials show their figures on the site and on a code host."""
    import nbformat

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.execution_count for c in code), f"{path.name}: stored without running every cell"
        outputs = [o for c in code for o in c.outputs]
        assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.name}: stored without a figure"
        assert not [o for o in outputs if o.output_type == "error"], path.name
