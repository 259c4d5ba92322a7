"""Named modules of one package, and their settings tables: the one registry of credit estimators, objectives and
task samplers.

``agents/credit``, ``agents/objectives`` and ``agents/tasks`` each hold one module per method, found by
name: every module of the package is one (its file name its name), but for the package's own support
modules and an ``alias`` where the name users write differs from the file's. So adding an estimator, an
objective or a sampler is one new file (and its test): each module declares the signals it ``NEEDS`` and
its settings as a strict ``Config`` dataclass, and :meth:`Registry.make` builds it with its settings,
refusing one it does not have. Finding the names reads the package's file list, not its modules (an
objective imports torch; reading a scenario file must not), and without importing the package itself.

Each kind's settings reach a run through one table of ``[agents]`` (:class:`PluginSettings`): a sub-table per
name, ``[agents.credit_settings.delta_ttg]``, ``--set agents.objective_settings.tree_opsd.tau=2.0``,
``--set agents.task_settings.rods.capacity=32``. A sub-table is checked against its module's ``Config`` where it
is given (so a scenario file that sets no objective's settings imports no objective), and holds the values
given; :meth:`PluginSettings.of` is any name's ``Config``, its defaults where nothing was set. The loader
(scenarios/run/sections.py) checks a table key by key; a rule (scenarios/run/rules.py) refuses a changed
sub-table the run does not read.

A package of its own that imports none of the plugin packages: they import it, and so does the ``[agents]``
config (agents/config.py) above them, without a cycle.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pkgutil
from functools import cached_property

from pydantic import ValidationError
from pydantic_core import core_schema


class Registry:
    def __init__(self, package: str, kind: str, support: tuple[str, ...] = (), aliases: dict[str, str] | None = None,
                 first: str | None = None, fixed: dict[str, str] | None = None):
        """``package``'s modules but ``support``, by name; ``aliases``: registry name -> module name where they
        differ; ``first``: the reference method, listed first (the rest in alphabetical order); ``fixed``: fields
        of a ``Config`` (at any depth) that a key of ``[agents]`` sets for every method, refused in a settings
        table (field -> that key, as the refusal names it)."""
        self.package, self.kind, self.support, self.first = package, kind, support, first
        self.files = dict(aliases or {})
        self.fixed = dict(fixed or {})

    @cached_property
    def names(self) -> tuple[str, ...]:
        by_file = {module: alias for alias, module in self.files.items()}
        path = importlib.util.find_spec(self.package).submodule_search_locations  # the package is not run
        found = sorted(by_file.get(m.name, m.name) for m in pkgutil.iter_modules(path)
                       if m.name not in self.support and not m.name.startswith("_"))
        return tuple(sorted(found, key=lambda n: n != self.first))

    def module(self, name: str):
        if name not in self.names:
            raise KeyError(f"unknown {self.kind} {name!r} (known: {', '.join(self.names)})")
        return importlib.import_module(f"{self.package}.{self.files.get(name, name)}")

    def needs(self, name: str):
        return self.module(name).NEEDS

    def config(self, name: str, **settings):
        """``name``'s ``Config`` with its defaults, overridden by ``settings`` (a KeyError names an unknown one)."""
        cls = self.module(name).Config
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(settings) - fields)
        if unknown:
            raise KeyError(f"{self.kind} {name!r} has no setting {', '.join(unknown)} "
                           f"(settings: {', '.join(sorted(fields))})")
        return cls(**settings)

    def fixed_key(self, given: dict, prefix: str = "") -> tuple[str, object] | None:
        """(dotted field, value) of the first field of ``given`` (a sub-table as written, nested tables as dicts)
        that a key of ``[agents]`` sets (``grpo.kl_coef``); None where there is none."""
        for key, value in given.items():
            if key in self.fixed:
                return f"{prefix}{key}", value
            if isinstance(value, dict) and (found := self.fixed_key(value, f"{prefix}{key}.")):
                return found
        return None

    def refusal(self, dotted: str) -> str:
        """Why a fixed field is refused: the key of ``[agents]`` that sets it."""
        return f"set {self.fixed[dotted.rsplit('.', 1)[-1]]}"

    def settings(self, name: str, given: dict) -> dict:
        """``given`` (a sub-table of ``name``'s settings) checked against its ``Config``: the values given, as its
        ``Config`` reads them; a ValueError names a fixed field, a KeyError an unknown one."""
        if found := self.fixed_key(given):
            raise ValueError(f"{name}.{found[0]}: {self.refusal(found[0])}")
        return _given(self.config(name, **given), given)

    def defaults(self, name: str) -> dict:
        """``name``'s settings as a table: its ``Config``'s defaults, but for the fixed fields (nested tables left
        without a field dropped)."""
        return _without(dataclasses.asdict(self.config(name)), set(self.fixed))


