"""Credit assignment: which step of which rollout earned the outcome (docs: concepts/credit-methods.md).

One interface: ``estimator = make("draco")``; ``estimator(group)`` takes G
:class:`Trajectory` of the same task and returns a :class:`Credit` (an advantage per step,
and per skill or sub-action where the method attributes them). Each estimator module
declares the signals it ``NEEDS``; :func:`require` raises :class:`MissingSignals`, naming
them, when a world does not provide them. A MarketModel round becomes trajectories in
``agents/credit/market.py`` (its RoundTrace and ledger), with the world's own signals
(each world's own: scenarios/relay.py, scenarios/blocks/signals.py); the learner calls
``agents/credit/step_advantages.py``. Each estimator's settings are its module's ``Config``, set from a
scenario file as ``[agents.credit_settings.<name>]`` (agents/named/ ``PluginSettings``). The names are the
package's modules (agents/named/): a new estimator is one new file.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.credit.base import (
    SIGNALS,
    Credit,
    MissingSignals,
    Trajectory,
    check,
    provided,
)
from agents.named import CREDIT as REGISTRY

NAMES = REGISTRY.names
module, needs = REGISTRY.module, REGISTRY.needs


@dataclass
class Estimator:
    """A named estimator with its config; call it on a group."""

    name: str
    cfg: object

    @property
    def needs(self) -> frozenset[str]:
        return needs(self.name)

    def __call__(self, group: list[Trajectory]) -> Credit:
        check(self.name, self.needs, provided(group))
        return module(self.name).estimate(group, self.cfg)


def make(name: str, **settings) -> Estimator:
    """``make("delta_ttg", rho=0.3)``: the estimator with its defaults, overridden by ``settings``."""
    return Estimator(name, REGISTRY.config(name, **settings))


def require(name: str, signals, world: str = "this world") -> Estimator:
    """The estimator, or :class:`MissingSignals` naming what ``world``'s ``signals`` lack (the learner's check)."""
    est = make(name)
    check(name, est.needs, set(signals), world)
    return est


def supported(signals) -> list[str]:
    """The estimators a world with these signals can run."""
    return [n for n in NAMES if needs(n) <= set(signals)]


__all__ = ["NAMES", "SIGNALS", "Credit", "Estimator", "MissingSignals", "Trajectory", "make", "needs",
           "require", "supported"]
