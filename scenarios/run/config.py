"""Load a scenario's TOML, apply ``--set key=value`` overrides, validate every key.

The config is a few typed sections: ``[run]``, ``[market]``, ``[population]``,
``[agents]``, ``[skills]`` (for a scenario with a skill library) and the
scenario's own section (``[relay]``, ...). Validation happens here, once,
before anything runs or is written; every problem becomes a :class:`ConfigError`
whose message names the file (or the ``--set``/``--seed`` that gave the value),
the key and the value (and the nearest valid key for a typo). The CLI turns it
into one line and exit code 2. Floats must be finite and ints fit int64; money
keys are bounded (market/money.py), run.episodes and market.batch have maxima.
"""

from __future__ import annotations

import dataclasses
import difflib
import reprlib
import tomllib
from pathlib import Path

from pydantic import Field, ValidationError
from pydantic.dataclasses import dataclass

from agents.config import REINFORCE_KEYS, VALUE_KEYS, AgentsConfig
from agents.credit import NAMES
from market.config import STRICT, MarketConfig, PopulationConfig
from market.money import MAX_MICRO, MICRO
from scenarios.registry import SCENARIO_DIR, ScenarioError, get_scenario, plugin_names
from skills.config import SkillsConfig


class ConfigError(ValueError):
    """A bad scenario name, file, key or value; the message is the one line the user sees."""


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
    checkpoint_seconds: float = Field(10.0, gt=0, le=600)
    """The longest a run goes without a checkpoint, in seconds (with ``checkpoint_every``: whichever comes
    first). A checkpoint and its transaction cost a fast world more than its rounds do (relay: ~0.7 ms to
    encode and ~2 ms to write, beside ~1 ms to step a round); 10 s risks little work. At most 600: every
    write renews the run's lease, which other processes take for dead after 900 s (market/store.py)."""


@dataclasses.dataclass
class Experiment:
    run: RunConfig
    market: MarketConfig
    population: PopulationConfig
    scenario: object  # the scenario's own config dataclass
    source: str  # the file it came from
    agents: AgentsConfig = dataclasses.field(default_factory=AgentsConfig)  # bid heads and the learner
    section: str = ""  # the scenario's own section (its name; a plugin file's stem)
    skills: SkillsConfig = dataclasses.field(default_factory=SkillsConfig)  # how a skill library evolves

    def to_dict(self) -> dict:
        return {
            "run": dataclasses.asdict(self.run),
            "market": dataclasses.asdict(self.market),
            "population": dataclasses.asdict(self.population),
            "agents": dataclasses.asdict(self.agents),
            "skills": dataclasses.asdict(self.skills),
            self.section: dataclasses.asdict(self.scenario),
        }


def resolve(name_or_path: str) -> Path | None:
    """A scenario name (``relay``) or a path to a .toml file -> the file; None for a scenario named without
    one (a plugin: an entry-point name, a .py file, a dotted module path), which runs on its defaults."""
    path = Path(name_or_path)
    if path.suffix == ".toml":
        if not path.is_file():
            raise ConfigError(f"{name_or_path}: no such scenario file")
        return path
    path = SCENARIO_DIR / f"{name_or_path}.toml"
    if path.is_file():
        return path
    plugins = plugin_names()  # found without importing any scenario
    if name_or_path.endswith(".py") or "." in name_or_path or name_or_path in plugins:
        return None
    known = sorted([*(p.stem for p in SCENARIO_DIR.glob("*.toml")), *plugins])
    raise ConfigError(f"{name_or_path}: unknown scenario{_did_you_mean(name_or_path, known)} (known: {', '.join(known)}; "
                      f"or a .py file or a dotted module path)")


