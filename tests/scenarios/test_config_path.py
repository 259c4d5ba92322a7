"""The one config path: parsed values are never rewritten, dependent defaults are derived once (and stored
with the run), ``catallax config show`` prints the effective config, and a renamed key still reads with a
one-line warning naming the new key."""

from __future__ import annotations

import dataclasses
import json
import tomllib
import warnings

import pytest

from scenarios.cli.main import main
from scenarios.registry import get_scenario
from scenarios.run.config import ConfigError, DeprecatedKey, from_dict, load
from scenarios.run.derived import effective


def test_dependent_defaults_are_derived_from_what_was_not_set():
    exp = load("relay", ["market.bid_scheme=learned"])
    assert exp.market.clearing == "softmax" and exp.agents.value.margin == 0.3  # relay's SPEC.value_bids
    assert exp.derived == {"market.clearing": ("first_price", "softmax"), "agents.value.margin": (0.02, 0.3)}
    kept = load("relay", ["market.bid_scheme=learned", "market.clearing=first_price", "agents.value.margin=0.1"])
    assert (kept.market.clearing, kept.agents.value.margin, kept.derived) == ("first_price", 0.1, {})
    assert load("relay").derived == {}


def test_effective_is_pure_and_a_stored_config_derives_nothing_more():
    exp = load("relay", ["market.bid_scheme=learned", "agents.bid_objective=reinforce"])
    assert exp.market.batch == 8 and exp.derived["market.batch"] == (1, 8)  # a round is one group of 8
    parsed = dataclasses.replace(exp, market=dataclasses.replace(exp.market, batch=1, clearing="first_price"))
    before = parsed.to_dict()
    after = effective(parsed, {"market.bid_scheme", "agents.bid_objective"}, get_scenario("relay").spec)
    assert parsed.to_dict() == before and after.to_dict() == exp.to_dict()  # the input is left as it was
    again = from_dict(exp.to_dict(), "stored")  # what a resume reads: every key set, nothing derived again
    assert again.to_dict() == exp.to_dict() and again.derived == {}


def test_the_old_name_of_the_bid_scheme_reads_as_the_new_one_with_a_warning():
    with pytest.warns(DeprecatedKey, match=r"agents.bids is deprecated: read as market.bid_scheme = 'learned'"):
        old = load("relay", ["agents.bids=learned"])
    assert old.to_dict() == load("relay", ["market.bid_scheme=learned"]).to_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load("relay", ["agents.bids=market"]).market.bid_scheme == "holland"  # the scenario's own: no warning
    with pytest.raises(ConfigError, match=r"^--set agents.bids=fixd: market.bid_scheme = 'fixd'"), \
            pytest.warns(DeprecatedKey):
        load("relay", ["agents.bids=fixd"])  # a bad value is blamed on the --set that gave it


def test_config_show_prints_the_effective_config_as_toml(capsys):
    assert main(["config", "show", "relay", "--set", "agents.bids=learned", "--seed", "3"]) == 0
    out, err = capsys.readouterr()
    assert err.strip().count("\n") == 0 and "catallax: warning: agents.bids is deprecated" in err  # one line
    assert 'clearing = "softmax"  # derived (parsed: "first_price")' in out
    shown = tomllib.loads(out)
    exp = load("relay", ["market.bid_scheme=learned"], seed=3)
    stored = {name: {k: v for k, v in table.items() if v is not None} for name, table in exp.to_dict().items()}
    assert json.loads(json.dumps(shown)) == json.loads(json.dumps(stored))  # what the run stores, key for key
    assert main(["config", "show", "relay", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == load("relay").to_dict()
