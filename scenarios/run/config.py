"""Load a scenario's TOML, apply ``--set key=value`` overrides, validate every key.

The config is a few typed sections: ``[run]``, ``[market]``, ``[population]``
and the scenario's own section (``[relay]``, ...). Validation happens here, once,
before anything runs or is written; every problem becomes a :class:`ConfigError`
whose message names the file, the key and the value (and the nearest valid key
for a typo). The CLI turns it into one line and exit code 2.
"""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
from pathlib import Path

from pydantic import Field, ValidationError
from pydantic.dataclasses import dataclass

from agents.config import AgentsConfig
from agents.credit import NAMES
from market.config import STRICT, MarketConfig, PopulationConfig
from scenarios.registry import SCENARIO_DIR, get_scenario


class ConfigError(ValueError):
    """A bad scenario name, file, key or value; the message is the one line the user sees."""


@dataclass(config=STRICT)
class RunConfig:
    scenario: str = "relay"
    """Scenario name (the module under scenarios/ that builds the world and policy)."""
    episodes: int = Field(300, ge=1)
    """Total episodes (rounded up to whole rounds of market.batch)."""
    seed: int = 0
    """One seed for numpy, torch and sampling."""
    checkpoint_every: int = Field(1, ge=1)
    """Rounds between checkpoints (each written atomically with its round; the last round always)."""


@dataclasses.dataclass
class Experiment:
    run: RunConfig
    market: MarketConfig
    population: PopulationConfig
    scenario: object  # the scenario's own config dataclass
    source: str  # the file it came from
    agents: AgentsConfig = dataclasses.field(default_factory=AgentsConfig)  # bid heads and the learner

    def to_dict(self) -> dict:
        return {
            "run": dataclasses.asdict(self.run),
            "market": dataclasses.asdict(self.market),
            "population": dataclasses.asdict(self.population),
            "agents": dataclasses.asdict(self.agents),
            self.run.scenario: dataclasses.asdict(self.scenario),
        }


def resolve(name_or_path: str) -> Path:
    """A scenario name (``relay``) or a path to a .toml file -> the file."""
    path = Path(name_or_path)
    if path.suffix == ".toml":
        if not path.is_file():
            raise ConfigError(f"{name_or_path}: no such scenario file")
        return path
    path = SCENARIO_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))
        raise ConfigError(f"{name_or_path}: unknown scenario{_did_you_mean(name_or_path, known)} (known: {', '.join(known)})")
    return path


def parse_override(item: str) -> tuple[list[str], object]:
    """``market.batch=4`` -> (["market", "batch"], 4); values are TOML literals, else strings."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {item}: expected KEY=VALUE, e.g. market.batch=4")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip().split("."), value


def load(name_or_path: str, overrides: list[str] = (), seed: int | None = None) -> Experiment:
    path = resolve(name_or_path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML ({err})") from None
    for item in overrides:
        keys, value = parse_override(item)
        node = data
        for k in keys[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise ConfigError(f"{path}: --set {item}: {k!r} is not a section")
        node[keys[-1]] = value
    if seed is not None:
        data.setdefault("run", {})["seed"] = seed
    return from_dict(data, source=str(path))


def from_dict(data: dict, source: str) -> Experiment:
    """Validate a config already read (a TOML file's sections, or a stored run's config)."""
    path = source
    run = _section(path, data, "run", RunConfig)
    try:
        module = get_scenario(run.scenario)
    except KeyError as err:
        raise ConfigError(f"{path}: run.scenario = {run.scenario!r}: {err.args[0]}") from None
    sections = {"run": RunConfig, "market": MarketConfig, "population": PopulationConfig, "agents": AgentsConfig,
                run.scenario: module.Config}
    for name in data:
        if name not in sections:
            raise ConfigError(f"{path}: [{name}]: unknown section{_did_you_mean(name, sections)}")
    exp = Experiment(
        run=run,
        market=_section(path, data, "market", MarketConfig),
        population=_section(path, data, "population", PopulationConfig),
        scenario=_section(path, data, run.scenario, module.Config),
        source=source,
        agents=_section(path, data, "agents", AgentsConfig),
    )
    _bids_set_the_scheme(data, exp)
    for check in CHECKS:
        if problem := check(exp):
            raise ConfigError(f"{path}: {problem}")
    try:
        module.validate(exp)  # how the sections fit together
    except ValueError as err:
        raise ConfigError(f"{path}: {err}") from None
    return exp


def _bids_set_the_scheme(data: dict, exp: Experiment) -> None:
    """``agents.bids`` is the user-facing name of ``market.bid_scheme`` and overrides it (so ``--set
    agents.bids=learned`` works on a scenario file that sets a scheme); learned bids are trained under
    softmax clearing, so ``agents.bids = "learned"`` brings it along unless market.clearing is set."""
    agents, market = exp.agents, exp.market
    if agents.bids != "market":
        market.bid_scheme = agents.bids
        if agents.bids == "learned" and "clearing" not in data.get("market", {}):
            market.clearing = "softmax"


def _learned_bids_clear_by_softmax(exp: Experiment) -> str | None:
    """The bid head's gradient is that of the softmax auction's probabilities: no other clearing has one."""
    market = exp.market
    if market.bid_scheme == "learned" and market.clearing != "softmax":
        return (f"market.clearing = {market.clearing!r}: learned bids are trained on the softmax "
                f"auction's probabilities; set market.clearing = \"softmax\"")


def _groups_divide_the_batch(exp: Experiment) -> str | None:
    """A group is G consecutive episodes of one round, so a round must hold whole groups."""
    agents, market = exp.agents, exp.market
    if agents.group and market.batch % agents.group:
        return f"agents.group = {agents.group}: market.batch ({market.batch}) must be a multiple"


def _credit_shapes_learned_actions(exp: Experiment) -> str | None:
    """A credit estimator gives the action logits' advantages; without learned actions it would do nothing."""
    agents = exp.agents
    if agents.credit != "grpo" and agents.actions != "grpo":
        return (f"agents.credit = {agents.credit!r}: credit shapes the action advantages; "
                f"set agents.actions = \"grpo\"")