def _given(cfg, given: dict) -> dict:
    """The values of the keys ``given`` sets, read off the ``Config`` built from them (so a float field holds a float)."""
    out = {}
    for key, value in given.items():
        read = getattr(cfg, key)
        if dataclasses.is_dataclass(read):
            out[key] = _given(read, value) if isinstance(value, dict) else dataclasses.asdict(read)
        else:
            out[key] = read
    return out


def _overlaid(base: dict, given: dict) -> dict:
    return {**base, **{k: _overlaid(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
                       for k, v in given.items()}}


def _without(table: dict, fixed: set[str]) -> dict:
    out = {}
    for key, value in table.items():
        if key in fixed:
            continue
        if isinstance(value, dict):
            value = _without(value, fixed)
            if not value:
                continue
        out[key] = value
    return out


class PluginSettings(dict):
    """A settings table of one kind of plugin (a subclass per kind names its :class:`Registry`): registry name ->
    the settings given for it, checked against its module's ``Config``. Validated by pydantic as a field of
    ``[agents]`` from a table of tables; stored and printed as the tables given (plus, in the effective config,
    the chosen plugin's defaults: scenarios/run/derived.py)."""

    registry: Registry

    def __init_subclass__(cls, registry: Registry | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if registry is not None:
            cls.registry = registry

    def of(self, name: str):
        """``name``'s ``Config``: the settings given for it, the defaults for the rest."""
        return self.registry.config(name, **self.get(name, {}))

    def __getattr__(self, name: str):
        """``credit_settings.delta_ttg``: the ``Config`` of a registered name (:meth:`of`)."""
        if name.startswith("_") or name not in self.registry.names:
            raise AttributeError(name)
        return self.of(name)

    def filled(self, name: str) -> PluginSettings:
        """This table with ``name``'s sub-table holding each of its settings, the defaults where none was given:
        what the effective config shows of the plugin a run reads."""
        out = type(self)(self)
        out[name] = _overlaid(self.registry.defaults(name), self.get(name, {}))
        return out

    def changed(self) -> list[str]:
        """The names whose settings differ from their defaults."""
        return [name for name, given in self.items() if self.of(name) != self.registry.config(name)]

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.no_info_plain_validator_function(cls.validate)

    @classmethod
    def validate(cls, tables) -> PluginSettings:
        """A table of tables -> this kind's settings: each name registered, each sub-table its ``Config``'s."""
        if not isinstance(tables, dict):
            raise ValueError(f"expected a table of {cls.registry.kind} names, each a table of its settings")
        out = cls()
        for name, given in tables.items():
            if name not in cls.registry.names:
                raise ValueError(f"unknown {cls.registry.kind} {name!r} (known: {', '.join(cls.registry.names)})")
            if not isinstance(given, dict):
                raise ValueError(f"{name}: expected a table of {name}'s settings")
            try:
                out[name] = cls.registry.settings(name, given)
            except KeyError as err:
                raise ValueError(err.args[0]) from None
            except ValidationError as err:
                first = err.errors()[0]
                raise ValueError(f"{name}.{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        return out


CREDIT = Registry("agents.credit", "credit estimator", support=("advantages", "base", "market", "step_advantages"),
                  aliases={"skillgate": "selection_credit"}, first="grpo")
"""Credit estimators (agents/credit). An alias keeps the paper's name what users write while the module says what
it does (a ``skillgate.py`` there read as a second ``skills/gate.py``, the library's validation gate)."""
OBJECTIVES = Registry("agents.objectives", "objective", support=("batch", "kl", "privileged"), first="grpo",
                      fixed={"clip": "agents.clip, the clip range of every learner of actions",
                             "kl_coef": "agents.kl, the KL weight of every learner of actions"})
"""Policy-update objectives (agents/objectives). The clip range and the KL weight are ``[agents]``'s (one key
each, read by every learner of actions), never an objective's setting."""
TASKS = Registry("agents.tasks", "task sampler", first="uniform")
"""Task samplers (agents/tasks)."""
