"""Generated SKILL.md folders and database rows through ``skills import``, ``skills export``, ``report`` and
``resume`` (issue 52): random bytes, extreme numbers, wrong types, symlinks, planted plugin paths. Every
command must exit 0 or 2 (never a traceback), write nothing outside the folder it was named, run no stored
code (a planted plugin's marker never appears) and stay within bounded memory.

The normal suite runs a small budget (a few examples a command). The large run, >= 10^4 inputs across the
four commands (CATALLAX_FUZZ examples each)::

    CATALLAX_FUZZ=2500 nice -n 10 python -m pytest -p no:cacheprovider tests/reliability/test_fuzz.py

(``CATALLAX_FUZZ_REPORT=N`` and the like set one command's count: a report draws its figures, ~1-3 s an
input, where the others take a fraction of a second.)
"""

import contextlib
import io
import json
import os
import shutil
import tracemalloc
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from market.store import make_engine
from scenarios.cli.main import main
from skills import SkillLibrary

EXAMPLES = int(os.environ.get("CATALLAX_FUZZ", "3"))


def fuzz(command: str):
    """Hypothesis settings for one command: CATALLAX_FUZZ examples, or CATALLAX_FUZZ_<COMMAND> (IMPORT, EXPORT,
    REPORT, RESUME) for that one; the small default budget is derandomized (the same examples every run)."""
    n = int(os.environ.get(f"CATALLAX_FUZZ_{command.upper()}", EXAMPLES))
    return settings(max_examples=n, deadline=None, derandomize=n <= 10, suppress_health_check=list(HealthCheck),
                    phases=list(Phase) if n <= 10 else [Phase.explicit, Phase.generate])  # a large run reports
    # a failure as found (shrinking one report input took ten minutes) and does not replay old ones
MAX_TRACED = 2**30  # bytes Python (numpy included) holds at its peak while one command runs: 1 GiB (an alias bomb
# would pass it). Traced per command, not the process's peak, which other tests in the same worker set.
PLANT = "evil.py"  # a plugin planted beside the sandbox: importing it writes MARKER
MARKER = "marker"


# ----------------------------------------------------------------------------------------------- harness
def cli(argv: list[str]) -> tuple[int, str]:
    """Run the CLI in this process: its exit code and stderr; any exception but SystemExit fails the test."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code
    code = 0 if code is None else code
    assert code in (0, 2), f"exit {code}: {err.getvalue()[-2000:]}"
    lines = err.getvalue().strip().splitlines()
    assert "Traceback" not in err.getvalue(), err.getvalue()
    if code == 2:  # one error line (after a resume's "run ID: resume with ..." hint, if it got that far)
        assert sum(line.startswith("catallax: error:") for line in lines) == 1 and lines[-1].startswith(
            "catallax: error:") and len(lines) <= 2, err.getvalue()
    return code, err.getvalue()


def listing(root: Path, skip: tuple[str, ...]) -> dict[str, tuple]:
    """Every entry under ``root`` (not following links) but the ``skip`` names at its top: kind, size, bytes."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        if rel.parts and rel.parts[0] in skip:
            continue
        for name in dirs + files:
            p = Path(dirpath) / name
            if not rel.parts and name in skip:
                continue
            st_ = p.lstat()
            data = p.read_bytes() if p.is_file() and not p.is_symlink() and st_.st_size < 2**20 else None
            out[str(p.relative_to(root))] = (st_.st_mode, st_.st_size, data)
    return out


@contextlib.contextmanager
def sandbox(root: Path, named: tuple[str, ...]):
    """``root`` holds the command's inputs, its named output and a decoy; the command may change only the
    ``named`` entries (its output folder, its database and journal files), and never import the plant."""
    skip = (*named, *(f"{n}-wal" for n in named), *(f"{n}-shm" for n in named), *(f"{n}-journal" for n in named))
    before = listing(root, skip)
    tracemalloc.start()
    try:
        yield
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    after = listing(root, skip)
    assert after == before, f"written outside the named folder: {sorted(set(after) ^ set(before))[:5]}"
    assert not (root / "decoy" / MARKER).exists(), "a stored plugin path was imported"
    assert peak < MAX_TRACED, f"{peak / 2**20:.0f} MiB at the peak"


def fresh(tmp: Path) -> Path:
    root = tmp / "box"
    shutil.rmtree(root, ignore_errors=True)
    decoy = root / "decoy"
    decoy.mkdir(parents=True)
    (decoy / "victim.txt").write_text("keep")
    (decoy / PLANT).write_text(f"from pathlib import Path\nPath({str(decoy / MARKER)!r}).write_text('ran')\n")
    return root


# -------------------------------------------------------------------------------------------- strategies
controls = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ["\x1b[2J", "\x1b]0;x\x07", "\r", "\u202e", "\x00", "```", "```rule", "---", "../..", "/", "é" * 300])
numbers = (st.integers(-2**70, 2**70) | st.floats() | st.sampled_from([2**63 - 1, -2**63, 2**63, 10**300, 99999])
           | st.integers(1, 4000).map(lambda n: int("9" * n)))
