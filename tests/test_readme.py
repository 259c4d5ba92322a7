"""Every ``catallax`` line and every Python block of the README's code runs, in a fresh folder; the README stays short.

A line runs as a user would type it (the ``catallax`` script in a subprocess, quoting read as the shell
reads it), with its ``[--...]`` optional parts and its ``# comment`` dropped, ``RUN_ID`` replaced by a toy
run made there first, and the toy-size arguments of TOY added. A line that cannot run here needs a SKIP
entry saying why, and a line with neither a toy size nor a SKIP entry fails: a command added to the README
is run or explicitly skipped, never silently untested. A ``python`` block runs as it is written (a user pastes
it), in the same folder. The README is at most MAX_LINES lines, and every file it links to exists.
"""

import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CATALLAX = Path(sys.executable).parent / "catallax"
OPTIONAL = re.compile(r"\[--[^\]]*\]")  # "[--db URL]"; not a TOML list such as "--set blocks.train_sizes=[4]"

# Toy-size arguments added to a line, keyed by the scenario it runs (run, sweep), else by its command.
TOY = {
    "relay": ["--set", "run.episodes=32"],
    "recsys": ["--set", "run.episodes=256"],  # one round of the shipped batch
    "bench": ["--quick"],  # every benchmark's smoke size
    "resume": [],  # resume and report act on RUN_ID, itself a toy run
    "report": [],
    "scenarios": [],
    "config": [],  # config show prints the effective config; it runs nothing
    "spoilage.py": ["--set", "run.episodes=32"],  # the tutorial's world, named by lab/spoilage.toml
    "quotes.py": ["--set", "run.episodes=4"],  # the LLM tutorial's world (SmolLM2 on the CPU): one round
}

# Files the README's lines name, made in the folder before they run: copies, or a notebook's %%writefile cell.
FILES = {"path/to/my_scenario.toml": ROOT / "scenarios" / "relay.toml",
         "lab/spoilage.py": ROOT / "notebooks" / "tutorial_my_economy.ipynb",
         "lab/spoilage.toml": ROOT / "notebooks" / "tutorial_my_economy.ipynb",
         "lab/quotes.py": ROOT / "notebooks" / "tutorial_llm_economy.ipynb",
         "lab/quotes.toml": ROOT / "notebooks" / "tutorial_llm_economy.ipynb"}

# Lines that cannot run here: a pattern searched in the line as the README writes it -> why. Most of what
# cannot run here (a Ray cluster's --address, a PostgreSQL --db URL) sits in the lines' optional parts.
SKIP: dict[str, str] = {}
MAX_LINES = 250  # a researcher reads it in ten minutes; the rest is the docs site (docs/, mkdocs.yml)


def readme_lines(text: str) -> list[str]:
    """The lines of fenced code blocks that start with ``catallax``, each with its indented continuation lines."""
    lines = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M):
        command = None
        for line in block.splitlines():
            if line.startswith("catallax "):
                command = line
                lines.append(command)
            elif command is not None and line[:1].isspace() and line.strip():  # a command wrapped onto the next line
                lines[-1] += "\n" + line
            else:
                command = None
    return lines


README = (ROOT / "README.md").read_text()
LINES = readme_lines(README)
PYTHON = re.findall(r"^```python\n(.*?)^```", README, re.S | re.M)


def catallax(folder: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(CATALLAX), *args], cwd=folder, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"catallax {shlex.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc


def toy_key(args: list[str], folder: Path) -> str:
    """The TOY key of ``catallax ARGS``: the scenario of run and sweep (a .toml file's [run] scenario), else the command."""
    if args[0] not in ("run", "sweep"):
        return args[0]
    if args[1].endswith(".toml"):
        return tomllib.loads((folder / args[1]).read_text())["run"]["scenario"]
    return args[1]


def written_by(notebook: Path, name: str) -> str:
    """The text a notebook's ``%%writefile NAME`` cell writes: the README's example is the tutorial's file."""
    for cell in json.loads(notebook.read_text())["cells"]:
        source = "".join(cell["source"])
        if source.startswith(f"%%writefile {name}\n"):
            return source.split("\n", 1)[1] + "\n"
    raise LookupError(f"{notebook.name} writes no {name}")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A fresh folder holding FILES and one toy relay run in runs/catallax.db: its summary, for RUN_ID."""
    folder = tmp_path_factory.mktemp("readme")
    for name, source in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        if source.suffix == ".ipynb":
            (folder / name).write_text(written_by(source, Path(name).name))
        else:
            shutil.copy(source, folder / name)
    made = json.loads(catallax(folder, "run", "relay", "--json", *TOY["relay"]).stdout.splitlines()[-1])
    return folder, made


def test_lines_come_from_code_blocks_only_with_their_wrapped_parts():
    text = ("Prose: catallax run prose\n\n```bash\ncatallax run relay --json   # a comment\nmake run\n```\n"
            "`catallax run inline`\n```\ncatallax sweep relay --seeds 3\n      [--address RAY_ADDRESS]\n\n  unrelated\n```\n")
    assert readme_lines(text) == ["catallax run relay --json   # a comment",
                                  "catallax sweep relay --seeds 3\n      [--address RAY_ADDRESS]"]
    assert LINES, "no catallax line found in the README's code blocks"
    for pattern in SKIP:
        assert any(re.search(pattern, line) for line in LINES), f"SKIP entry {pattern!r} matches no README line"


@pytest.mark.slow
@pytest.mark.parametrize("line", LINES, ids=[" ".join(shlex.split(OPTIONAL.sub("", line), comments=True))
                                             for line in LINES])
def test_readme_line_runs(line, workdir):
    for pattern, why in SKIP.items():
        if re.search(pattern, line):
            pytest.skip(why)
    folder, made = workdir
    args = [made["run_id"] if a == "RUN_ID" else a for a in shlex.split(OPTIONAL.sub("", line), comments=True)][1:]
    key = toy_key(args, folder)
    if key not in TOY:
        pytest.fail(f"no toy size for {key!r}: add it to TOY in tests/test_readme.py, or the line to SKIP with why")
    out = catallax(folder, *args, *TOY[key]).stdout
    assert "conservation_ok: False" not in out and '"conservation_ok": false' not in out
    if "--json" in args:
        summary = json.loads(out.splitlines()[-1])
        if summary.get("run_id") == made["run_id"]:  # resumed: the same run ends with the same ledger
            assert summary["ledger_hash"] == made["ledger_hash"]


def test_readme_is_short_and_its_links_resolve():
    assert len(README.splitlines()) <= MAX_LINES
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if "://" not in link]
    assert local, "the README links no docs page"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


@pytest.mark.slow
@pytest.mark.parametrize("code", PYTHON, ids=[f"python-{i}" for i in range(len(PYTHON))])
def test_readme_python_block_runs(code, workdir):
    folder, _ = workdir
    proc = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    if "final_balance" in code:  # the tour's block prints the success rate and the money that is not accounted for
        assert proc.stdout.split()[-1] == "0"
