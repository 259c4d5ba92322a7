"""``catallax skills list|show|export|import|lineage``: a skill library in a results database.

    catallax skills list    [--all] [--run RUN_ID | --library NAME] [--db URL] [--json]
    catallax skills show    NAME[@VERSION]           (the version as SKILL.md text)
    catallax skills export  FOLDER                   (SKILL.md folders, every version)
    catallax skills import  FOLDER
    catallax skills lineage [NAME[@VERSION]] [--path FROM TO] [--agents [AGENT_ID]]

``--run`` reads the library of a run (named by its id; ``--agents`` then shows
the run's agent lineage); ``--library`` a named one (default ``default``).
``lineage`` shows where an LLM agent's skill came from (wordmath: ``(pool)``, or
``agent 7 (exploit)``: the birth whose rewrite wrote it, and its parent). Only
``import`` writes, and only to an existing or new database it was pointed at.
"""

from __future__ import annotations

import argparse
import json
from contextlib import nullcontext
from pathlib import Path

from market.escape import terminal as shown
from market.store import make_engine, run_exists, snapshot
from scenarios.cli.run import database_url, store_errors
from scenarios.run.config import ConfigError
from skills import SkillError, SkillLibrary, ancestors, descendants, edit_path, export_library, import_library
from skills.library import current_of
from skills.lineage import agent_graph, skill_graph
from skills.skillmd import read_folder, render


def add_parser(subparsers):
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", help="SQLAlchemy URL of the results database (default: sqlite file in --out)")
    common.add_argument("--out", type=Path, default=Path("runs"), help="output folder (default: runs/)")
    which = common.add_mutually_exclusive_group()
    which.add_argument("--run", help="the library of this run (and its agents' lineage)")
    which.add_argument("--library", default="default", help="a named library (default: default)")
    common.add_argument("--json", action="store_true", help="print the result as one JSON line last")

    p = subparsers.add_parser("skills", help="the skill library: list, show, export, import, lineage")
    actions = p.add_subparsers(dest="action", required=True)
    a = actions.add_parser("list", parents=[common], help="the current skills (--all: every version)")
    a.add_argument("--all", action="store_true", help="every version, rejected and retired ones included")
    a = actions.add_parser("show", parents=[common], help="one version as SKILL.md text")
    a.add_argument("skill", help="NAME (its newest version not rejected) or NAME@VERSION")
    a = actions.add_parser("export", parents=[common], help="write SKILL.md folders (every version)")
    a.add_argument("folder", type=Path)
    a = actions.add_parser("import", parents=[common], help="read SKILL.md folders into the library")
    a.add_argument("folder", type=Path)
    a = actions.add_parser("lineage", parents=[common], help="version lineage (or --agents: agent lineage)")
    a.add_argument("node", nargs="?", help="NAME[@VERSION] (with --agents: an agent id): its ancestors and descendants")
    a.add_argument("--path", nargs=2, metavar=("FROM", "TO"), help="the edits that lead from one version to another")
    a.add_argument("--agents", action="store_true", help="the run's agents (parent -> child), needs --run")
    return p


def handle(args) -> int:
    if args.action == "export" and args.folder.exists() and not args.folder.is_dir():
        raise ConfigError(f"{args.folder}: not a folder; export into a new folder")
    url = database_url(args.db, args.out, must_exist=args.action != "import", writes=args.action == "import")
    if args.action == "import":
        _checked(read_folder, args.folder)  # a bad file is reported before any database is touched
    if args.db is None and args.action == "import":
        args.out.mkdir(parents=True, exist_ok=True)
    writes = args.action == "import"
    with store_errors():  # not a database, unreachable, unknown schema: one line, exit 2
        engine = make_engine(url, readonly=not writes)  # the others open it read-only: they change nothing
    try:
        with nullcontext(engine) if writes else snapshot(engine) as bind:  # a reader sees one moment of the database
            if args.run is not None and not run_exists(bind, args.run):
                raise ConfigError(f"--run {args.run}: not found in {url}")
            library = SkillLibrary(bind, args.run or args.library, create=writes)
            result = _checked(ACTIONS[args.action], library, args)
    finally:
        engine.dispose()
    if args.json:
        print(json.dumps(result))
    return 0


def _checked(fn, *args):
    """Call ``fn``; a bad skill, file, version or path becomes the one-line ConfigError the CLI prints."""
    try:
        return fn(*args)
    except (SkillError, KeyError, ValueError) as err:
        raise ConfigError(str(err.args[0] if isinstance(err, KeyError) else err)) from None
    except (TypeError, OverflowError) as err:  # a skill row of a foreign database SQLAlchemy cannot convert
        raise ConfigError(f"skill tables: a stored value of the wrong type ({type(err).__name__}: "
                          f"{' '.join(str(err).split())[:120]})") from None