def parse_override(item: str) -> tuple[list[str], object]:
    """``market.batch=4`` -> (["market", "batch"], 4); values are TOML literals, else strings."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {item}: expected KEY=VALUE, e.g. market.batch=4")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except ValueError:  # TOMLDecodeError, or an integer past Python's digit limit (then "expected an integer")
        value = raw
    return key.strip().split("."), value


def load(name_or_path: str, overrides: list[str] | dict = (), seed: int | None = None) -> Experiment:
    """The experiment of a scenario (a name, a .toml file or a plugin: :func:`resolve`) with ``overrides``:
    ``--set`` strings (``["market.batch=8"]``) or, from Python, a dict of dotted keys (``{"market.batch": 8}``)."""
    path = resolve(name_or_path)
    if path is None:  # a plugin named directly: its defaults
        path, data = Path(name_or_path), {"run": {"scenario": name_or_path}}
    else:
        data = _read(path)
    named = {}  # dotted key -> the --set that gave it, so a bad value is blamed on the --set, not the file
    for item in overrides.items() if isinstance(overrides, dict) else overrides:
        keys, value = parse_override(item) if isinstance(item, str) else (item[0].split("."), item[1])
        node = data
        for k in keys[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {_shown(item)}: {k!r} is not a section")
        old = node.get(keys[-1])
        node[keys[-1]] = _merged(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
        named.update((key, f"--set {_shown(item)}") for key in _leaves(".".join(keys), value))
    if seed is not None:
        data.setdefault("run", {})["seed"] = seed
        named["run.seed"] = f"--seed {seed}"
    try:
        return from_dict(data, source=str(path))
    except ConfigError as err:
        line = str(err).removeprefix(f"{path}: ")
        given = [flag for key, flag in named.items() if line.startswith((f"{key} =", f"{key}."))]
        raise ConfigError(f"{given[-1]}: {line}" if given else str(err)) from None


def _read(path: Path) -> dict:
    """A scenario file's tables. It must name its scenario: an empty or mistyped file would run relay's defaults."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except ValueError as err:  # TOMLDecodeError, or an integer of more digits than Python converts
        raise ConfigError(f"{path}: not valid TOML ({err})") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read it ({err.strerror})") from None
    if not isinstance(data.get("run"), dict) or "scenario" not in data["run"]:
        raise ConfigError(f'{path}: no [run] scenario: a scenario file names its world (e.g. scenario = "relay")')
    return data


def _shown(item) -> str:
    """A --set as the user typed it (a dict override as key=value), shortened in the middle past 80 characters."""
    text = item if isinstance(item, str) else f"{item[0]}={item[1]!r}"
    return text if len(text) <= 80 else f"{text[:50]}...{text[-20:]}"