scalars = st.none() | st.booleans() | numbers | controls | st.binary(max_size=40)
paths_in = st.sampled_from(["{box}/decoy/evil.py", "{box}/decoy", "../../decoy/x", "/dev/zero", "{box}/decoy/victim.txt"])
json_values = st.recursive(st.none() | st.booleans() | numbers.filter(lambda x: not isinstance(x, float) or x == x)
                           | controls, lambda c: st.lists(c, max_size=3) | st.dictionaries(controls, c, max_size=3),
                           max_leaves=8)
yaml_values = st.one_of(controls.map(json.dumps), numbers.map(str), st.sampled_from(
    ["2020-01-01", "&a [x, *a]", "&a x", "*a", "!!python/object:os.system x", "[" * 50, "{a: {b: {c: d}}}", "yes",
     "~", "'²'", ".inf", "0x1F", "1e400", "-"]))


@st.composite
def skill_folders(draw):
    """A folder of skill folders: front matter and bodies with random values, plus symlinks, FIFOs, bytes."""
    names = draw(st.lists(st.sampled_from(["tidy", "a-b", "UP", "x y", "é", "tidy2"]) | controls.filter(
        lambda s: s and "/" not in s and "\x00" not in s and s not in (".", "..") and len(s.encode(errors="surrogatepass")) < 200),
        min_size=1, max_size=3, unique=True))
    files = []
    for name in names:
        fields = draw(st.dictionaries(st.sampled_from(["name", "description", "license", "compatibility",
                                                       "allowed-tools", "metadata", "bogus"]), yaml_values, max_size=6))
        fields.setdefault("name", name if draw(st.booleans()) else draw(yaml_values))
        meta = draw(st.dictionaries(st.sampled_from(["version", "status", "parent", "created", "edit-operator",
                                                     "edit-target", "edit-created", "edit-diagnosis", "role"]),
                                    yaml_values, max_size=4))
        front = "".join(f"{k}: {v}\n" for k, v in fields.items() if k != "metadata")
        if meta:
            front += "metadata:\n" + "".join(f"  {k}: {v}\n" for k, v in meta.items())
        body = draw(controls | st.sampled_from(["x" * 100_001, "ok", "a\n\n```rule\nx -> y\n```"]))
        text = draw(st.sampled_from([f"---\n{front}---\n{body}\n", f"---\n{front}---\n", front]))
        raw = draw(st.none() | st.binary(max_size=200))
        where = draw(st.sampled_from(["SKILL.md", "versions/v2.md", "versions/v1.md"]))
        kind = draw(st.sampled_from(["file", "file", "file", "bytes", "symlink", "fifo", "dir"]))
        files.append((name, where, kind, raw if kind == "bytes" else text, draw(paths_in)))
    return files


def write_folders(root: Path, files) -> Path:
    src = root / "in"
    for name, where, kind, content, target in files:
        path = src / name / where
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() or path.is_symlink():
            continue
        if kind == "symlink":
            os.symlink(target.format(box=root), path)
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "dir":
            path.mkdir()
        elif kind == "bytes":
            path.write_bytes(content or b"")
        else:
            path.write_text(content, errors="surrogateescape")
    src.mkdir(exist_ok=True)
    return src


COLUMNS = {
    "run": ["config", "summary", "status", "episodes", "seed", "scenario", "started_at", "ledger_hash", "finished_at"],
    "agent": ["agent_id", "parent_id", "born_episode", "died_episode", "final_wealth", "skill", "tokens"],
    "transfer_log": ["amount", "src", "dst", "episode", "step", "reason", "id"],
    "episode_log": ["reward", "steps", "population", "success", "id"],
    "checkpoint": ["episodes_done", "transfers", "state"],
    "run_number": ["num"],
    "skill": ["name", "version", "description", "body", "rule", "status", "extra", "role", "parent_id", "created_at"],
    "skill_edit": ["operator", "target", "diagnosis", "score_before", "created_at"],
}


