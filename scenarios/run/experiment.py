"""An experiment: a scenario's config sections, typed, as one run reads them.

The sections are ``[run]`` (here), ``[market]`` and ``[population]`` (market/config.py), ``[agents]``
(agents/config.py), ``[skills]`` (skills/config.py) and the scenario's own. How a file becomes one is
scenarios/run/config.py; how its keys fit together, scenarios/run/rules.py; the defaults that depend on
other keys, scenarios/run/derived.py.
"""

from __future__ import annotations

import dataclasses

from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.config import AgentsConfig
from market.config import MarketConfig, PopulationConfig
from market.money import MAX_MICRO
from skills.config import SkillsConfig
from market.strict import STRICT
from scenarios.registry import Scenario, get_scenario

MAX_EPISODES = 10**8


@dataclass(config=STRICT)
class RunConfig:
    scenario: str = "relay"
    """The scenario: a built-in name, a plugin's entry-point name, a .py file (relative to this TOML) or a
    dotted module path (scenarios/registry.py)."""
    episodes: int = Field(300, ge=1, le=MAX_EPISODES)
    """Total episodes (rounded up to whole rounds of market.batch); at most 10^8 (days of relay at its
    fastest: a larger number is a typo, and would run forever)."""
    seed: int = Field(0, ge=0, le=MAX_MICRO)
    """One seed for numpy, torch and sampling: 0 .. 2^63 - 1 (numpy's SeedSequence takes no negative seed;
    the database stores an int64)."""
    checkpoint_every: int | None = Field(None, ge=1)
    """Rounds between checkpoints (unset: by time alone, ``checkpoint_seconds``; the last round always). The
    rounds since the previous checkpoint are written with it, in its transaction: the database holds
    checkpointed rounds only, and a killed run loses the rounds after its last checkpoint."""
    eval_every: int | None = Field(None, ge=1)
    """Rounds between the points of the run's learning curve (unset: none): the frozen market's success on the
    scenario's fixed held-out problems, greedy, before the first round, every ``eval_every`` rounds and after the
    last (the summary's ``heldout_curve``; stored in the run's ``heldout_eval`` table). The same problems for every
    arm and seed, so runs are paired; a measurement leaves the training run as it was (same ledger hash). Only a
    scenario with a held-out set (the LLM worlds) has one."""
    checkpoint_seconds: float = Field(10.0, gt=0, le=600)
    """The longest a run goes without a checkpoint, in seconds (with ``checkpoint_every``: whichever comes
    first). A checkpoint and its transaction cost a fast world more than its rounds do (relay's checkpoint
    takes longer to encode and write than a round to step); 10 s risks little work. At most 600: every
    write renews the run's lease, which other processes take for dead after 900 s (market/store.py)."""


@dataclasses.dataclass
class Experiment:
    """One run's whole configuration, validated: what ``load`` returns and ``build_model`` / ``run_experiment`` take.

    Each field is a section of the scenario file, a typed dataclass whose keys the
    [configuration reference](config.md) lists. Make one with ``load`` rather than by hand: it
    reads the file, applies overrides and derived defaults, and checks every rule across keys.

    Args:
        run: ``[run]``: the scenario, episodes, seed, checkpointing (``scenarios.run.experiment.RunConfig``).
        market: ``[market]``: auctions, payments, rent and taxes (``market.config.MarketConfig``).
        population: ``[population]``: initial agents, births, bounds (``market.config.PopulationConfig``).
        scenario: The scenario's own section (its ``Config`` dataclass), e.g. ``[relay]``.
        source: The file the experiment was read from (named in error messages).
        agents: ``[agents]``: bids, learners, credit, objectives (``agents.config.AgentsConfig``).
        section: The scenario's own section's name (the scenario's name; a plugin file's stem).
        skills: ``[skills]``: how a skill library evolves (``skills.config.SkillsConfig``).
        derived: The defaults derived from other keys: key -> (the value parsed, the value in effect).
    """

    run: RunConfig
    """``[run]``: the scenario, episodes, seed, checkpointing."""
    market: MarketConfig
    """``[market]``: auctions, payments, rent and taxes."""
    population: PopulationConfig
    """``[population]``: initial agents, births and bounds."""
    scenario: object
    """The scenario's own config dataclass (its section, ``[relay]``, ``[wordmath]``, ...)."""
    source: str
    """The file it came from."""
    agents: AgentsConfig = dataclasses.field(default_factory=AgentsConfig)
    """``[agents]``: bid heads, the learners, credit estimators and objectives."""
    section: str = ""
    """The scenario's own section (its name; a plugin file's stem)."""
    skills: SkillsConfig = dataclasses.field(default_factory=SkillsConfig)
    """``[skills]``: how a skill library evolves."""
    derived: dict = dataclasses.field(default_factory=dict)
    """Key -> (parsed, effective) for each default derived from other keys (scenarios/run/derived.py)."""
    resolved: Scenario | None = dataclasses.field(default=None, repr=False, compare=False)
    """The scenario's code, resolved once by the loader (scenarios/run/config.py); read it as :attr:`module`."""

    @property
    def module(self) -> Scenario:
        """The scenario's code (scenarios/registry.py): the one the loader resolved, which the rules, the model's
        build and the summary's metrics all use; looked up by ``run.scenario`` only for an experiment made
        without the loader."""
        if self.resolved is None:
            self.resolved = get_scenario(self.run.scenario)
        return self.resolved

    def to_dict(self) -> dict:
        """The experiment as plain sections (what a run stores as its config, and ``catallax config show`` prints).

        Returns:
            ``{"run": {...}, "market": {...}, "population": {...}, "agents": {...}, "skills": {...}, section: {...}}``.
        """
        return {
            "run": dataclasses.asdict(self.run),
            "market": dataclasses.asdict(self.market),
            "population": dataclasses.asdict(self.population),
            "agents": dataclasses.asdict(self.agents),
            "skills": dataclasses.asdict(self.skills),
            self.section: dataclasses.asdict(self.scenario),
        }
