"""The defaults that depend on other keys, derived once by one pure function: the run's effective config.

A key the user did not set may take a default that depends on others: what a learner needs comes along
with it. Learned bids clear by softmax (reinforce bids are trained on its probabilities; a value learner
needs its exploration, since under first-price clearing only the top bidder's turns ever correct a value);
a group-relative advantage needs a round of rollouts (``market.batch`` = 8 at least, in whole groups of
``agents.group``); learned bids read the scenario's first feature source when ``numeric`` is not one of its
own (wordmath's agents bid from ``agent``); value bids take the scenario's own defaults (``SPEC.value_bids``:
relay's margin); a scenario with a skill library groups 4 rollouts of a question (``agents.group``,
:data:`SKILL_GROUP`); the chosen credit estimator's, objective's and task sampler's settings table holds each of its
settings (agents/config.py PLUGIN_TABLES), so the effective config shows what the run reads. A key the user set is never changed: a value that contradicts what the run needs is
refused by a rule (scenarios/run/rules.py), naming it.

The effective config is what the run stores (its ``config``) and what ``catallax config show`` prints;
deriving it again from a stored config changes nothing, since every key is then set.
"""

from __future__ import annotations

import dataclasses

from agents.config import PLUGIN_TABLES
from scenarios.run.experiment import Experiment
from scenarios.spec import ScenarioSpec


SKILL_GROUP = 4
"""agents.group where a scenario's skill library compares rollouts and the config leaves it unset: 4 rollouts
of each question (one grouping for the skills' credit and the LM learner alike; 0, the whole round, is no
question's group)."""


def effective(exp: Experiment, given: set[str], spec: ScenarioSpec, own: dict | None = None) -> Experiment:
    """``exp`` (as parsed: the keys set, the rest at their dataclass defaults) with the dependent defaults of
    the keys not in ``given`` (dotted keys: ``market.clearing``) derived for a scenario declaring ``spec``,
    and ``derived`` naming each key whose value they changed (dotted key, a learner table's as
    ``agents.value.margin`` -> (parsed, effective)). ``own``: the scenario's own defaults of [market] and
    [population] keys (its module's ``defaults(exp)``), applied first, as if its file set them. A new
    experiment: ``exp`` is left as it is."""
    scenario = _scenario_defaults(exp, own or {}, given)
    given = given | set(own or {})
    agents = _agents(scenario, given, spec)
    market = _market(scenario, agents, given)
    changed = {**dict(_changed("market", exp.market, market)), **dict(_changed("population", exp.population,
               scenario.population)), **dict(_changed("agents", exp.agents, agents))}
    return dataclasses.replace(scenario, agents=agents, market=market, derived=changed)


def _scenario_defaults(exp: Experiment, own: dict, given: set[str]) -> Experiment:
    """``exp`` with the scenario's defaults of the [market] and [population] keys it does not set."""
    tables: dict[str, dict] = {}
    for key, value in own.items():
        table, _, name = key.partition(".")
        if table not in ("market", "population") or not name:
            raise ValueError(f"a scenario's defaults name [market] and [population] keys; {key!r} is neither")
        if key not in given:
            tables.setdefault(table, {})[name] = value
    return dataclasses.replace(exp, **{t: dataclasses.replace(getattr(exp, t), **kv) for t, kv in tables.items()})


def _changed(prefix: str, old, new):
    """(dotted key, (old, new)) of each leaf that differs, a nested table's by its own keys."""
    for f in dataclasses.fields(old):
        a, b = getattr(old, f.name), getattr(new, f.name)
        if a == b or isinstance(a, dict):  # a plugin table: the chosen one's defaults added, no value replaced
            continue
        if dataclasses.is_dataclass(a):
            yield from _changed(f"{prefix}.{f.name}", a, b)
        else:
            yield f"{prefix}.{f.name}", (a, b)


def _agents(exp: Experiment, given: set[str], spec: ScenarioSpec):
    agents, changes = exp.agents, {}
    if exp.market.bid_scheme == "learned":
        offered = spec.bid_features
        if "agents.features" not in given and offered and agents.features not in offered:
            changes["features"] = offered[0]
        if agents.bid_objective == "value":
            own = {key: value for key, value in spec.value_bids.items() if f"agents.value.{key}" not in given}
            if own:
                changes["value"] = dataclasses.replace(agents.value, **own)
    if spec.skill_library and "agents.group" not in given:
        changes["group"] = SKILL_GROUP
    for table, (key, none) in PLUGIN_TABLES.items():  # the chosen plugin's settings, in full
        chosen = getattr(agents, key)
        if chosen != none:
            changes[table] = getattr(agents, table).filled(chosen)
    return dataclasses.replace(agents, **changes) if changes else agents


def _market(exp: Experiment, agents, given: set[str]):
    """``agents``: the derived [agents] (a skill library's G counts as set)."""
    market, changes = exp.market, {}
    if market.bid_scheme == "learned" and "market.clearing" not in given:
        changes["clearing"] = "softmax"
    if agents.needs_groups(market.bid_scheme) and "market.batch" not in given:
        G = agents.group or 1  # 0: the round is the group
        if market.batch < 8 or market.batch % G:
            changes["batch"] = -(-max(market.batch, 8) // G) * G
    return dataclasses.replace(market, **changes) if changes else market
