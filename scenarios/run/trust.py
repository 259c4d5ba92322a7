"""Which scenario code a stored run may load: what the user names, or what the run started with, byte for byte.

A results database is data someone else may have written. Its ``[run] scenario`` names the code a resume
would import; a plugin (a ``.py`` file, a dotted module path) named there runs only when

* the user names the same plugin on the command line (``catallax resume ID --scenario PATH``), or
* the files importing it executes hash to what was stored when the run started (:func:`stamp`, under
  :data:`KEY` in the stored config), at the same absolute path.

Built-in scenarios and installed entry points are code the user installed and are loaded as before. A
plugin whose files resolve (symlinks followed) into the Python installation (:func:`installation`: the
standard library, site-packages, the virtual environment) is never loaded on a database's say-so, whether
it is named as a ``.py`` path or a dotted module: importing some of those files does things (``this``
prints, ``idlelib/idle.py`` opens a window), and their bytes are public, so a stored hash of them proves
nothing.
Anything else is a :class:`ConfigError` naming the stored path (exit 2); nothing is imported.
"""

from __future__ import annotations

import hashlib
import site
import sys
import sysconfig
from functools import cache
from importlib.machinery import PathFinder
from pathlib import Path

from scenarios.registry import SCENARIOS, plugin_names
from scenarios.run.config import ConfigError

KEY = "catallax:plugin"  # the stored config's entry: {"scenario": name, "sha256": hex} (not a config section)
MAX_PLUGIN_BYTES = 16 * 2**20  # a scenario file past this is not hashed (nor imported on a database's say-so)


def plugin_files(name: str) -> list[Path] | None:
    """The files that importing scenario ``name`` executes, found without executing any; None for code
    the user installed (a built-in, an entry point). Raises ConfigError when they cannot be found."""
    if name in SCENARIOS or name in plugin_names():
        return None
    if name.endswith(".py"):
        path = Path(name)
        if not path.is_absolute():
            raise ConfigError(f"run.scenario = {name!r}: a stored plugin path must be absolute")
        return _outside_installation(name, [path])
    parts = name.split(".")
    if not all(p.isidentifier() for p in parts):
        raise ConfigError(f"run.scenario = {name!r}: not a scenario name, .py file or dotted module path")
    files, search = [], [str(Path.cwd())] + [p for p in sys.path if p]
    for i in range(len(parts)):
        spec = PathFinder.find_spec(".".join(parts[: i + 1]), search)
        if spec is None or not spec.origin or not spec.has_location:
            raise ConfigError(f"run.scenario = {name!r}: no such module")
        files.append(Path(spec.origin).resolve())
        search = list(spec.submodule_search_locations or [])
    return _outside_installation(name, files)


@cache
def installation() -> frozenset[Path]:
    """The folders of the Python installation, resolved: the running environment's and its base
    interpreter's sysconfig paths (standard library, site-packages, scripts), site's package folders, and
    the virtual environment itself."""
    schemes = [sysconfig.get_paths(),
               sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
                                         "installed_base": sys.base_prefix, "installed_platbase": sys.base_exec_prefix})]
    folders = [p for paths in schemes for k, p in paths.items() if k != "data"]  # data is a prefix: /usr, say
    folders += [*site.getsitepackages(), site.getusersitepackages()]
    if sys.prefix != sys.base_prefix:  # a virtual environment: all of it (its own folder holds nothing else)
        folders.append(sys.prefix)
    return frozenset(Path(f).resolve() for f in folders if f)


def _outside_installation(name: str, files: list[Path]) -> list[Path]:
    """``files`` when none resolves into :func:`installation`; else a ConfigError naming the one that does."""
    for f in files:
        real = f.resolve()
        if any(folder == real or folder in real.parents for folder in installation()):
            raise ConfigError(f"run.scenario = {name!r}: a file of the Python installation ({real}), not a "
                              "scenario plugin; a stored run cannot name one (install it as an entry point)")
    return files


def digest(files: list[Path]) -> str:
    """sha256 over each file's absolute path and bytes: regular files under :data:`MAX_PLUGIN_BYTES` only
    (a FIFO, a device or a huge file is refused, not read)."""
    h = hashlib.sha256()
    for path in files:
        if not path.is_file():
            raise ConfigError(f"run.scenario: {path}: no such scenario file")
        if path.stat().st_size > MAX_PLUGIN_BYTES:
            raise ConfigError(f"run.scenario: {path}: larger than {MAX_PLUGIN_BYTES} bytes")
        h.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def stamp(scenario: str) -> dict:
    """What a run stores beside its config when it starts: ``{KEY: {...}}`` for a plugin, {} otherwise
    (and for a module of the Python installation, which a resume must be told again with --scenario)."""
    try:
        files = plugin_files(scenario)
        return {} if files is None else {KEY: {"scenario": scenario, "sha256": digest(files)}}
    except ConfigError:
        return {}


def checked(config: dict, source: str, named: str | None = None) -> dict:
    """A stored config whose scenario may be imported, without its :data:`KEY` entry (what ``from_dict``
    reads). ``named``: the scenario the user gave on the command line (trusted when it is the stored one)."""
    if not isinstance(config, dict):
        raise ConfigError(f"{source}: run.config: not a JSON object")
    run = config.get("run")
    scenario = run.get("scenario") if isinstance(run, dict) else None
    if not isinstance(scenario, str):
        raise ConfigError(f"{source}: run.config: run.scenario is missing or not a string")
    rest = {k: v for k, v in config.items() if k != KEY}
    try:
        files = plugin_files(scenario)
        if files is None:
            return rest
        if named is not None:
            if _same(named, scenario):
                return rest
            raise ConfigError(f"run.scenario = {scenario!r}, but --scenario names {named!r}")
        stored = config.get(KEY)
        if not (isinstance(stored, dict) and stored.get("scenario") == scenario
                and isinstance(stored.get("sha256"), str)):
            raise ConfigError(f"run.scenario = {scenario!r}: no content hash was stored for this plugin when the run "
                              f"started, so it is not imported (if you trust it: --scenario {scenario})")
        if digest(files) != stored["sha256"]:
            raise ConfigError(f"run.scenario = {scenario!r}: its files differ from those the run started with, so "
                              f"it is not imported (if you trust it: --scenario {scenario})")
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from None
    return rest


def _same(named: str, scenario: str) -> bool:
    """Whether the command line's scenario is the stored one (a .py file: the same absolute path)."""
    if named.endswith(".py") and scenario.endswith(".py"):
        return Path(named).resolve() == Path(scenario)
    return named == scenario
