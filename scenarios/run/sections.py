"""One config table read into its typed dataclass, every key checked: the one error format of the loader.

A value of the wrong TOML type (pydantic's lax mode would take ``true`` as 1, ``"0.5"`` as 0.5), an int past
int64, a bad value or an unknown key becomes a :class:`ConfigError` naming the file, the dotted key and the
value (and, for a typo, the nearest valid key). scenarios/run/config.py reads a file's tables through it.
"""

from __future__ import annotations

import dataclasses
import difflib
import reprlib

from pydantic import ValidationError

from agents.backends.base import API_KEY_ENV
from agents.named import PluginSettings
from market.money import MAX_MICRO


class ConfigError(ValueError):
    """A bad scenario name, file, key or value; the message is the one line the user sees."""


SECRET = "api_key"
"""The key a secret would be given under (an LLM backend's table): refused wherever a config comes from."""

SCALARS = {"int": (int, "an integer"), "float": ((int, float), "a number"), "bool": (bool, "true or false")}


def section(path: str, data: dict, name: str, cls, moved=()):
    """``data``'s table ``name`` as ``cls``, every key checked. A field that is itself a config dataclass
    is a nested table (``[recsys.world]``, ``--set recsys.world.users=300``), checked the same way and
    named by its dotted path (``recsys.world.userz``). An unknown key is matched against ``moved`` too:
    the full names of keys that left this section (``skills.credit``)."""
    values = data.get(name.rsplit(".", 1)[-1], {})
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: {name} = {values!r}: expected a [{name}] section")
    values = dict(values)
    if SECRET in values and f"{SECRET}_env" in keys(cls):  # refused before any message could repeat its value
        raise ConfigError(f"{path}: {name}.{SECRET} = (not shown): an API key is never a config key (a run stores "
                          f"its config and `catallax config show` prints it); put it in the environment variable "
                          f"{API_KEY_ENV}, or name another with {name}.{SECRET}_env")
    for f in dataclasses.fields(cls):  # pydantic's lax mode would take true as 1, "0.5" as 0.5, "yes" as true
        if f.name not in values:
            continue
        if table := _table(cls, f.name):
            values[f.name] = section(path, values, f"{name}.{f.name}", table)
            continue
        if plugins := _plugin_table(cls, f.name):
            values[f.name] = plugin_tables(path, values[f.name], f"{name}.{f.name}", plugins)
            continue
        types, expected = SCALARS.get(getattr(f.type, "__name__", f.type), (object, ""))
        value = values[f.name]
        if not isinstance(value, types) or (isinstance(value, bool) and types is not bool):
            raise ConfigError(f"{path}: {name}.{f.name} = {_short(value)}: expected {expected}")
        if types is int and abs(value) > MAX_MICRO:  # every count, seed and size is stored and computed as int64
            raise ConfigError(f"{path}: {name}.{f.name} = {_short(value)}: out of range (int64: at most 2^63 - 1)")
    try:
        return cls(**values)
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(p) for p in (name, *first["loc"]))
        value = first["input"] if first["loc"] else values  # a check across keys reports the whole section
        if first["type"] == "unexpected_keyword_argument":
            raise ConfigError(f"{path}: {key} = {value!r}: unknown key"
                              f"{did_you_mean(str(first['loc'][-1]), [*keys(cls), *moved])}") from None
        raise ConfigError(f"{path}: {key} = {value!r}: {first['msg']}") from None
    except TypeError as err:  # e.g. a positional mix-up pydantic reports as TypeError
        raise ConfigError(f"{path}: [{name}]: {err}") from None


def plugin_tables(path: str, tables, name: str, cls: type[PluginSettings]) -> PluginSettings:
    """A plugin settings table (agents/named/), checked key by key: each sub-table named after a registered
    plugin, read as its module's ``Config`` (so the same messages as any table's), none setting a key that
    ``[agents]`` sets for every plugin (an objective's ``kl_coef``: agents.kl)."""
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: {name} = {_short(tables)}: expected a table of {cls.registry.kind} names")
    for plugin, given in tables.items():
        if plugin not in cls.registry.names:
            key, value = f"{name}.{plugin}", given
            while isinstance(value, dict) and value:  # its first key, as a --set names it
                first = next(iter(value))
                key, value = f"{key}.{first}", value[first]
            raise ConfigError(f"{path}: {key} = {_short(value)}: unknown {cls.registry.kind} {plugin!r}"
                              f"{did_you_mean(plugin, cls.registry.names)} (known: {', '.join(cls.registry.names)})")
        if isinstance(given, dict) and (fixed := cls.registry.fixed_key(given)):
            raise ConfigError(f"{path}: {name}.{plugin}.{fixed[0]} = {_short(fixed[1])}: "
                              f"{cls.registry.refusal(fixed[0])}")
        section(path, tables, f"{name}.{plugin}", cls.registry.module(plugin).Config)
    return cls.validate(tables)


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxlong = 60


def _short(value) -> str:
    """repr of a value, shortened in the middle (a 5000-digit number is not repeated to the user)."""
    return _REPR.repr(value)


def _table(cls, field: str):
    """The config dataclass a field of ``cls`` holds (a nested table), else None."""
    info = getattr(cls, "__pydantic_fields__", {}).get(field)
    kind = info.annotation if info is not None else None
    return kind if isinstance(kind, type) and dataclasses.is_dataclass(kind) else None


def _plugin_table(cls, field: str) -> type[PluginSettings] | None:
    """The plugin settings table a field of ``cls`` holds (agents/named/), else None."""
    info = getattr(cls, "__pydantic_fields__", {}).get(field)
    kind = info.annotation if info is not None else None
    return kind if isinstance(kind, type) and issubclass(kind, PluginSettings) else None


def keys(cls, prefix: str = "") -> list[str]:
    """A section's keys, and its nested tables' as ``table.key`` (so a key that moved into one is found)."""
    out = []
    for f in dataclasses.fields(cls):
        out.append(prefix + f.name)
        if table := _table(cls, f.name):
            out += keys(table, f"{prefix}{f.name}.")
    return out


def did_you_mean(word: str, options) -> str:
    moved = [o for o in options if o.endswith(f".{word}")]  # recsys.users -> 'world.users'
    close = moved if len(moved) == 1 else difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
