"""Policy-update objectives: one round's steps in, a loss to minimise out (docs: concepts/credit-methods.md).

One interface: ``objective = make("empo", clip=0.2)``; ``loss, stats = objective(batch)`` takes a
:class:`PolicyBatch` (agents/objectives/batch.py) and returns a scalar loss (with grad) and a dict
of floats. The credit estimators (agents/credit) decide *how much* each step earned (the batch's
``advantage``); an objective decides *how the policy moves* on it. ``grpo`` is the reference; each
other module changes one thing and says what in its docstring. Each module declares the batch
signals it ``NEEDS``; :func:`require` raises :class:`MissingSignals`, naming them, when a world does
not provide them, so a run is refused before it starts. Each module's settings are its ``Config``.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass

from agents.objectives.batch import SIGNALS, MissingSignals, PolicyBatch

NAMES = ("grpo", "empo", "tppo", "pact", "tree_opsd", "eapo", "focus", "sero", "ca_pg")


def module(name: str):
    if name not in NAMES:
        raise KeyError(f"unknown objective {name!r} (known: {', '.join(NAMES)})")
    return importlib.import_module(f"agents.objectives.{name}")


def needs(name: str) -> tuple[str, ...]:
    return module(name).NEEDS


def check(name: str, signals, where: str = "this world") -> None:
    missing = sorted(set(needs(name)) - set(signals))
    if missing:
        raise MissingSignals(f"objective {name!r} needs signals {where} does not provide: {', '.join(missing)} "
                             f"(provided: {', '.join(sorted(signals)) or 'none'})")


@dataclass
class Objective:
    """A named objective with its config; call it on a batch."""

    name: str
    cfg: object

    @property
    def needs(self) -> tuple[str, ...]:
        return needs(self.name)

    def __call__(self, batch: PolicyBatch) -> tuple:
        check(self.name, batch.provided(), "this batch")
        return module(self.name).loss(batch, self.cfg)


def make(name: str, **settings) -> Objective:
    """``make("tree_opsd", tau=2.0)``: the objective with its defaults, overridden by ``settings``."""
    cls = module(name).Config
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(settings) - fields)
    if unknown:
        raise KeyError(f"objective {name!r} has no setting {', '.join(unknown)} "
                       f"(settings: {', '.join(sorted(fields))})")
    return Objective(name, cls(**settings))


def require(name: str, provided, where: str = "this world", **settings) -> Objective:
    """The objective, or :class:`MissingSignals` naming what ``where``'s ``provided`` signals lack."""
    objective = make(name, **settings)
    check(name, set(provided), where)
    return objective


__all__ = ["NAMES", "SIGNALS", "MissingSignals", "Objective", "PolicyBatch", "make", "needs", "require"]
