"""Policy-update objectives: one round's steps in, a loss to minimise out (docs: concepts/credit-methods.md).

One interface: ``objective = make("empo", clip=0.2)``; ``loss, stats = objective(batch)`` takes a
:class:`PolicyBatch` (agents/objectives/batch.py) and returns a scalar loss (with grad) and a dict
of floats. The credit estimators (agents/credit) decide *how much* each step earned (the batch's
``advantage``); an objective decides *how the policy moves* on it. ``grpo`` is the reference; each
other module changes one thing and says what in its docstring. Each module declares the batch
signals it ``NEEDS``; :func:`require` raises :class:`MissingSignals`, naming them, when a world does
not provide them, so a run is refused before it starts. Each module's settings are its ``Config``, set
from a scenario file as ``[agents.objective_settings.<name>]`` (:func:`for_agents`; its clip range is
``agents.clip`` and its KL weight ``agents.kl``, never its own). The names are the
package's modules (agents/named/): a new objective is one new file.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from agents.credit.base import check as signals_check
from agents.named import OBJECTIVES as REGISTRY
from agents.objectives.batch import SIGNALS, MissingSignals, PolicyBatch

NAMES = REGISTRY.names
module, needs = REGISTRY.module, REGISTRY.needs


def check(name: str, signals, where: str = "this world") -> None:
    """:class:`MissingSignals` naming what objective ``name`` needs and ``where``'s ``signals`` lack."""
    signals_check(name, needs(name), signals, where, "objective", MissingSignals)


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
    return Objective(name, REGISTRY.config(name, **settings))


def for_agents(cfg) -> Objective:
    """The run's objective from its ``[agents]`` section: ``agents.objective`` with its sub-table of
    ``agents.objective_settings``, and ``agents.clip`` as its clip range (its own, or its inner grpo's: the
    one clip key of every learner of actions)."""
    settings = dict(cfg.objective_settings.get(cfg.objective, {}))  # the values given (agents/named/)
    fields = {f.name for f in dataclasses.fields(module(cfg.objective).Config)}
    if "clip" in fields:
        settings["clip"] = cfg.clip
    elif "grpo" in fields:
        settings["grpo"] = {**settings.get("grpo", {}), "clip": cfg.clip}
    return make(cfg.objective, **settings)


def require(name: str, provided, where: str = "this world", **settings) -> Objective:
    """The objective, or :class:`MissingSignals` naming what ``where``'s ``provided`` signals lack."""
    objective = make(name, **settings)
    check(name, set(provided), where)
    return objective


__all__ = ["NAMES", "SIGNALS", "MissingSignals", "Objective", "PolicyBatch", "for_agents", "make", "needs", "require"]
