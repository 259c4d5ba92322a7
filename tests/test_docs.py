"""The documentation: results tables equal their stored rows, the config reference has every key, the site
builds in strict mode (a broken link, a missing page or a stale table fails), nothing points outside the repo."""

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from docs import config_reference, tables
from scenarios.registry import SCENARIO_DIR
from scenarios.run.config import load

ROOT = Path(__file__).resolve().parents[1]
ROWS = "benchmarks/results/relay_payment.jsonl"


def test_every_results_table_matches_its_rows():
    assert tables.main(["--check"]) == 0


def _page(tmp_path, body: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(f"# t\n\n<!-- table: {ROWS} | payment, seed, success_rate -->\n{body}<!-- end table -->\n")
    return page


def test_a_table_that_differs_from_its_rows_fails_the_check_and_is_rewritten(tmp_path, capsys):
    page = _page(tmp_path, "| payment | seed | success_rate |\n|---|---|---|\n| bucket_brigade | 0 | 0.99 |\n")
    assert tables.main(["--check", str(page)]) == 1
    assert "differs from its rows" in capsys.readouterr().err
    assert tables.main([str(page)]) == 0
    text = page.read_text()
    assert "| final_only | 4 | 0.03 |" in text and "0.99" not in text
    assert tables.main(["--check", str(page)]) == 0


def test_formatting_alone_is_no_difference(tmp_path):
    rows = [json.loads(line) for line in (ROOT / ROWS).read_text().splitlines()]
    body = "| payment | seed | success_rate |\n|:--|--:|--:|\n" + "".join(
        f"|  {r['payment']} | {r['seed']} | {r['success_rate']:.3f} |\n" for r in rows)
    assert tables.main(["--check", str(_page(tmp_path, body))]) == 0


def test_rows_without_provenance_or_file_are_refused(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"payment": "x", "seed": 0, "success_rate": 1.0, "command": "c", "date": "d"}) + "\n")
    page = tmp_path / "page.md"
    page.write_text(f"<!-- table: {rows} | payment, seed -->\n<!-- end table -->\n")
    assert tables.main(["--check", str(page)]) == 2
    assert "lacks commit, machine" in capsys.readouterr().err
    with rows.open("a") as f:  # a sidecar row (none of the table's columns) may carry them for every row
        f.write(json.dumps({"commit": "abc", "machine": "m"}) + "\n")
    assert tables.main([str(page)]) == 0 and "| x | 0 |" in page.read_text()
    page.write_text("<!-- table: benchmarks/results/missing.jsonl | a -->\n<!-- end table -->\n")
    assert tables.main(["--check", str(page)]) == 2
    assert "missing.jsonl: no such rows file" in capsys.readouterr().err


def _leaves(prefix: str, value) -> list[str]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(f"{prefix}.{k}", v)]
    return [prefix]


def test_config_reference_lists_every_key_of_every_scenario_file():
    """Every key an experiment holds (its config as stored with a run), for every shipped scenario file, is in
    the reference with a type and a default; and every dataclass field is, at any depth."""
    reference = config_reference.markdown()
    listed = {k.dotted for k in config_reference.all_keys()}
    for path in sorted(SCENARIO_DIR.glob("*.toml")):
        exp = load(str(path))
        keys = [leaf for section, values in exp.to_dict().items() for leaf in _leaves(section, values)]
        missing = sorted(set(keys) - listed)
        assert not missing, f"{path.name}: keys missing from the config reference: {missing}"
    for section, cls in config_reference.sections():
        def walk(prefix, klass):
            for f in dataclasses.fields(klass):
                if config_reference.plugins(klass, f.name):  # each plugin's: tests/agents/test_plugin_settings.py
                    continue
                inner = config_reference.nested(klass, f.name)
                yield from walk(f"{prefix}.{f.name}", inner) if inner else [f"{prefix}.{f.name}"]
        for key in walk(section, cls):
            table, name = key.rsplit(".", 1)  # a table shared by several scenarios is named beside its one heading
            assert key in listed and f"`[{table}]`" in reference and f"| `{name}` |" in reference, key


def test_every_config_key_has_a_description():
    """Every key of every section, plugin settings included, says what it does (a docstring under the field in its
    dataclass)."""
    assert config_reference.undescribed() == []