def _row(v, current: set, operator: str | None, gate: str | None) -> dict:
    return {"label": v.label, "name": v.name, "version": v.version, "role": v.role, "status": v.status,
            "current": v.id in current, "operator": operator, "gate": gate, "description": v.description}


def list_skills(library: SkillLibrary, args) -> list[dict]:
    versions, edits = library.versions(), library.edits()
    current = {v.id for v in current_of(versions)}
    rows = [_row(v, current, edits[v.edit_id].operator if v.edit_id else None,
                 edits[v.edit_id].gate if v.edit_id else None)
            for v in versions if args.all or v.id in current]
    if not args.json:
        for r in rows:
            mark = "*" if r["current"] else " "
            print(shown(f"{mark} {r['label']:<32} {r['role'] or '-':<10} {r['status']:<8} {r['operator'] or '-':<7} "
                        f"{r['gate'] or '-':<9} {r['description'][:60]}"))
        scope = "" if args.all else " (current; --all for every version)"
        print(f"{len(rows)} version(s) in library {library.name!r}{scope}")
    return rows


def show(library: SkillLibrary, args) -> dict:
    versions, edits = library.versions(), library.edits()
    skill = library.get(args.skill)
    labels = {v.id: v.label for v in versions}
    text = render(skill, labels, edits.get(skill.edit_id))
    if not args.json:
        print(shown(text, keep="\n\t"), end="")
    return {"label": skill.label, "skill_md": text}


def export(library: SkillLibrary, args) -> dict:
    paths = export_library(library, args.folder)
    skills = len({p.relative_to(args.folder).parts[0] for p in paths})
    if not args.json:
        print(f"exported {len(paths)} version(s) of {skills} skill(s) from library {library.name!r} to {args.folder}")
    return {"folder": str(args.folder), "versions": len(paths), "skills": skills}


def import_(library: SkillLibrary, args) -> dict:
    rows = import_library(library, args.folder)
    if not args.json:
        print(f"imported {len(rows)} version(s) from {args.folder} into library {library.name!r}")
    return {"folder": str(args.folder), "versions": len(rows), "library": library.name}


def lineage(library: SkillLibrary, args) -> dict:
    if args.agents:
        if args.run is None:
            raise ValueError("lineage --agents: needs --run RUN_ID")
        g = agent_graph(library.engine, args.run)
        node = None if args.node is None else int(args.node) if args.node.isdigit() else args.node
    else:
        g = skill_graph(library)
        node = None if args.node is None else library.get(args.node).label
    if args.path:
        source, target = (library.get(ref).label for ref in args.path) if not args.agents else map(int, args.path)
        steps = edit_path(g, source, target)
        if not args.json:
            for u, v, operator in steps:
                print(shown(f"{u} -> {v}" + (f"  ({operator})" if operator else "")))
        return {"path": [[u, v, op] for u, v, op in steps]}
    origins = {} if args.agents else _origins(library)
    if node is not None:
        up, down = ancestors(g, node), descendants(g, node)
        if not args.json:
            print(shown(f"{node}\n  ancestors:   {', '.join(map(str, up)) or '-'}", keep="\n"))
            print(shown(f"  descendants: {', '.join(map(str, down)) or '-'}"))
            if node in origins:
                print(shown(f"  origin:      {_origin_text(origins[node])}"))
        return {"node": node, "ancestors": up, "descendants": down, **origins.get(node, {})}
    if not args.json:
        for n in g.nodes:
            parents = [f"{p} ({d['operator']})" if d.get("operator") else str(p)
                       for p, _, d in g.in_edges(n, data=True)]
            if not parents and n in origins:
                parents = [_origin_text(origins[n])]
            print(shown(f"{n}" + (f" <- {', '.join(parents)}" if parents else "")))
    return {"nodes": [{"id": n, **d, **origins.get(n, {})} for n, d in g.nodes(data=True)],
            "edges": [[u, v] for u, v in g.edges]}


def _origins(library: SkillLibrary) -> dict[str, dict]:
    """label -> where a version came from, for versions whose edit's diagnosis names an ``origin`` (an LLM
    agent's skill line, skills/catalogue.py: the pool, a seeded agent, or a birth with its parent agent)."""
    edits, out = library.edits(), {}
    for v in library.versions():
        edit = edits.get(v.edit_id)
        try:
            diagnosis = json.loads(edit.diagnosis) if edit is not None and edit.diagnosis else None
        except json.JSONDecodeError:
            continue
        if isinstance(diagnosis, dict) and "origin" in diagnosis:
            out[v.label] = {k: diagnosis[k] for k in ("origin", "agent", "parent_agent") if k in diagnosis}
    return out


def _origin_text(origin: dict) -> str:
    if origin.get("parent_agent") is not None:
        return f"agent {origin['parent_agent']} ({origin['origin']})"
    return f"({origin['origin']})"


ACTIONS = {"list": list_skills, "show": show, "export": export, "import": import_, "lineage": lineage}
