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


def test_the_learners_flat_keys_read_as_their_tables_keys_with_one_warning_line():
    old = ["market.bid_scheme=learned", "agents.bid_objective=reinforce", "agents.bid_scale=0.2", "agents.advantage=local"]
    with pytest.warns(DeprecatedKey) as said:
        exp = load("relay", old)
    assert len(said) == 2 and "agents.bid_scale is deprecated: read as agents.reinforce.scale = 0.2" in str(said[0].message)
    new = ["market.bid_scheme=learned", "agents.bid_objective=reinforce", "agents.reinforce.scale=0.2",
           "agents.reinforce.advantage=local"]
    assert exp.to_dict() == load("relay", new).to_dict()
    with pytest.warns(DeprecatedKey, match=r"skills.group is deprecated: read as agents.group = 8"):
        assert load("wordmath", ["skills.group=8"]).agents.group == 8


def test_a_set_of_the_new_name_overrides_a_files_old_key(tmp_path):
    path = tmp_path / "old.toml"
    path.write_text('[run]\nscenario = "blocks"\nepisodes = 16\n[market]\nbid_scheme = "learned"\n[agents]\nchild_value = 0.5\n')
    with pytest.warns(DeprecatedKey, match=r"agents.child_value is deprecated: read as agents.value.child = 0.5"):
        assert load(str(path)).agents.value.child == 0.5
    with pytest.warns(DeprecatedKey):
        assert load(str(path), ["agents.value.child=0.25"]).agents.value.child == 0.25


def test_a_stored_config_of_the_flat_layout_resumes_as_it_ran():
    """A run stored before the learner tables: every flat key and skills.group at its default beside the
    agents.group the run used. It reads back to the same experiment, in one warning line; relay has no skill
    library, so its stored skills.group (never read) does not become its G, while recsys's does."""
    for name, sets in (("relay", ["market.bid_scheme=learned", "agents.bid_objective=reinforce"]), ("recsys", [])):
        exp = load(name, sets)
        stored = exp.to_dict()
        agents = {k: v for k, v in stored["agents"].items() if k not in ("value", "reinforce", "logits", "lm")}
        agents |= {"bid_margin": exp.agents.value.margin, "advantage": exp.agents.reinforce.advantage,
                   "lm_lr": exp.agents.lm.lr, "rule_logit": exp.agents.logits.rule_logit}
        skills_group = exp.agents.group if name == "recsys" else 4
        agents["group"] = 0 if name == "recsys" else exp.agents.group  # recsys's G was skills.group
        flat = stored | {"agents": agents, "skills": stored["skills"] | {"group": skills_group}}
        with pytest.warns(DeprecatedKey) as said:
            again = from_dict(flat, "stored")
        assert len(said) == 1 and again.to_dict() == stored, name


def test_any_objective_module_is_a_value_of_agents_objective_and_a_misspelt_one_is_refused_naming_the_known():
    """agents.objective reads the objectives' package (one new file is a new value): a known name loads, a typo is
    refused at load with the known names."""
    assert load("relay", ["agents.actions=grpo", "agents.objective=eapo"]).agents.objective == "eapo"
    with pytest.raises(ConfigError, match=r"agents\.objective = 'grpp'.*unknown objective \(known: grpo, "):
        load("relay", ["agents.objective=grpp"])


def test_an_old_key_beside_its_new_name_is_refused_in_one_line_naming_both(tmp_path):
    """Neither value may silently win: a file setting agents.bid_margin and agents.value.margin apart is refused;
    the same value under both reads, with the warning."""
    path = tmp_path / "both.toml"
    path.write_text('[run]\nscenario = "relay"\n[market]\nbid_scheme = "learned"\n'
                    '[agents]\nbid_margin = 0.1\n[agents.value]\nmargin = 0.2\n')
    with pytest.raises(ConfigError, match=r"both\.toml: agents\.bid_margin = 0\.1 beside agents\.value\.margin = 0\.2: "
                                          r"agents\.bid_margin is the old name of agents\.value\.margin; set "
                                          r"agents\.value\.margin only$"):
        load(str(path))
    path.write_text(path.read_text().replace("margin = 0.2", "margin = 0.1"))
    with pytest.warns(DeprecatedKey):
        assert load(str(path)).agents.value.margin == 0.1
