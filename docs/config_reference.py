"""The config reference: every key of every section, read from the config dataclasses themselves.

The sections are those a scenario file may hold (scenarios/run/experiment.py: ``[run]``, ``[market]``,
``[population]``, ``[agents]``, ``[skills]``) and each built-in scenario's own (``scenarios.registry.SCENARIOS``);
a field holding a config dataclass is a nested table (``agents.credit_settings.delta_ttg.rho``). For each key:
its type (a ``Literal`` as its choices), its default, its bounds (pydantic's ``Field(ge=..., le=...)``) and the
docstring written under it in the class body. Nothing is listed by hand, so a key added to a dataclass
appears the next time the site is built (docs/hooks.py puts this into ``reference/config.md``), and
tests/test_docs.py fails if a key of a loaded scenario is missing.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import textwrap
import tokenize
import typing
from functools import cache

import annotated_types

BOUNDS = {annotated_types.Ge: ">=", annotated_types.Gt: ">", annotated_types.Le: "<=", annotated_types.Lt: "<"}


@dataclasses.dataclass(frozen=True)
class Key:
    section: str  # the table it lives in: "market", "agents.credit_settings.delta_ttg"
    name: str
    type: str
    default: str
    bounds: str
    doc: str

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


def keys(section: str, cls: type) -> list[Key]:
    """Every key of ``cls`` under ``section``, nested tables' keys after the table's own."""
    out, tables, docs, info = [], [], field_docs(cls), getattr(cls, "__pydantic_fields__", {})
    for f in dataclasses.fields(cls):
        table = nested(cls, f.name)
        if table is not None:
            tables += keys(f"{section}.{f.name}", table)
            continue
        fi = info.get(f.name)
        annotation = fi.annotation if fi is not None else f.type
        default = fi.get_default(call_default_factory=True) if fi is not None else f.default
        bounds = ", ".join(f"{BOUNDS[type(m)]} {getattr(m, m.__class__.__name__.lower())}"
                           for m in (fi.metadata if fi is not None else ()) if type(m) in BOUNDS)
        out.append(Key(section, f.name, type_name(annotation), repr(default).replace("'", '"'), bounds,
                       docs.get(f.name, "")))
    return out + tables


def all_keys() -> list[Key]:
    return [k for section, cls in sections() for k in keys(section, cls)]


def markdown() -> str:
    """The reference: one heading per top-level section, a table row per key (nested tables under their own heading)."""
    lines, current = [], None
    for key in all_keys():
        if key.section != current:
            current = key.section
            lines += ["", f"### `[{current}]`", "", "| key | type | default | bounds | what it does |",
                      "|---|---|---|---|---|"]
        doc = " ".join(key.doc.split()).replace("|", "\\|")
        lines.append(f"| `{key.name}` | {key.type} | `{key.default}` | {key.bounds} | {doc} |")
    return "\n".join(lines).lstrip() + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
