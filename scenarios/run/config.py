"""Load a scenario's TOML, apply ``--set key=value`` overrides, validate every key: the one config path.

A file's tables (scenarios/run/experiment.py: ``[run]``, ``[market]``, ``[population]``, ``[agents]``,
``[skills]`` and the scenario's own) become an :class:`Experiment` in three steps, each in one module: each
table read into its typed dataclass (scenarios/run/sections.py), the defaults that depend on other keys
derived by one pure function (scenarios/run/derived.py: the effective config, which the run stores), and
every rule across keys checked (scenarios/run/rules.py). No value is changed after it is parsed. Every problem
becomes a :class:`ConfigError` whose message names the file (or the ``--set``/``--seed`` that gave the
value), the key and the value (and the nearest valid key for a typo); the CLI turns it into one line and
exit code 2. A key that was renamed (:data:`RENAMED`) is read under its new name with a one-line warning.
"""

from __future__ import annotations

import copy
import re
import dataclasses
import tomllib
import warnings
from pathlib import Path

from agents.config import AgentsConfig
from market.config import MarketConfig, PopulationConfig
from scenarios.registry import SCENARIO_DIR, Scenario, ScenarioError, get_scenario, plugin_names
from scenarios.run import derived, rules
from scenarios.run.experiment import MAX_EPISODES, Experiment, RunConfig
from scenarios.run.sections import SECRET, ConfigError, did_you_mean, keys, section
from skills.config import SkillsConfig

__all__ = ["MAX_EPISODES", "RENAMED", "ConfigError", "DeprecatedKey", "Experiment", "RunConfig", "from_dict",
           "given_keys", "load", "parse_override", "resolve"]

RENAMED = {
    "agents.bids": "market.bid_scheme",
    "skills.group": "agents.group",
    **{f"agents.{old}": f"agents.value.{new}" for old, new in (
        ("bid_margin", "margin"), ("value_rate", "rate"), ("newcomer_value", "newcomer"), ("child_value", "child"),
        ("huber", "huber"))},
    **{f"agents.{old}": f"agents.reinforce.{new}" for old, new in (
        ("bid_scale", "scale"), ("init_std", "init_std"), ("advantage", "advantage"), ("entropy", "entropy"))},
    "agents.rule_logit": "agents.logits.rule_logit",
    **{f"agents.{old}": f"agents.lm.{new}" for old, new in (
        ("lora_rank", "lora_rank"), ("lm_lr", "lr"), ("lm_temperature", "temperature"))},
}
"""Old key -> the one name of its knob, the one map of renamed keys (a file's, a ``--set``'s, a stored run's).
``agents.bids`` was a second name of ``market.bid_scheme``, whose value ``market`` meant "the scheme the scenario
sets"; it is read as ``market.bid_scheme`` (``market``: not at all). ``skills.group`` was a second G, forced equal
to ``agents.group``. The learners' own keys left the flat ``[agents]`` for each learner's table (``[agents.value]``,
``[agents.reinforce]``, ``[agents.logits]``, ``[agents.lm]``). Each is read under its new name with one
:class:`DeprecatedKey` warning (one line, naming the new key), so the commands in stored results and users'
scripts keep running and say what to write instead."""


class DeprecatedKey(FutureWarning):
    """A renamed key was read under its new name (one line: the old key, the new one)."""



def resolve(name_or_path: str) -> Path | None:
    """A scenario name (``relay``) or a path to a .toml file -> the file; None for a scenario named without
    one (a plugin: an entry-point name, a .py file, a dotted module path), which runs on its defaults."""
    path = Path(name_or_path)
    if path.suffix == ".toml":
        if not path.is_file():
            raise ConfigError(f"{name_or_path}: no such scenario file")
        return path
    path = SCENARIO_DIR / f"{name_or_path}.toml"
    if path.is_file():
        return path
    plugins = plugin_names()  # found without importing any scenario
    if name_or_path.endswith(".py") or "." in name_or_path or name_or_path in plugins:
        return None
    known = sorted([*(p.stem for p in SCENARIO_DIR.glob("*.toml")), *plugins])
    raise ConfigError(f"{name_or_path}: unknown scenario{did_you_mean(name_or_path, known)} (known: {', '.join(known)}; "
                      f"or a .py file or a dotted module path)")


