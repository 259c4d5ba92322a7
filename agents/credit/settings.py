"""Every credit estimator's settings, one sub-table per registry name: ``[agents.credit_settings.delta_ttg]``.

Why one table holding them all: it is a field of the ``[agents]`` section, so the config loader
(scenarios/run/config.py) checks each key like any other (a bad key or value names itself and
exits 2), a run stores the settings it trained with, and the learner, which gets the
``[agents]`` section, builds its estimator from them (``AgentsConfig.estimator``). Only the chosen
estimator's sub-table (``agents.credit``) is read, and none for grpo, whose advantage the learner
computes itself; the loader refuses a changed sub-table that is not read::

    --set agents.credit=delta_ttg --set agents.credit_settings.delta_ttg.rho=0.3

The table is built from the registry (agents/named.py): one field per estimator module, its type the
module's ``Config``; a new estimator's file brings its table with it.
"""

from __future__ import annotations

from agents.named import Registry
from market.strict import STRICT

REGISTRY = Registry("agents.credit", "credit estimator", support=("base", "market", "settings", "step_advantages"),
                    aliases={"skillgate": "selection_credit"}, first="grpo")
"""Registry name -> module where they differ: the paper's name stays what users write, the module says
what it does (a ``skillgate.py`` here read as a second ``skills/gate.py``, the library's validation gate)."""

CreditSettings = REGISTRY.settings_table("CreditSettings", STRICT)