def test_config_reference_shows_scenario_values_and_shared_tables_once():
    reference = config_reference.markdown()
    files = config_reference.scenario_values()
    assert files["run.episodes"]["relay"] == "1000"  # scenarios/relay.toml's [run] episodes, beside the default 300
    assert "relay: `1000`" in reference
    assert reference.count("| `max_model_len` |") == 1  # the LLM worlds' [NAME.llm] tables, shown once
    assert "`[wordmath.llm]`" in reference and "### `[SCENARIO.llm]`" in reference
    assert "### `[agents.objective_settings.tree_opsd]`" in reference and "### `[agents.task_settings.rods]`" in reference
    assert "| `kl_coef` |" not in reference and "| `tau` |" in reference  # agents.kl is the one KL key


def test_config_reference_reads_types_bounds_and_docstrings():
    keys = {k.dotted: k for k in config_reference.all_keys()}
    batch = keys["market.batch"]
    assert (batch.type, batch.default, batch.bounds) == ("int", "1", ">= 1, <= 65536")
    assert batch.doc.startswith("B: episodes run in lockstep")
    assert keys["market.clearing"].type.startswith('"first_price" \\| "second_price"')
    assert keys["agents.credit_settings.delta_ttg.rho"].section == "agents.credit_settings.delta_ttg"


def test_nothing_points_outside_the_repository():
    found = subprocess.run(["grep", "-rn", r"\.\./shared\|CREDIT_METHODS.md", "README.md", "docs", "agents",
                            "market", "skills", "scenarios"], cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 1, found.stdout


@pytest.mark.slow
def test_site_builds_in_strict_mode(tmp_path):
    """mkdocs build --strict: a missing nav page, a broken link or anchor, a docstring mkdocstrings cannot
    render, a stale table is a failure. Notebooks render as stored (executed, with their outputs:
    docs/store_notebooks.py); tests/test_notebooks.py runs them."""
    env = {**os.environ, "DOCS_CACHE_DIR": str(tmp_path / "cache"), "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    config = (site / "reference" / "config" / "index.html").read_text()
    assert "checkpoint_seconds" in config and "credit_settings.delta_ttg" in config
    assert "catallax run" in (site / "reference" / "cli" / "index.html").read_text()
    assert re.search(r"Rows: <code>benchmarks/results/relay_payment\.jsonl</code>, from <code>python -m experiments",
                     (site / "results" / "relay" / "index.html").read_text())
    api = (site / "reference" / "api" / "index.html").read_text()
    for name in ("scenarios.text.world.TextWorld.act", "agents.llm.task.Role", "agents.llm.prompts.Prompts",
                 "agents.backends.base.BackendConfig", "scenarios.run.experiment.Experiment", "market.model.MarketModel",
                 "agents.rule_policy.RulePolicy", "scenarios.report.data.open_run", "scenarios.run.runner.build_model",
                 "agents.credit.base.Trajectory", "agents.objectives.batch.PolicyBatch", "agents.learners.base.RoundLearner.loss"):
        entry = api[api.index(f'id="{name}"'):][:8000]  # the entry, its Args ("Parameters") table within it
        assert "Parameters" in entry, f"{name}: no Args section in the API reference"
    summary = (site / "reference" / "summary" / "index.html").read_text()
    assert "heldout_accuracy_initial" in summary and "blame_unread_by_imitation" in summary
    raw = [str(page.relative_to(site)) for page in site.rglob("*.html")
           if re.search(r":(class|func|meth|attr|mod|data|exc|obj):<code>", page.read_text())]
    assert not raw, f"Sphinx roles rendered as raw text in {raw}"
    pages = {p: p.read_text() for p in site.rglob("*.html")}  # offline: no script from the network, formulas drawn
    scripts = {p: re.findall(r"<script[^>]*>.*?</script>", h, re.S) for p, h in pages.items()}
    assert not [p for p, s in scripts.items() if any(re.search(r"src=\"(https?:)?//|https?://", x) for x in s)]
    assert "<math" in pages[site / "concepts" / "skills" / "index.html"]
    assert not [p for p, h in pages.items() if 'class="arithmatex"' in h]
    assert all("data:image/png" in pages[site / "notebooks" / nb.stem / "index.html"]  # tutorials show figures
               for nb in (ROOT / "notebooks").glob("*.ipynb"))
