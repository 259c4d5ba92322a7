"""Every combination of the learning keys either runs or is refused when the config is loaded.

A key a scenario cannot honour must exit 2 at validation, naming it, before any model loads: never a
traceback mid-run, never silently ignored. The walk loads every built-in scenario under every
(bids, bid_objective, features, actions) combination; the rule scenarios' accepted ones (numeric and
agent features: no model to load) are then built and run one round.
"""

import itertools

import pytest
import torch

from scenarios.registry import SCENARIOS, ScenarioError
from scenarios.run.config import ConfigError, load
from scenarios.run.runner import build_model

BIDS = ("market", "holland", "learned")
OBJECTIVES = ("value", "reinforce")
FEATURES = ("numeric", "agent", "minilm", "hf")
ACTIONS = ("rule", "grpo")
SMALL = {"relay": ["run.episodes=8"], "blocks": ["run.episodes=8", "blocks.heldout_count=2"],
         "recsys": ['recsys.mode="market"', "run.episodes=8", "recsys.world.users=60", "recsys.world.items=60"],
         "boltzmann": ["run.episodes=2"], "wordmath": ["run.episodes=2"], "procurement": ["run.episodes=2"],
         "multihop": ["run.episodes=2"], "plangrid": ["run.episodes=2"],
         "longlookup": ["run.episodes=2"], "errands": ["run.episodes=2"], "review": ["run.episodes=2"],
         "desk": ["run.episodes=2"]}


def combinations():
    for bids, objective, features, actions in itertools.product(BIDS, OBJECTIVES, FEATURES, ACTIONS):
        sets = [f"agents.actions={actions}"] + ([] if bids == "market" else [f"market.bid_scheme={bids}"])
        if bids == "learned":
            sets += [f"agents.bid_objective={objective}", f"agents.features={features}"]
        elif (objective, features) != ("value", "numeric"):
            continue  # read only by learned bids: one combination of them is enough
        yield sets


def outcome(scenario: str, sets: list[str]):
    try:
        return load(scenario, SMALL[scenario] + sets)
    except ConfigError as err:
        return str(err)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_each_combination_loads_or_is_refused_naming_a_key(scenario):
    accepted = 0
    for sets in combinations():
        exp = outcome(scenario, sets)
        if isinstance(exp, str):
            assert "agents." in exp or "market." in exp, (sets, exp)  # the refusal names the key
        else:
            accepted += 1
    assert accepted >= 1, scenario  # at least the scenario as shipped


@pytest.mark.parametrize("scenario", ["relay", "blocks", "recsys"])
def test_accepted_learning_combinations_run_a_round(scenario):
    ran = 0
    for sets in combinations():
        if any(f in s for s in sets for f in ("minilm", "hf")):
            continue  # these load a model: tests/agents/test_bid_head.py runs them
        exp = outcome(scenario, sets)
        if isinstance(exp, str):
            continue
        model = build_model(exp)
        if hasattr(model, "attach"):
            from market.store import RunStore

            model.attach(RunStore.create("sqlite://", scenario, 0, exp.to_dict()))
        model.step()
        ran += 1
    assert ran >= 3, scenario


def test_what_is_refused_where():
    assert "no learned bids" in outcome("boltzmann", ["market.bid_scheme=learned"])
    exp = outcome("wordmath", ["market.bid_scheme=learned", "agents.actions=grpo"])  # the headline loop, on its defaults
    assert exp.agents.features == "numeric" and exp.agents.group == 4 and exp.market.batch == 16
    assert "[agents.lm] is read only by the LoRA learner" in outcome("relay", ["agents.actions=grpo", "agents.lm.lora_rank=4"])
    assert "agents.lm.lr = 0.001: not read" in outcome("wordmath", ["agents.lm.lr=0.001"])
    assert "[agents.logits] is read only by learned action logits" in outcome("wordmath", ["agents.actions=grpo",
                                                                                         "agents.logits.rule_logit=1.0"])
    assert "read only by learned action logits" in outcome("relay", ["agents.logits.per_state=true"])
    assert "read only by learned action logits" in outcome("wordmath", ["agents.actions=grpo", "agents.logits.per_state=true"])
    assert "no state to read" in outcome("relay", ["agents.actions=grpo", "agents.logits.per_state=true", "agents.features=agent"])
    assert outcome("relay", ["agents.actions=grpo", "agents.logits.per_state=true", "agents.features=minilm"]).agents.logits.per_state
    assert "runs a model of its own, whose agents report no LLM" in outcome("boltzmann", ["market.token_price=0.1"])
    with pytest.raises(ScenarioError, match="policy \\(RulePolicy\\) reports no LLM tokens to charge"):
        build_model(load("relay", ["market.token_price=0.1"]))  # which policy reports tokens: known once it is built
    assert "only the hf backend" in outcome("wordmath", ["agents.actions=grpo", "wordmath.llm.backend=\"vllm\""])
    assert "no learned action logits" in outcome("recsys", ["agents.actions=grpo"])
    with pytest.raises(ConfigError, match="team mode has no auction"):
        load("recsys", ["market.bid_scheme=learned"])


def test_objectives_run_on_rule_logits_where_their_signals_are_there_and_are_refused_elsewhere():
    """agents.objective (agents/objectives): on blocks' rule logits the objectives that read only what a round
    gives run, and move the logits differently from grpo; the others are refused naming their missing signal."""
    from agents.objectives import NAMES

    sets = ["agents.actions=grpo", "run.episodes=64", "market.batch=16", "agents.group=4"]
    logits = {}
    for name in NAMES:
        exp = outcome("blocks", sets + [f"agents.objective={name}"])
        if isinstance(exp, str):
            assert f"agents.objective = {name!r}" in exp and "needs signals" in exp, exp
            continue
        model = build_model(exp)
        for _ in range(4):
            model.step()
        logits[name] = model.policy.action_learner.theta.detach().clone()
    assert {"grpo", "tppo", "pact", "eapo", "tree_opsd", "focus", "sero"} <= set(logits)
    assert logits["grpo"].abs().sum() > 0
    for name in ("tppo", "pact", "eapo", "tree_opsd", "sero"):
        assert not torch.equal(logits[name], logits["grpo"]), name
    assert "item_logits" in outcome("wordmath", ["agents.actions=grpo", "agents.objective=ca_pg"])  # the LoRA learner's
    assert not isinstance(outcome("wordmath", ["agents.actions=grpo", "agents.objective=empo"]), str)  # effects: it runs
    assert "set agents.actions" in outcome("relay", ["agents.objective=eapo"])
