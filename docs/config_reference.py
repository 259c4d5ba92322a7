"""The config reference: every key of every section, read from the config dataclasses themselves.

The sections are those a scenario file may hold (scenarios/run/experiment.py: ``[run]``, ``[market]``,
``[population]``, ``[agents]``, ``[skills]``) and each built-in scenario's own (``scenarios.registry.SCENARIOS``);
a field holding a config dataclass is a nested table (``agents.value.margin``), and a plugin settings table
(agents/named/) a table per registered plugin, its module's ``Config`` (``agents.credit_settings.delta_ttg.rho``,
``agents.objective_settings.tree_opsd.tau``, ``agents.task_settings.rods.capacity``). For each key:
its type (a ``Literal`` as its choices), its default, its bounds (pydantic's ``Field(ge=..., le=...)``) and the
docstring written under it in the class body. Nothing is listed by hand, so a key added to a dataclass
appears the next time the site is built (docs/hooks.py puts this into ``reference/config.md``), and
tests/test_docs.py fails if a key of a loaded scenario is missing or a key has no description.

Beside the dataclass's default, each row shows the value each built-in scenario file runs with where it differs
(the file loaded as a run loads it, derived defaults included). A nested table that several scenarios share with
the same keys (the LLM worlds' ``llm`` and ``policy``) is shown once.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import textwrap
import tokenize
import typing
from functools import cache

import annotated_types

from docs import griffe_roles

BOUNDS = {annotated_types.Ge: ">=", annotated_types.Gt: ">", annotated_types.Le: "<=", annotated_types.Lt: "<"}


@dataclasses.dataclass(frozen=True)
class Key:
    section: str  # the table it lives in: "market", "agents.credit_settings.delta_ttg"
    name: str
    type: str
    default: str
    bounds: str
    doc: str
    value: object = dataclasses.field(default=None, compare=False)  # the default itself, for comparing with files'

    @property
    def dotted(self) -> str:
        return f"{self.section}.{self.name}"


def sections() -> list[tuple[str, type]]:
    """(section, its dataclass): the platform's sections, then each built-in scenario's own."""
    from agents.config import AgentsConfig
    from market.config import MarketConfig, PopulationConfig
    from scenarios.registry import SCENARIOS, get_scenario
    from scenarios.run.experiment import RunConfig
    from skills.config import SkillsConfig

    out = [("run", RunConfig), ("market", MarketConfig), ("population", PopulationConfig),
           ("agents", AgentsConfig), ("skills", SkillsConfig)]
    for name in sorted(SCENARIOS):
        scenario = get_scenario(name)
        out.append((scenario.section, scenario.Config))
    return out


@cache
def field_docs(cls: type) -> dict[str, str]:
    """What the class body says under each field (an attribute docstring) or, lacking one, the ``# comment``
    at the end of the field's line, by field name."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass) or klass.__module__ == "builtins":
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        comments = {tok.start[0]: tok.string.lstrip("#").strip()
                    for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}
        body = ast.parse(source).body[0].body
        for node, after in zip(body, body[1:] + [None]):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
            elif node.end_lineno in comments:
                docs[node.target.id] = comments[node.end_lineno]
    return docs


def nested(cls: type, name: str) -> type | None:
    """The config dataclass a field holds (a nested table), else None."""
    info = getattr(cls, "__pydantic_fields__", {}).get(name)
    kind = info.annotation if info is not None else None
    return kind if isinstance(kind, type) and dataclasses.is_dataclass(kind) else None