def _merged(base: dict, table: dict) -> dict:
    """``table`` laid over ``base``, sub-tables merged key by key: ``--set market={batch=2}`` sets one key of
    [market] and keeps the others, as ``--set market.batch=2`` does."""
    out = dict(base)
    for key, value in table.items():
        out[key] = _merged(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


def _leaves(key: str, value) -> list[str]:
    """The dotted keys a --set value names (a table names each of its keys)."""
    if not isinstance(value, dict) or not value:
        return [key]
    return [leaf for k, v in value.items() for leaf in _leaves(f"{key}.{k}", v)]


def from_dict(data: dict, source: str) -> Experiment:
    """Validate a config already read (a TOML file's sections, or a stored run's config)."""
    path = source
    run = _section(path, data, "run", RunConfig)
    base = Path(source).parent if source.endswith(".toml") else None  # a .py scenario is relative to its TOML
    try:
        module = get_scenario(run.scenario, base)
    except ScenarioError as err:
        raise ConfigError(f"{path}: run.scenario = {run.scenario!r}: {err}") from None
    run.scenario = module.name  # a file's absolute path, so a resume or a sweep worker finds it again
    sections = {"run": RunConfig, "market": MarketConfig, "population": PopulationConfig, "agents": AgentsConfig,
                "skills": SkillsConfig, module.section: module.Config}
    moved = _keys(SkillsConfig, "skills.") if module.skill_library else ()  # recsys.credit -> skills.credit
    for name in data:
        if name not in sections:
            raise ConfigError(f"{path}: [{name}]: unknown section{_did_you_mean(name, sections)}")
    exp = Experiment(
        run=run,
        market=_section(path, data, "market", MarketConfig),
        population=_section(path, data, "population", PopulationConfig),
        scenario=_section(path, data, module.section, module.Config, moved),
        source=source,
        agents=_section(path, data, "agents", AgentsConfig),
        section=module.section,
        skills=_section(path, data, "skills", SkillsConfig),
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
    agents.bids=learned`` works on a scenario file that sets a scheme). What a learner needs comes
    along unless the user set it: learned bids clear by softmax (reinforce bids are trained on its
    probabilities; a value learner needs its exploration, since under first-price clearing only the top
    bidder's turns ever correct a value); a group-relative advantage needs groups of rollouts
    (``market.batch`` = 8, one group); learned bids read the scenario's first feature source when
    ``numeric`` is not one of its own (wordmath's agents bid from ``agent``); and value bids take the
    scenario's own defaults (``VALUE_BIDS``: relay's margin).
    A value the user set that contradicts them is refused by the checks below, naming the key."""
    agents, market = exp.agents, exp.market
    if agents.bids != "market":
        market.bid_scheme = agents.bids
    scenario, set_agents = get_scenario(exp.run.scenario), data.get("agents", {})
    offered = scenario.bid_features
    if market.bid_scheme == "learned" and "features" not in set_agents and offered and agents.features not in offered:
        agents.features = offered[0]
    if market.bid_scheme == "learned" and agents.bid_objective == "value":
        for key, value in scenario.value_bids:
            if key not in set_agents:
                setattr(agents, key, value)
    given = data.get("market", {})
    if market.bid_scheme == "learned" and "clearing" not in given:
        market.clearing = "softmax"
    if _needs_groups(exp) and "batch" not in given and not agents.group:
        market.batch = max(market.batch, 8)


def _reinforce_bids(exp: Experiment) -> bool:
    return exp.market.bid_scheme == "learned" and exp.agents.bid_objective == "reinforce"


def _needs_groups(exp: Experiment) -> bool:
    """A group-relative advantage: reinforce bids' ``global`` one, or learned actions'."""
    return exp.agents.needs_groups(exp.market.bid_scheme)


def _learned_bids_clear_by_softmax(exp: Experiment) -> str | None:
    """The reinforce head's gradient is that of the softmax auction's probabilities: no other clearing has
    one (value heads regress on what turns earned, under any clearing)."""
    market = exp.market
    if _reinforce_bids(exp) and market.clearing != "softmax":
        return (f"market.clearing = {market.clearing!r}: reinforce bids are trained on the softmax "
                f"auction's probabilities; set market.clearing = \"softmax\" (or agents.bid_objective = \"value\")")


def _scenario_learns_what_is_asked(exp: Experiment) -> str | None:
    """Learned bids need features the scenario's agents can give; learned actions a world of discrete
    actions its policy maps rules onto (scenarios/registry.py: BID_FEATURES, LEARNED_ACTIONS)."""
    agents, scenario = exp.agents, get_scenario(exp.run.scenario)
    if exp.market.bid_scheme == "learned" and agents.features not in scenario.bid_features:
        if not scenario.bid_features:
            return f"agents.bids = 'learned': scenario {exp.run.scenario!r} has no learned bids"
        return (f"agents.features = {agents.features!r}: scenario {exp.run.scenario!r}'s agents bid from "
                f"{' or '.join(map(repr, scenario.bid_features))} only")
    if agents.actions == "grpo" and not scenario.learned_actions:
        return f"agents.actions = 'grpo': scenario {exp.run.scenario!r} has no learned action logits"


def _scenario_has_a_skill_library(exp: Experiment) -> str | None:
    """[skills] evolves a scenario's skill library (scenarios/registry.py: SKILL_LIBRARY): a scenario without
    one would ignore a changed key (``credit = "none"``, the setting that turns skill evolution off, says so)."""
    if get_scenario(exp.run.scenario).skill_library:
        return None
    defaults = SkillsConfig()
    for f in dataclasses.fields(SkillsConfig):
        value = getattr(exp.skills, f.name)
        if value != getattr(defaults, f.name) and (f.name, value) != ("credit", "none"):
            return f"skills.{f.name} = {value!r}: scenario {exp.run.scenario!r} has no skill library"


RULE_LOGIT_SIGNALS = ("ref_logp", "token_logits", "value_logits", "state")
"""What a rule-logit policy's round gives an objective beyond every batch's fields: the rule's own
probability of each sampled action (the reference policy), a critic's logits (agents/critic.py) and
state ids (equal observations)."""
LM_SIGNALS = ("effect", "token_logits", "value_logits", "state")
"""What the LoRA learner's round gives (agents/lm_grpo.py): each completion's executed effect (role, state
summary, parsed action), state ids (role, state summary) and a token critic's logits; its KL to the base
model is its own (agents.kl), not an objective's ref_logp."""
ORACLE_SIGNALS = ("oracle_logp", "oracle_mask", "oracle_weight")
"""What either learner adds where the scenario declares ORACLE: its solver's continuation of each step, scored."""
HINDSIGHT_SIGNALS = ("hindsight_logp",)
"""What the LoRA learner's privileged pass gives on any world: the completions rescored with the outcome in context."""
TEACHER_SIGNALS = ("teacher_logp", "sibling_logp", "belief_before", "belief_after")
"""What it adds where the world knows the correct output at a state (ORACLE): rescored with it, and with a failed
sibling's answer in its place; the gold answer's likelihood before and after each reply."""


def _objective_gets_its_signals(exp: Experiment) -> str | None:
    """agents.objective moves learned actions: rule logits give the batch fields and the reference, the LM
    learner (agents/lm_grpo.py) the batch fields and effects. An objective reading more is refused here, naming it."""
    agents = exp.agents
    if agents.objective == "grpo":
        return None
    from agents.objectives import MissingSignals, check, needs

    scenario = get_scenario(exp.run.scenario)
    if scenario.objective_signals:  # a learner of the scenario's own trains what those signals score
        if not set(needs(agents.objective)) & set(scenario.objective_signals):
            return (f"agents.objective = {agents.objective!r}: scenario {exp.run.scenario!r} trains only what "
                    f"{', '.join(scenario.objective_signals)} score, which {agents.objective!r} does not read")
        try:
            check(agents.objective, scenario.objective_signals, f"scenario {exp.run.scenario!r}'s own learner")
        except MissingSignals as err:
            return f"agents.objective = {agents.objective!r}: {err}"
        return None
    if agents.actions != "grpo":
        return f"agents.objective = {agents.objective!r}: the objective moves learned actions; set agents.actions = \"grpo\""
    signals, learner = (LM_SIGNALS, "LoRA learner") if scenario.lm_actions else (RULE_LOGIT_SIGNALS, "rule-logit policies")
    signals += ORACLE_SIGNALS if scenario.oracle else ()
    if scenario.lm_actions:
        signals += HINDSIGHT_SIGNALS + (TEACHER_SIGNALS if scenario.oracle else ())
    try:
        check(agents.objective, signals, f"scenario {exp.run.scenario!r}'s {learner}")
    except MissingSignals as err:
        return f"agents.objective = {agents.objective!r}: {err}"


def _token_price_is_charged(exp: Experiment) -> str | None:
    """Compute is charged where the agents' policy reports the tokens its calls use (``compute()``, market/protocols.py
    Policy), which only its built policy tells (scenarios/registry.py refuses the key there, before a round); a model
    of the scenario's own has no market policy to report them."""
    if exp.market.token_price and get_scenario(exp.run.scenario).own_model is not None:
        return (f"market.token_price = {exp.market.token_price!r}: scenario {exp.run.scenario!r} runs a model of its "
                f"own, whose agents report no LLM tokens to the market")


def _features_are_read(exp: Experiment) -> str | None:
    """agents.features is how learned bids see a state, and how the critic of learned action logits does
    (agents/critic.py ActionCritic, under an objective that reads one); a run with neither would ignore it."""
    agents = exp.agents
    if agents.features == AgentsConfig().features or exp.market.bid_scheme == "learned":
        return None
    if agents.actions == "grpo" and agents.objective != "grpo" and not get_scenario(exp.run.scenario).lm_actions:
        from agents.critic import SIGNALS
        from agents.objectives import needs

        if set(SIGNALS) & set(needs(agents.objective)):
            return None
    return (f"agents.features = {agents.features!r}: read only by learned bids (agents.bids = \"learned\") and by "
            f"the critic of learned action logits (agents.actions = \"grpo\" under an objective that reads a critic); "
            f"this run has neither")


LM_KEYS = ("lora_rank", "lm_lr", "lm_temperature")


def _lm_keys_are_read(exp: Experiment) -> str | None:
    """The LoRA learner's keys are read only where agents.actions = 'grpo' trains an LM (agents/lm_grpo.py)."""
    agents, defaults = exp.agents, AgentsConfig()
    if agents.actions == "grpo" and get_scenario(exp.run.scenario).lm_actions:
        return None
    for key in LM_KEYS:
        if getattr(agents, key) != getattr(defaults, key):
            return (f"agents.{key} = {getattr(agents, key)!r}: read only where agents.actions = 'grpo' trains an "
                    f"LLM's weights (scenario {exp.run.scenario!r}, agents.actions = {agents.actions!r})")


def _device_is_there(exp: Experiment) -> str | None:
    """A learner asked to run on a GPU this torch cannot see would fail after the models load."""
    if exp.agents.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            return "agents.device = 'cuda': this torch sees no CUDA device (use \"auto\" or \"cpu\")"


def _bid_keys_are_read(exp: Experiment) -> str | None:
    """Each bid objective reads its own keys: one the run's objective does not read, changed, would do nothing."""
    agents = exp.agents
    if exp.market.bid_scheme != "learned":
        return None
    unread = REINFORCE_KEYS if agents.bid_objective == "value" else VALUE_KEYS
    defaults = AgentsConfig()
    for key in unread:
        if getattr(agents, key) != getattr(defaults, key):
            return (f"agents.{key} = {getattr(agents, key)!r}: not read by agents.bid_objective = "
                    f"{agents.bid_objective!r} (it belongs to the other objective)")


def _groups_divide_the_batch(exp: Experiment) -> str | None:
    """A group is G consecutive episodes of one round, so a round must hold whole groups."""
    agents, market = exp.agents, exp.market
    if _needs_groups(exp) and agents.group and market.batch % agents.group:
        return f"agents.group = {agents.group}: market.batch ({market.batch}) must be a multiple of {agents.group}"


def _skill_groups_fit(exp: Experiment) -> str | None:
    """A policy that evolves its library (agents/llm_skills.py) compares the G rollouts of a question: whole
    groups per round, and one grouping of the worlds when the LM learner groups them too."""
    skills, agents, market = exp.skills, exp.agents, exp.market
    scenario = get_scenario(exp.run.scenario)
    if not (scenario.skill_library and scenario.own_model is None and skills.credit != "none"):
        return None
    if market.batch % skills.group:
        return f"skills.group = {skills.group}: market.batch ({market.batch}) must be a multiple of {skills.group}"
    if _needs_groups(exp) and agents.group != skills.group:
        return (f"skills.group = {skills.group}: agents.group = {agents.group} groups the same worlds for the "
                f"learner; set them equal")


def _branches_can_be_played(exp: Experiment) -> str | None:
    """agents.branches restarts worlds from inner states (the scenario's BRANCHES) for learned action logits, a
    round holding M full rollouts (whole groups) and N branches of each; the tree credits the steps itself, and a
    task sampler would be told a branch's reward as if its task had been drawn again."""
    agents, market = exp.agents, exp.market
    N = agents.branches
    if not N:
        return None
    scenario = get_scenario(exp.run.scenario)
    if not scenario.branches:
        return (f"agents.branches = {N}: scenario {exp.run.scenario!r}'s world cannot restart an instance from an "
                f"inner state (its scenario does not declare BRANCHES)")
    if agents.actions != "grpo" or scenario.lm_actions:
        return f"agents.branches = {N}: branches are rollouts for learned action logits; set agents.actions = \"grpo\""
    if agents.credit != "grpo":
        return (f"agents.branches = {N}: the tree credits each step by the rollouts below it, in agents.credit's "
                f"place (now {agents.credit!r}); set agents.credit = \"grpo\"")
    if agents.tasks != "world":
        return (f"agents.branches = {N}: a branch replays another rollout's task, which a task sampler would count "
                f"as drawn again; set agents.tasks = \"world\" (now {agents.tasks!r})")
    if market.batch % (1 + N):
        return (f"agents.branches = {N}: market.batch ({market.batch}) must be a multiple of 1 + {N} (M full "
                f"rollouts and {N} branches of each), e.g. market.batch = {4 * (1 + N)}")
    full = market.batch // (1 + N)
    if agents.group and full % agents.group:
        return (f"agents.group = {agents.group}: the {full} full rollouts of a round (market.batch / (1 + "
                f"agents.branches)) must hold whole groups")


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


def _world_offers_the_tasks(exp: Experiment) -> str | None:
    """A task sampler draws from the world's tasks and reads what its scenario's ``TASK_SIGNALS`` name (agents/tasks
    ``NEEDS``); scrl normalises a learned action's reward among its sub-problem's rollouts, so it needs groups."""
    agents = exp.agents
    if agents.tasks == "world":
        return None
    from agents.tasks import NEEDS

    provided = get_scenario(exp.run.scenario).task_signals
    missing = sorted(set(NEEDS[agents.tasks]) - set(provided))
    if missing:
        return (f"agents.tasks = {agents.tasks!r}: task sampler {agents.tasks!r} needs signals scenario "
                f"{exp.run.scenario!r} does not provide: {', '.join(missing)} "
                f"(provided: {', '.join(provided) or 'none'})")
    if agents.tasks == "scrl" and agents.actions == "grpo" and agents.group < 2:
        return (f"agents.tasks = 'scrl': learned actions' rewards are normalised among the rollouts of each "
                f"sub-problem; set agents.group >= 2 (G rollouts of each task drawn; now {agents.group})")


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
    if _needs_groups(exp) and (agents.group or market.batch) < 2:
        return (f"agents.group = {agents.group}: a group-relative advantage needs at least 2 "
                f"rollouts per group (raise market.batch, or set agents.advantage = \"local\")")


def _funding_fits_int64(exp: Experiment) -> str | None:
    """The house's sure outlay over the run, in micro-credits, stays below int64 / 1000: one unit of reward
    per episode, and every newborn funded (at most max_agents births a round). The margin of 1000 is for
    worlds paying more than one unit, for the first population (its size is bounded by memory, and a sweep
    reports a point too big to allocate as a failed run), and for what bids move between agents; past it the
    ledger refuses the transfer that would overflow (LedgerError) rather than let a balance wrap."""
    market, population, episodes = exp.market, exp.population, exp.run.episodes
    rounds = -(-episodes // market.batch)
    newborns = rounds * population.max_agents * population.births
    outlay = (episodes * market.reward_scale + newborns * population.initial_wealth) * MICRO
    if outlay > MAX_MICRO / 1000:
        key = "population.initial_wealth" if newborns * population.initial_wealth >= episodes * market.reward_scale \
            else "market.reward_scale"
        value = population.initial_wealth if key.startswith("population") else market.reward_scale
        return (f"{key} = {value!r}: the house would issue up to {outlay / MICRO:.3g} credits over "
                f"run.episodes = {episodes}, past {MAX_MICRO / 1000 / MICRO:.3g} (int64 micro-credits / 1000); "
                f"lower it or run.episodes")


MAX_AGENTS, MAX_CELLS = 10**15, 10**17  # agents in a population; market.batch x agents (a [B, N] array's cells)


def _counts_fit_memory(exp: Experiment) -> str | None:
    """Population sizes, and their product with market.batch (the [B, agents] bid arrays), whose array sizes
    in bytes fit int64 with room to spare: past them numpy cannot even state the size ("array is too big").
    Below them a size the machine cannot allocate is a MemoryError: one line from the CLI (a failed run in
    a sweep)."""
    population, batch = exp.population, exp.market.batch
    for key in ("initial_agents", "max_agents"):
        if getattr(population, key) > MAX_AGENTS:
            return f"population.{key} = {getattr(population, key)}: at most {MAX_AGENTS:,}"
    if batch * max(population.initial_agents, population.max_agents) > MAX_CELLS:
        return (f"market.batch = {batch}: times population.max_agents = {population.max_agents} is past "
                f"{MAX_CELLS:,} cells of bids a round")


CHECKS = (_counts_fit_memory, _funding_fits_int64, _scenario_learns_what_is_asked, _features_are_read, _lm_keys_are_read,
          _token_price_is_charged,
          _objective_gets_its_signals,
          _scenario_has_a_skill_library,
          _device_is_there,
          _learned_bids_clear_by_softmax, _bid_keys_are_read, _branches_can_be_played, _groups_divide_the_batch,
          _skill_groups_fit,
          _credit_shapes_learned_actions,
          _world_feeds_the_estimator, _world_offers_the_tasks, _credit_settings_are_read, _groups_hold_two_rollouts)
"""How [run], [population], [agents], [skills] and [market] fit together, in order (the first problem is the one
reported); each returns the problem, or None."""


SCALARS = {"int": (int, "an integer"), "float": ((int, float), "a number"), "bool": (bool, "true or false")}


def _section(path: str, data: dict, name: str, cls, moved=()):
    """``data``'s table ``name`` as ``cls``, every key checked. A field that is itself a config dataclass
    is a nested table (``[recsys.world]``, ``--set recsys.world.users=300``), checked the same way and
    named by its dotted path (``recsys.world.userz``). An unknown key is matched against ``moved`` too:
    the full names of keys that left this section (``skills.credit``)."""
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
                              f"{_did_you_mean(str(first['loc'][-1]), [*_keys(cls), *moved])}") from None
        raise ConfigError(f"{path}: {key} = {value!r}: {first['msg']}") from None
    except TypeError as err:  # e.g. a positional mix-up pydantic reports as TypeError
        raise ConfigError(f"{path}: [{name}]: {err}") from None


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
