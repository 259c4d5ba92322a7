"""The README's Python API snippet runs as written, and the run it opens has every attribute its comment names.

tests/test_readme.py runs the README's ``catallax`` lines; this runs its ``python`` block that calls
``open_run`` (in a fresh folder, at the run size the snippet itself sets), then reads each name that the
``open_run`` line's comment lists (``.summary``, ``.agents``, ``.final_balance()``, ...) off the opened run.
"""

import os
import re
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]


def api_snippet() -> str:
    blocks = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.S | re.M)
    return next(b for b in blocks if "open_run(" in b)


def named_attributes(snippet: str) -> list[str]:
    """The names the ``open_run`` line's comment lists as attributes (``.summary``, ``.agents``, ``.final_balance()``)."""
    line = next(line for line in snippet.splitlines() if "open_run(" in line and "#" in line)
    return re.findall(r"\.(\w+)", line.split("#", 1)[1])


def test_the_readme_api_snippet_runs_and_its_run_has_what_the_comment_names(tmp_path):
    snippet = api_snippet()
    (tmp_path / "runs").mkdir()
    here = os.getcwd()
    os.chdir(tmp_path)  # the snippet names sqlite:///runs/catallax.db, relative to where it runs
    try:
        scope: dict = {}
        exec(compile(snippet, "README.md", "exec"), scope)
    finally:
        os.chdir(here)
    run, summary = scope["run"], scope["summary"]
    names = named_attributes(snippet)
    assert "agents" in names and "summary" in names
    for name in names:
        value = getattr(run, name)
        if callable(value):
            value()
    assert run.summary["ledger_hash"] == summary["ledger_hash"]
    agents = run.agents
    assert isinstance(agents, pd.DataFrame) and agents.index.name == "agent_id"
    assert agents.index.tolist() == run.ids.tolist()
    assert agents["final_balance"].tolist() == run.final_balance().tolist()
    assert {"parent", "born", "died", "skill"} <= set(agents.columns)