def parse_override(item: str) -> tuple[list[str], object]:
    """``market.batch=4`` -> (["market", "batch"], 4); values are TOML literals, else strings."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {item}: expected KEY=VALUE, e.g. market.batch=4")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except RecursionError:  # the parser recurses once per level: thousands of nested brackets
        raise ConfigError(f"--set {_shown(item)}: nested deeper than {MAX_NESTING} levels") from None
    except ValueError:  # TOMLDecodeError, or an integer past Python's digit limit (then "expected an integer")
        value = raw
    if _too_deep(key.strip(), value):
        raise ConfigError(f"--set {_shown(item)}: nested deeper than {MAX_NESTING} levels") from None
    return key.strip().split("."), value


def load(name_or_path: str, overrides: list[str] | dict = (), seed: int | None = None) -> Experiment:
    """The experiment of a scenario (a name, a .toml file or a plugin: :func:`resolve`) with ``overrides``:
    ``--set`` strings (``["market.batch=8"]``) or, from Python, a dict of dotted keys (``{"market.batch": 8}``).

    Args:
        name_or_path: A built-in scenario's name (``"relay"``), a scenario file (``"lab/my.toml"``), a plugin's
            ``.py`` file or dotted module path, or an installed plugin's entry-point name.
        overrides: Keys set on top of the file, as ``catallax run --set`` does: ``["market.batch=8"]`` or
            ``{"market.batch": 8}``. A renamed key is read under its new name, with a warning.
        seed: The run's seed (``run.seed``); None keeps the file's.

    Returns:
        The validated experiment: every section typed and checked, derived defaults filled in.

    Raises:
        ConfigError: An unknown scenario, key or file, a value of the wrong type or out of bounds, or a key the
            scenario cannot honour; its message is one line naming the file (or the ``--set``), the key and the value.
    """
    path, module = resolve(name_or_path), None
    if path is None:  # a plugin named directly: its defaults
        path, data = Path(name_or_path), {"run": {"scenario": name_or_path}}
    else:
        data = _read(path)  # renamed before the --set's, so a --set of the new name overrides a file's old one
        module = _scenario_of(data, path.parent)
        data = _renamed(data, module.spec.skill_library if module else None, str(path))
    named_scenario = data["run"]["scenario"]
    named = {}  # dotted key -> the --set that gave it, so a bad value is blamed on the --set, not the file
    for item in overrides.items() if isinstance(overrides, dict) else overrides:
        parts, value = parse_override(item) if isinstance(item, str) else (item[0].split("."), item[1])
        if (key := ".".join(parts)) in RENAMED:  # read as its new name, with the warning
            moved = _renamed(_nested(parts, value))
            *path, last = RENAMED[key].split(".")
            if last not in (_table_at(moved, path) or {}):  # agents.bids = "market": nothing to set
                continue
            parts = [*path, last]
        node = data
        for k in parts[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {_shown(item)}: {k!r} is not a section")
        old = node.get(parts[-1])
        node[parts[-1]] = _merged(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
        named.update((RENAMED.get(key, key), f"--set {_shown(item)}") for key in _leaves(".".join(parts), value))
    _drop_learners_turned_off(data, named)
    if seed is not None:
        data.setdefault("run", {})["seed"] = seed
        named["run.seed"] = f"--seed {seed}"
    run = data.get("run")
    if not (isinstance(run, dict) and run.get("scenario") == named_scenario):  # a --set named another scenario
        module = None
    try:
        return from_dict(data, source=str(path), module=module)
    except ConfigError as err:
        line = str(err).removeprefix(f"{path}: ")
        given = [flag for key, flag in named.items() if line.startswith((f"{key} =", f"{key}."))]
        raise ConfigError(f"{given[-1]}: {line}" if given else str(err)) from None


def _drop_learners_turned_off(data: dict, named: dict) -> None:
    """A ``--set`` that turns a learner off (``agents.actions=rule``; a ``market.bid_scheme`` other than learned)
    takes the file's settings of that learner with it: ``catallax run desk --set agents.actions=rule`` runs desk
    without its LoRA learner rather than refusing desk.toml's ``[agents.lm]``. A learner setting a ``--set`` gave
    is the user's own, and stays to be refused as unread (scenarios/run/rules.py)."""
    agents, off = data.get("agents", {}), []
    if "agents.actions" in named and agents.get("actions") == "rule":
        off += ["lm", "logits"]
    if "market.bid_scheme" in named and data.get("market", {}).get("bid_scheme") != "learned":
        off += ["value", "reinforce"]
    for table in off:
        if isinstance(agents.get(table), dict) and not any(key.startswith(f"agents.{table}.") for key in named):
            del agents[table]