@st.composite
def mutations(draw, tables):
    """1-3 UPDATEs of a random column of a random row, to a random value (or a config naming the plant)."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        table = draw(st.sampled_from(tables))
        column = draw(st.sampled_from(COLUMNS[table]))
        if table == "run" and column == "config" and draw(st.booleans()):
            value = {"scenario": draw(paths_in), "junk": draw(json_values), "stamp": draw(st.booleans())}
        else:
            value = draw(scalars | json_values.map(json.dumps) | paths_in)
        out.append((table, column, value, draw(st.sampled_from(["first", "all"]))))
    return out


def mutate(db: Path, root: Path, changes) -> None:
    con = sqlite3.connect(db)
    for table, column, value, rows in changes:
        if isinstance(value, dict):  # a stored config that names the planted plugin
            config = json.loads(con.execute("SELECT config FROM run").fetchone()[0])
            config["run"]["scenario"] = value["scenario"].format(box=root)
            config["market"] = value["junk"] if not isinstance(value["junk"], dict) else config.get("market")
            if value["stamp"]:
                config["catallax:plugin"] = {"scenario": config["run"]["scenario"], "sha256": "0" * 64}
            value = json.dumps(config)
        elif isinstance(value, str):
            value = value.replace("{box}", str(root))
        where = "" if rows == "all" else f" WHERE rowid = (SELECT min(rowid) FROM {table})"
        try:
            con.execute(f"UPDATE {table} SET {column} = ?{where}", (value,))
        except (sqlite3.IntegrityError, OverflowError):
            continue
    con.commit()
    con.close()


# -------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> dict[str, Path]:
    """A finished relay run, the same run stopped part-way (to resume), and a skill library with an edit."""
    folder = tmp_path_factory.mktemp("templates")
    run_db = folder / "run.db"
    code, _ = cli(["run", "relay", "--set", "run.episodes=6", "--set", "run.checkpoint_every=1",
                   "--db", f"sqlite:///{run_db}"])
    assert code == 0
    con = sqlite3.connect(run_db)
    run_id = con.execute("SELECT id FROM run").fetchone()[0]
    con.close()
    stopped = folder / "stopped.db"
    shutil.copy(run_db, stopped)
    con = sqlite3.connect(stopped)
    con.execute("UPDATE run SET status = 'interrupted', summary = NULL")
    con.commit()
    con.close()
    lib_db = folder / "lib.db"
    engine = make_engine(f"sqlite:///{lib_db}")
    library = SkillLibrary(engine)
    library.add("tidy", "Keep it tidy.", "Tidy up.", rule="x -> y")
    library.add("sweep", "Sweep the floor.", "Sweep.")
    engine.dispose()
    return {"run": run_db, "stopped": stopped, "lib": lib_db, "run_id": run_id}


# -------------------------------------------------------------------------------------------------- tests
@fuzz("import")
@given(files=skill_folders())
def test_skills_import_of_generated_folders(tmp_path_factory, files):
    root = fresh(tmp_path_factory.getbasetemp() / "fuzz-import")
    src = write_folders(root, files)
    with sandbox(root, ("lib.db", "out")):
        code, _ = cli(["skills", "import", str(src), "--db", f"sqlite:///{root / 'lib.db'}"])
        if code == 0:  # what was imported lists, shows and exports again
            cli(["skills", "list", "--all", "--db", f"sqlite:///{root / 'lib.db'}"])
            cli(["skills", "export", str(root / "out"), "--db", f"sqlite:///{root / 'lib.db'}"])


@fuzz("export")
@given(changes=mutations(["skill", "skill_edit"]), out=st.sampled_from(["out", "out/deeper", "decoy/victim.txt"]))
def test_skills_export_of_generated_rows(tmp_path_factory, templates, changes, out):
    root = fresh(tmp_path_factory.getbasetemp() / "fuzz-export")
    shutil.copy(templates["lib"], root / "lib.db")
    mutate(root / "lib.db", root, changes)
    url = f"sqlite:///{root / 'lib.db'}"
    with sandbox(root, ("lib.db", "out")):
        cli(["skills", "export", str(root / out), "--db", url])
        cli(["skills", "list", "--all", "--db", url])
        cli(["skills", "show", "tidy", "--db", url])
        cli(["skills", "lineage", "--db", url])


@fuzz("report")
@given(changes=mutations(["run", "agent", "transfer_log", "episode_log", "checkpoint", "run_number"]),
       run_id=st.none() | controls.filter(lambda s: "\x00" not in s) | paths_in)
def test_report_of_generated_rows(tmp_path_factory, templates, changes, run_id):
    root = fresh(tmp_path_factory.getbasetemp() / "fuzz-report")
    shutil.copy(templates["run"], root / "run.db")
    mutate(root / "run.db", root, changes)
    run_id = templates["run_id"] if run_id is None else run_id.replace("{box}", str(root))
    assume(not run_id.startswith("-"))  # argparse would read it as an option
    with sandbox(root, ("run.db", "out")):
        cli(["report", run_id, "--db", f"sqlite:///{root / 'run.db'}", "--out", str(root / "out")])


@fuzz("resume")
@given(changes=mutations(["run", "agent", "transfer_log", "episode_log", "checkpoint", "run_number"]))
def test_resume_of_generated_rows(tmp_path_factory, templates, changes):
    root = fresh(tmp_path_factory.getbasetemp() / "fuzz-resume")
    shutil.copy(templates["stopped"], root / "run.db")
    mutate(root / "run.db", root, [c for c in changes if not (c[0] == "run" and c[1] == "episodes")])
    with sandbox(root, ("run.db",)):
        cli(["resume", templates["run_id"], "--db", f"sqlite:///{root / 'run.db'}"])