def type_name(annotation) -> str:
    if typing.get_origin(annotation) is typing.Literal:
        return " \\| ".join(repr(a) for a in typing.get_args(annotation)).replace("'", '"')
    if typing.get_origin(annotation) in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " \\| ".join(type_name(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


def plugins(cls: type, name: str):
    """The plugin settings table a field holds (agents/named/ ``PluginSettings``), else None."""
    from agents.named import PluginSettings

    info = getattr(cls, "__pydantic_fields__", {}).get(name)
    kind = info.annotation if info is not None else None
    return kind if isinstance(kind, type) and issubclass(kind, PluginSettings) else None


def keys(section: str, cls: type, fixed: frozenset = frozenset()) -> list[Key]:
    """Every key of ``cls`` under ``section``, nested tables' keys after the table's own; a plugin table's per
    plugin, but for the ``fixed`` fields that a key of ``[agents]`` sets."""
    out, tables, docs, info = [], [], field_docs(cls), getattr(cls, "__pydantic_fields__", {})
    for f in dataclasses.fields(cls):
        if f.name in fixed:
            continue
        table = nested(cls, f.name)
        if table is not None:
            tables += keys(f"{section}.{f.name}", table, fixed)
            continue
        if registry := getattr(plugins(cls, f.name), "registry", None):
            for plugin in registry.names:
                tables += keys(f"{section}.{f.name}.{plugin}", registry.module(plugin).Config, frozenset(registry.fixed))
            continue
        fi = info.get(f.name)
        annotation = fi.annotation if fi is not None else f.type
        default = fi.get_default(call_default_factory=True) if fi is not None else f.default
        bounds = ", ".join(f"{BOUNDS[type(m)]} {getattr(m, m.__class__.__name__.lower())}"
                           for m in (fi.metadata if fi is not None else ()) if type(m) in BOUNDS)
        out.append(Key(section, f.name, type_name(annotation), repr(default).replace("'", '"'), bounds,
                       docs.get(f.name, ""), default))
    return out + tables


def all_keys() -> list[Key]:
    return [k for section, cls in sections() for k in keys(section, cls)]


def _plain(value) -> str:
    """A value as a scenario file would write it (tuples and lists alike), for comparing and showing."""
    return json.dumps(value, default=str)


def _leaves(prefix: str, value):
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from _leaves(f"{prefix}.{k}", v)
    else:
        yield prefix, value


@cache
def scenario_values() -> dict[str, dict[str, str]]:
    """dotted key -> {scenario file's stem: its value} where a built-in scenario file runs with another value than
    the dataclass default (read as a run reads the file: ``load``, derived defaults applied)."""
    from scenarios.registry import SCENARIO_DIR
    from scenarios.run.config import load

    defaults = {k.dotted: _plain(k.value) for k in all_keys()}
    out: dict[str, dict[str, str]] = {}
    for path in sorted(SCENARIO_DIR.glob("*.toml")):
        for section, values in load(str(path)).to_dict().items():
            for dotted, value in _leaves(section, values):
                if dotted in defaults and _plain(value) != defaults[dotted]:
                    out.setdefault(dotted, {})[path.stem] = _plain(value)
    return out


def _table(keys: list[Key], files: dict[str, dict[str, str]], sections: list[str], scenario_column: bool = True) -> list[str]:
    """The rows of one table; ``sections``: the tables these rows stand for (one, or several that share them)."""
    head = "| key | type | default | in the scenario files | bounds | what it does |" if scenario_column else \
        "| key | type | default | bounds | what it does |"
    lines = [head, "|---|---|---|---|---|---|" if scenario_column else "|---|---|---|---|---|"]
    for key in keys:
        doc = griffe_roles.plain(" ".join(key.doc.split())).replace("|", "\\|")
        cells = [f"`{key.name}`", key.type, f"`{key.default}`"]
        if scenario_column:
            found = {stem: v for s in sections for stem, v in files.get(f"{s}.{key.name}", {}).items()}
            cells.append(", ".join(f"{stem}: `{v}`" for stem, v in sorted(found.items())).replace("|", "\\|"))
        lines.append("| " + " | ".join([*cells, key.bounds, doc]) + " |")
    return lines


def _owner(section: str, scenario_sections: set[str]) -> tuple[str, str]:
    """(the scenario's or the plugin's table, the nested table's name under it): ``wordmath.llm`` -> (wordmath,
    llm); ``agents.credit_settings.triage.bonus`` -> (agents.credit_settings.triage, bonus); else (section, "")."""
    parts = section.split(".")
    if parts[0] in scenario_sections and len(parts) > 1:
        return parts[0], ".".join(parts[1:])
    if parts[0] == "agents" and len(parts) > 3 and parts[1].endswith("_settings"):
        return ".".join(parts[:3]), ".".join(parts[3:])
    return section, ""


def markdown() -> str:
    """The reference: a heading and a table per section (nested tables under their own heading; a nested table that
    several scenarios share with identical keys once)."""
    files = scenario_values()
    by_section: dict[str, list[Key]] = {}
    for key in all_keys():
        by_section.setdefault(key.section, []).append(key)
    scenario_sections = {s for s, _ in sections() if "." not in s} - {"run", "market", "population", "agents", "skills"}
    shared: dict[tuple, list[str]] = {}  # (the table's name in its scenario, its rows) -> the sections that have it
    for section, section_keys in by_section.items():
        owner, rest = _owner(section, scenario_sections)
        if rest:
            signature = (owner.count("."), rest, tuple(dataclasses.astuple(k)[1:6] for k in section_keys))
            shared.setdefault(signature, []).append(section)
    merged = {sections_[0]: sections_ for sections_ in shared.values() if len(sections_) > 1}
    skip = {s for group in merged.values() for s in group[1:]}
    lines: list[str] = []
    for section, section_keys in by_section.items():
        if section in skip:
            continue
        group = merged.get(section, [section])
        if len(group) > 1:
            owner, rest = _owner(section, scenario_sections)
            placeholder = "SCENARIO" if owner in scenario_sections else owner.rpartition(".")[0] + ".NAME"
            lines += ["", f"### `[{placeholder}.{rest}]`", "",
                      f"The same keys, types and defaults in each of " +
                      ", ".join(f"`[{s}]`" for s in group) + "; the scenario files' values are named by file."]
        else:
            lines += ["", f"### `[{section}]`"]
        lines += ["", *_table(section_keys, files, group)]
    return "\n".join(lines).lstrip() + "\n"


def undescribed() -> list[str]:
    """Every key without a description."""
    return [k.dotted for k in all_keys() if not k.doc.strip()]


if __name__ == "__main__":
    print(markdown(), end="")