def _read(path: Path) -> dict:
    """A scenario file's tables. It must name its scenario: an empty or mistyped file would run relay's defaults."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML (a value nested deeper than {MAX_NESTING} levels)") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except ValueError as err:  # TOMLDecodeError, or an integer of more digits than Python converts
        raise ConfigError(f"{path}: not valid TOML ({err})") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read it ({err.strerror})") from None
    if deep := _too_deep("", data):
        raise ConfigError(f"{path}: {deep} = ...: nested deeper than {MAX_NESTING} levels")
    if not isinstance(data.get("run"), dict) or "scenario" not in data["run"]:
        raise ConfigError(f'{path}: no [run] scenario: a scenario file names its world (e.g. scenario = "relay")')
    return data


MAX_NESTING = 32
"""Levels of tables and arrays a config value may nest (no key needs more than a few); deeper is refused before
anything walks it recursively."""


def _too_deep(key: str, value) -> str | None:
    """The dotted key of the first value nested deeper than :data:`MAX_NESTING`, else None (walked without
    recursion, so any depth is measured)."""
    stack = [(key, value, 0)]
    while stack:
        name, node, depth = stack.pop()
        if depth > MAX_NESTING:
            return name or "(top level)"
        if isinstance(node, dict):
            stack += [(f"{name}.{k}" if name else str(k), v, depth + 1) for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(name, v, depth + 1) for v in node]
    return None


def _shown(item) -> str:
    """A --set as the user typed it (a dict override as key=value), shortened in the middle past 80 characters."""
    text = item if isinstance(item, str) else f"{item[0]}={item[1]!r}"
    if re.search(rf"\b{SECRET}\b", text):  # an API key given by --set is refused, and never repeated
        text = f"{text.partition('=')[0]}=(not shown)"
    return text if len(text) <= 80 else f"{text[:50]}...{text[-20:]}"


def _merged(base: dict, table: dict) -> dict:
    """``table`` laid over ``base``, sub-tables merged key by key: ``--set market={batch=2}`` sets one key of
    [market] and keeps the others, as ``--set market.batch=2`` does."""
    out = dict(base)
    for key, value in table.items():
        out[key] = _merged(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


def _leaves(key: str, value) -> list[str]:
    """The dotted keys a --set value names (a table names each of its keys)."""
    if not isinstance(value, dict) or not value:
        return [key]
    return [leaf for k, v in value.items() for leaf in _leaves(f"{key}.{k}", v)]


def from_dict(data: dict, source: str, module: Scenario | None = None) -> Experiment:
    """Validate a config already read (a TOML file's sections, or a stored run's config): the effective
    experiment (scenarios/run/derived.py), every rule across keys checked (scenarios/run/rules.py). ``module``:
    the scenario ``data`` names, where the caller has resolved it already; the experiment carries it."""
    path = source
    run = section(path, data, "run", RunConfig)
    base = Path(source).parent if source.endswith(".toml") else None  # a .py scenario is relative to its TOML
    if module is None:
        try:
            module = get_scenario(run.scenario, base)
        except ScenarioError as err:
            raise ConfigError(f"{path}: run.scenario = {run.scenario!r}: {err}") from None
    data = _renamed(data, module.spec.skill_library, path)
    sections = {"run": RunConfig, "market": MarketConfig, "population": PopulationConfig, "agents": AgentsConfig,
                "skills": SkillsConfig, module.section: module.Config}
    moved = keys(SkillsConfig, "skills.") if module.spec.skill_library else ()  # recsys.credit -> skills.credit
    for name in data:
        if name not in sections:
            raise ConfigError(f"{path}: [{name}]: unknown section{did_you_mean(name, sections)}")
    parsed = Experiment(
        run=dataclasses.replace(run, scenario=module.name),  # a file's absolute path, so a resume or a sweep
        # worker finds it again
        market=section(path, data, "market", MarketConfig),
        population=section(path, data, "population", PopulationConfig),
        scenario=section(path, data, module.section, module.Config, moved),
        source=source,
        agents=section(path, data, "agents", AgentsConfig),
        section=module.section,
        skills=section(path, data, "skills", SkillsConfig),
        resolved=module,
    )
    exp = derived.effective(parsed, given_keys(data), module.spec, module.defaults(parsed))
    if problem := rules.problem(exp):
        raise ConfigError(f"{path}: {problem}")
    return exp


def given_keys(data: dict) -> set[str]:
    """The dotted keys a config's tables set (``market.clearing``; a nested table's as ``agents.credit_settings.x.y``)."""
    return {leaf for name, table in data.items() for leaf in _leaves(name, table)}


def _renamed(data: dict, skill_library: bool | None = None, source: str = "") -> dict:
    """``data`` with each renamed key (:data:`RENAMED`) moved to its new name, one :class:`DeprecatedKey` warning
    for all of them (a copy; ``data`` is left as it is). An old name set beside its new one to another value is
    refused, naming both (neither may silently win); ``agents.bids = "market"`` sets nothing, and neither does
    ``skills.group`` where the scenario has no skill library (``skill_library`` False: it was never read there,
    and a stored config of such a run holds it at its old default beside the agents.group it ran). A stored
    config of the flat layout holds ``skills.group`` beside ``agents.group = 0``, which a skill library did not
    read: there the old key is the run's G."""
    out, said = copy.deepcopy(data), []
    for old, new in RENAMED.items():
        *path, key = old.split(".")
        table = _table_at(out, path)
        if table is None or key not in table:
            continue
        value = table.pop(key)
        if (old, value) == ("agents.bids", "market") or (old, skill_library) == ("skills.group", False):
            continue
        said.append(f"{old} is deprecated: read as {new} = {value!r} (write {new})")
        *path, key = new.split(".")
        target = out
        for name in path:
            target = target.setdefault(name, {})
            if not isinstance(target, dict):  # section() reports the bad table
                break
        else:
            if key in target and target[key] != value and (old, target[key]) != ("skills.group", 0):
                raise ConfigError(f"{source + ': ' if source else ''}{old} = {value!r} beside {new} = {target[key]!r}: "
                                  f"{old} is the old name of {new}; set {new} only")
            target[key] = value
    if said:
        warnings.warn("; ".join(said), DeprecatedKey, stacklevel=3)
    return out


def _scenario_of(data: dict, base: Path) -> Scenario | None:
    """The scenario a file's tables name (None where it cannot be told yet: :func:`from_dict` reports a bad one)."""
    try:
        return get_scenario(data["run"]["scenario"], base)
    except (ScenarioError, KeyError, TypeError):
        return None


def _nested(parts: list[str], value) -> dict:
    """``["agents", "lm_lr"], 0.1`` -> ``{"agents": {"lm_lr": 0.1}}``."""
    for name in reversed(parts):
        value = {name: value}
    return value


def _table_at(data: dict, path: list[str]) -> dict | None:
    """The nested table at ``path`` (``["agents"]``), or None where there is none."""
    for name in path:
        data = data.get(name) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else None
