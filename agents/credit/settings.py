"""Every credit estimator's settings, one sub-table per registry name: ``[agents.credit_settings.delta_ttg]``.

Why one table holding them all: it is a field of the ``[agents]`` section, so the config loader
(scenarios/run/config.py) checks each key like any other (a bad key or value names itself and
exits 2), a run stores the settings it trained with, and the learner, which gets the
``[agents]`` section, builds its estimator from them (``AgentsConfig.estimator``). Only the chosen
estimator's sub-table (``agents.credit``) is read, and none for grpo, whose advantage the learner
computes itself; the loader refuses a changed sub-table that is not read::

    --set agents.credit=delta_ttg --set agents.credit_settings.delta_ttg.rho=0.3

The field names are the registry (``agents.credit.NAMES``); each type is its module's ``Config``.
"""

from __future__ import annotations

from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.credit.bucket_brigade import Config as BucketBrigade
from agents.credit.casi import Config as Casi
from agents.credit.cast import Config as Cast
from agents.credit.credo import Config as Credo
from agents.credit.delta_ttg import Config as DeltaTtg
from agents.credit.depgpo import Config as Depgpo
from agents.credit.draco import Config as Draco
from agents.credit.grpo import Config as Grpo
from agents.credit.grse import Config as Grse
from agents.credit.knowgpo import Config as Knowgpo
from agents.credit.mcgpo import Config as Mcgpo
from agents.credit.proas import Config as Proas
from agents.credit.scpo import Config as Scpo
from agents.credit.selection_credit import Config as SelectionCredit
from agents.credit.steppo import Config as Steppo
from agents.credit.taspo import Config as Taspo
from agents.credit.traj_graph import Config as TrajGraph
from agents.credit.triage import Config as Triage
from market.config import STRICT


@dataclass(config=STRICT)
class CreditSettings:
    grpo: Grpo = Field(default_factory=Grpo)
    bucket_brigade: BucketBrigade = Field(default_factory=BucketBrigade)
    proas: Proas = Field(default_factory=Proas)
    traj_graph: TrajGraph = Field(default_factory=TrajGraph)
    knowgpo: Knowgpo = Field(default_factory=Knowgpo)
    casi: Casi = Field(default_factory=Casi)
    delta_ttg: DeltaTtg = Field(default_factory=DeltaTtg)
    taspo: Taspo = Field(default_factory=Taspo)
    depgpo: Depgpo = Field(default_factory=Depgpo)
    draco: Draco = Field(default_factory=Draco)
    triage: Triage = Field(default_factory=Triage)
    scpo: Scpo = Field(default_factory=Scpo)
    steppo: Steppo = Field(default_factory=Steppo)
    cast: Cast = Field(default_factory=Cast)
    mcgpo: Mcgpo = Field(default_factory=Mcgpo)
    skillgate: SelectionCredit = Field(default_factory=SelectionCredit)
    credo: Credo = Field(default_factory=Credo)
    grse: Grse = Field(default_factory=Grse)