def _world_feeds_the_estimator(exp: Experiment) -> str | None:
    """The world must provide the estimator's signals (agents/credit): refused here, not mid-run."""
    agents = exp.agents
    if agents.credit != "grpo":
        from agents.credit import MissingSignals, require
        from agents.credit.step_advantages import provides

        signals = provides(get_scenario(exp.run.scenario).credit_signals)
        try:
            require(agents.credit, signals, f"scenario {exp.run.scenario!r}")
        except MissingSignals as err:
            return f"agents.credit = {agents.credit!r}: {err}"


def _credit_settings_are_read(exp: Experiment) -> str | None:
    """The learner reads the settings of the per-step estimator agents.credit names, and no others (grpo's
    advantage is its own, agents/learner.py): a changed sub-table it does not read would do nothing."""
    agents = exp.agents
    for name in NAMES:
        settings = getattr(agents.credit_settings, name)
        if (name != agents.credit or name == "grpo") and settings != type(settings)():
            return (f"agents.credit_settings.{name} = {dataclasses.asdict(settings)}: not read: the learner reads "
                    f"only the settings of agents.credit (now {agents.credit!r}), and none for grpo")


def _groups_hold_two_rollouts(exp: Experiment) -> str | None:
    """A group-relative advantage compares a rollout with its group's others: one alone has none."""
    agents, market = exp.agents, exp.market
    learning = market.bid_scheme == "learned" and agents.advantage == "global" or agents.actions == "grpo"
    if learning and (agents.group or market.batch) < 2:
        return (f"agents.group = {agents.group}: a group-relative advantage needs at least 2 "
                f"rollouts per group (raise market.batch, or set agents.advantage = \"local\")")


CHECKS = (_learned_bids_clear_by_softmax, _groups_divide_the_batch, _credit_shapes_learned_actions,
          _world_feeds_the_estimator, _credit_settings_are_read, _groups_hold_two_rollouts)
"""How [agents] and [market] fit together, in order (the first problem is the one reported); each returns
the problem, or None."""


SCALARS = {"int": (int, "an integer"), "float": ((int, float), "a number"), "bool": (bool, "true or false")}


def _section(path: str, data: dict, name: str, cls):
    """``data``'s table ``name`` as ``cls``, every key checked. A field that is itself a config dataclass
    is a nested table (``[recsys.world]``, ``--set recsys.world.users=300``), checked the same way and
    named by its dotted path (``recsys.world.userz``)."""
    values = data.get(name.rsplit(".", 1)[-1], {})
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: {name} = {values!r}: expected a [{name}] section")
    values = dict(values)
    for f in dataclasses.fields(cls):  # pydantic's lax mode would take true as 1, "0.5" as 0.5, "yes" as true
        if f.name not in values:
            continue
        if table := _table(cls, f.name):
            values[f.name] = _section(path, values, f"{name}.{f.name}", table)
            continue
        types, expected = SCALARS.get(getattr(f.type, "__name__", f.type), (object, ""))
        value = values[f.name]
        if not isinstance(value, types) or (isinstance(value, bool) and types is not bool):
            raise ConfigError(f"{path}: {name}.{f.name} = {value!r}: expected {expected}")
    try:
        return cls(**values)
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(p) for p in (name, *first["loc"]))
        value = first["input"] if first["loc"] else values  # a check across keys reports the whole section
        if first["type"] == "unexpected_keyword_argument":
            raise ConfigError(f"{path}: {key} = {value!r}: unknown key"
                              f"{_did_you_mean(str(first['loc'][-1]), _keys(cls))}") from None
        raise ConfigError(f"{path}: {key} = {value!r}: {first['msg']}") from None
    except TypeError as err:  # e.g. a positional mix-up pydantic reports as TypeError
        raise ConfigError(f"{path}: [{name}]: {err}") from None


def _table(cls, field: str):
    """The config dataclass a field of ``cls`` holds (a nested table), else None."""
    info = getattr(cls, "__pydantic_fields__", {}).get(field)
    kind = info.annotation if info is not None else None
    return kind if isinstance(kind, type) and dataclasses.is_dataclass(kind) else None


def _keys(cls, prefix: str = "") -> list[str]:
    """A section's keys, and its nested tables' as ``table.key`` (so a key that moved into one is found)."""
    out = []
    for f in dataclasses.fields(cls):
        out.append(prefix + f.name)
        if table := _table(cls, f.name):
            out += _keys(table, f"{prefix}{f.name}.")
    return out


def _did_you_mean(word: str, options) -> str:
    moved = [o for o in options if o.endswith(f".{word}")]  # recsys.users -> 'world.users'
    close = moved if len(moved) == 1 else difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
