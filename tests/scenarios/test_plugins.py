"""Scenarios written outside the package (scenarios/registry.py): a .py file named by a TOML, a dotted module
path, an installed entry point; and the one-line errors a plugin author meets."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.cli.main import main
from tests.scenarios.ladder import CLIMBERS, ladder

CATALLAX = str(Path(sys.executable).with_name("catallax"))

WORLD = '''
"""A ladder: climb three rungs; each rung has its own climber."""
import numpy as np
from pydantic.dataclasses import dataclass

from agents import RulePolicy, RuleSpace
from market import World

CATALLAX_API = 1


@dataclass
class Config:
    rungs: int = 3

''' + ladder() + '''

def build(cfg):
    world = Ladder(cfg)
    space = ''' + CLIMBERS + '''
    return world, RulePolicy(space)


def metrics(model, episodes, cfg):
    return {"climbed": sum(e["success"] for e in episodes) / len(episodes)}
'''


def write_world(folder: Path, name: str = "ladder.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(WORLD)
    return path


def run_cli(argv, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_:
        sys.exit(main(argv))
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


def test_a_py_file_named_by_its_toml_runs_and_resumes(tmp_path, capsys):
    world = write_world(tmp_path / "lab")
    toml = tmp_path / "lab" / "ladder.toml"
    toml.write_text('[run]\nscenario = "ladder.py"\nepisodes = 64\n\n[market]\nbatch = 4\n\n[ladder]\nrungs = 2\n')
    code, out, _ = run_cli(["run", str(toml), "--json", "--out", str(tmp_path / "runs")], capsys)
    summary = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and summary["conservation_ok"] and 0 <= summary["climbed"] <= 1
    assert summary["scenario"] == str(world.resolve())  # stored whole, so resume finds it from anywhere
    code, out, _ = run_cli(["resume", summary["run_id"], "--json", "--out", str(tmp_path / "runs")], capsys)
    assert code == 0 and json.loads(out.strip().splitlines()[-1])["ledger_hash"] == summary["ledger_hash"]


def test_a_py_file_runs_on_its_defaults(tmp_path, capsys):
    world = write_world(tmp_path)
    code, out, _ = run_cli(["run", str(world), "--json", "--set", "run.episodes=20", "--out", str(tmp_path)], capsys)
    assert code == 0 and json.loads(out.strip().splitlines()[-1])["conservation_ok"]


def test_a_dotted_module_and_an_entry_point(tmp_path):
    """Real imports: a package in the working directory, and an installed distribution's entry point
    (a .dist-info folder on PYTHONPATH is what pip leaves behind)."""
    write_world(tmp_path / "my_lab", "auction_world.py")
    (tmp_path / "my_lab" / "__init__.py").write_text("")
    site = tmp_path / "site"
    write_world(site, "ladder_plugin.py")
    dist = site / "ladder_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ladder-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[catallax.scenarios]\nladder = ladder_plugin\n")
    env = {"PYTHONPATH": str(site), "PATH": str(Path(sys.executable).parent)}

    def catallax(*argv):
        done = subprocess.run([CATALLAX, *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    listed = {row["name"]: row for row in json.loads(catallax("scenarios", "--json"))}
    assert listed["ladder"]["kind"] == "plugin (ladder_plugin)" and listed["ladder"]["description"].startswith("A ladder")
    assert json.loads(catallax("run", "ladder", "--json", "--set", "run.episodes=20", "--set", "ladder.rungs=2"))["conservation_ok"]
    assert json.loads(catallax("run", "my_lab.auction_world", "--json", "--set", "run.episodes=20"))["conservation_ok"]


BROKEN = {  # what a plugin author gets wrong -> the line they see
    "import fails": (lambda src: src + "\nimport no_such_package_anywhere\n",
                     "does not import: ModuleNotFoundError: No module named 'no_such_package_anywhere'"),
    "no metrics": (lambda src: src + "\ndel metrics\n", "defines metrics; this one does not"),
    "build not a pair": (lambda src: src.replace("return world, RulePolicy(space)", "return world"),
                         "build(cfg) returned Ladder; expected (world, policy)"),
    "observe not [B, F]": (lambda src: src.replace("return self.at[:, None]", "return self.at"),
                           "world.observe() gave shape (4,)"),
    "another interface": (lambda src: src.replace("CATALLAX_API = 1", "CATALLAX_API = 2"),
                          "written for scenario interface 2; this catallax speaks 1"),
    "a value-bid default for a key value bids do not read": (
        lambda src: src + '\nfrom scenarios import ScenarioSpec\nSPEC = ScenarioSpec(value_bids={"margin": 0.3, "bid_margin": 0.3})\n',
        "ScenarioSpec.value_bids names 'bid_margin': value bids read margin, rate, newcomer, child, huber only "
        "(the keys of [agents.value])"),
    "a capability flag of the first interface": (
        lambda src: src + "\nORACLE = True\nBRANCHES = True\n",
        "ORACLE, BRANCHES: module flags are no longer read; declare SPEC = ScenarioSpec(oracle=..., branches=...)"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_plugin_is_one_line_and_exit_2(tmp_path, capsys, case):
    edit, message = BROKEN[case]
    world = write_world(tmp_path)
    world.write_text(edit(world.read_text()))
    code, out, err = run_cli(["run", str(world), "--set", "market.batch=4", "--out", str(tmp_path / "runs")], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert "ladder" in err  # it names the file
    assert not (tmp_path / "runs" / "catallax.db").exists()  # nothing written
