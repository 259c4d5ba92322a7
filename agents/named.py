"""Named modules of one package: the one registry of credit estimators, objectives and task samplers.

``agents/credit``, ``agents/objectives`` and ``agents/tasks`` each hold one module per method, found by
name: every module of the package is one (its file name its name), but for the package's own support
modules and an ``alias`` where the name users write differs from the file's. So adding an estimator, an
objective or a sampler is one new file (and its test): each module declares the signals it ``NEEDS`` and
its settings as a strict ``Config`` dataclass, and :meth:`Registry.make` builds it with its settings,
refusing one it does not have. Finding the names reads the package's file list, not its modules (an
objective imports torch; reading a scenario file must not).
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

from pydantic.dataclasses import dataclass as config_dataclass


class Registry:
    def __init__(self, package: str, kind: str, support: tuple[str, ...] = (), aliases: dict[str, str] | None = None,
                 first: str | None = None):
        """``package``'s modules but ``support``, by name; ``aliases``: registry name -> module name where they
        differ; ``first``: the reference method, listed first (the rest in alphabetical order)."""
        self.package, self.kind = package, kind
        self.files = dict(aliases or {})
        by_file = {module: alias for alias, module in self.files.items()}
        found = sorted(by_file.get(m.name, m.name) for m in pkgutil.iter_modules(importlib.import_module(package).__path__)
                       if m.name not in support and not m.name.startswith("_"))
        self.names = tuple(sorted(found, key=lambda n: n != first))

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

    def settings_table(self, name: str, config):
        """A strict config dataclass with one field per registered name, each its module's ``Config`` (defaults as
        written there): a section of the scenario file, one sub-table per name, checked key by key by the loader."""
        fields = [(n, self.module(n).Config, dataclasses.field(default_factory=self.module(n).Config)) for n in self.names]
        return config_dataclass(dataclasses.make_dataclass(name, fields), config=config)
