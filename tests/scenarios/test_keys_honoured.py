"""Keys a run cannot honour are refused in one line naming the key (exit 2), and the refusals say what they mean.

- ``agents.features`` is read by learned bids (and by a rule-logit critic): without them it was silently ignored;
- ``skills.credit = "none"`` turns skill evolution off, so a scenario without a skill library accepts it;
- a group that must divide ``market.batch`` is named in full ("a multiple of 4");
- ``market.token_price`` needs a policy that reports the tokens its calls use, not a scenario that declares
  LoRA-trainable actions: a plugin whose policy reports tokens is charged, one whose policy does not is refused.
"""

import json
import sqlite3
import sys

import pytest

from market.ledger import Reason
from scenarios.cli.main import main
from scenarios.registry import ScenarioError
from scenarios.run.config import ConfigError, load
from scenarios.run.runner import build_model
from tests.scenarios.ladder import CLIMBERS, ladder


def refusal(scenario: str, sets: list[str]) -> str:
    with pytest.raises(ConfigError) as err:
        load(scenario, sets)
    return str(err.value)


def cli(argv, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_:
        sys.exit(main(argv))
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


def test_features_without_learned_bids_are_refused_in_one_line_naming_the_key(tmp_path, capsys):
    code, out, err = cli(["run", "relay", "--set", "agents.features=minilm", "--out", str(tmp_path)], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "agents.features = 'minilm'" in err and "learned bids" in err
    assert not (tmp_path / "catallax.db").exists()  # refused before anything was written
    assert load("relay", ["market.bid_scheme=learned", "agents.features=agent"]).agents.features == "agent"
    assert load("blocks", ["agents.actions=grpo", "agents.objective=tppo", "agents.features=agent",
                           "market.bid_scheme=holland"]).agents.features == "agent"  # tppo's critic reads them


def test_a_probe_is_refused_where_the_scenario_gathers_its_own_evidence():
    assert "scenario 'recsys' gathers its skills' evidence in its own pipeline" in refusal(
        "recsys", ["skills.evidence=probe"])
    assert refusal("procurement", ["skills.credit=grse", "skills.probe=4"]).endswith(
        "skills.probe = 4: not read: it sizes the probe of skills.evidence = \"probe\" (now 'training')")
    assert load("wordmath", ["skills.credit=grse", "skills.probe=4"]).skills.probe == 4  # wordmath ships the probe


def test_a_set_that_turns_a_learner_off_takes_the_file_s_settings_of_it_but_not_the_user_s(tmp_path):
    off = load("desk", ["agents.actions=rule"])  # desk.toml sets [agents.lm]: its learner's, gone with it
    assert off.agents.actions == "rule" and off.agents.lm.lr == 1e-4 and load("desk").agents.lm.lr == 1e-3
    assert "--set agents.lm.lr=0.01: agents.lm.lr = 0.01: not read" in refusal(
        "desk", ["agents.actions=rule", "agents.lm.lr=0.01"])  # the user's own setting of it is refused
    inconsistent = tmp_path / "mine.toml"  # a file that sets a learner it turns off itself is refused
    inconsistent.write_text('[run]\nscenario = "desk"\n[agents]\nactions = "rule"\n[agents.lm]\nlr = 1e-3\n')
    assert "agents.lm.lr = 0.001: not read" in refusal(str(inconsistent), [])
    held = load("desk", ["market.bid_scheme=holland"])  # bids turned to Holland's: the LoRA learner keeps its settings
    assert held.market.bid_scheme == "holland" and held.agents.lm.lr == 1e-3


def test_skills_credit_none_is_the_off_setting_even_without_a_library():
    assert load("relay", ["skills.credit=none"]).skills.credit == "none"
    assert "scenario 'relay' has no skill library" in refusal("relay", ["skills.credit=none", "skills.every=2"])


def test_a_group_that_must_divide_the_batch_is_named_in_full():
    assert refusal("wordmath", ["skills.credit=grse", "skills.evidence=training", "agents.group=3"]).endswith(
        "agents.group = 3: market.batch (16) must be a multiple of 3")
    probe = load("wordmath", ["skills.credit=grse", "skills.evidence=probe", "agents.group=3"])  # it groups its own
    assert (probe.agents.group, probe.market.batch) == (3, 16)
    assert refusal("relay", ["market.bid_scheme=learned", "agents.bid_objective=reinforce", "agents.group=3",
                             "market.batch=8"]).endswith("agents.group = 3: market.batch (8) must be a multiple of 3")


METERED = '''
"""Two rungs; every action is charged as 500 tokens by a policy that counts them (as an LLM policy does)."""
import numpy as np
from pydantic.dataclasses import dataclass

from agents import RulePolicy, RuleSpace
from market import World


@dataclass
class Config:
    rungs: int = 2

''' + ladder() + '''

class Metered(RulePolicy):
    def resize(self, capacity):
        super().resize(capacity)
        self.rows = capacity

    def act(self, obs, winners):
        self.acted = getattr(self, "acted", []) + [winners[winners >= 0]]
        return super().act(obs, winners)

    def compute(self):
        acted, self.acted = getattr(self, "acted", []), []
        return 500 * np.bincount(np.concatenate([np.zeros(0, dtype=np.int64), *acted]), minlength=self.rows)


def build(cfg):
    space = ''' + CLIMBERS + '''
    return Ladder(cfg), Metered(space)


def metrics(model, episodes, cfg):
    return {}
'''


def test_token_price_needs_a_policy_that_reports_tokens_not_a_learned_actions_declaration(tmp_path, capsys):
    with pytest.raises(ScenarioError, match=r"market.token_price = 0.1: scenario 'relay''s policy \(RulePolicy\) "
                                            r"reports no LLM tokens"):
        build_model(load("relay", ["market.token_price=0.1"]))
    plugin = tmp_path / "metered.py"
    plugin.write_text(METERED)  # no learned_actions="lm": it was refused as making "no LLM calls"
    code, out, err = cli(["run", str(plugin), "--set", "market.token_price=1.0", "--set", "run.episodes=16",
                          "--set", "market.batch=4", "--json", "--out", str(tmp_path)], capsys)
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1])["conservation_ok"]
    with sqlite3.connect(tmp_path / "catallax.db") as db:
        charged = db.execute("SELECT count(*), sum(amount) FROM transfer WHERE reason = ?",
                             (int(Reason.COMPUTE),)).fetchone()
    assert charged[0] > 0 and charged[1] % 500_000 == 0  # 500 tokens at 1 credit per 1000: 0.5 credits an action


def test_recsys_market_modes_agent_count_is_derived_and_shown_and_a_users_other_count_is_refused(capsys):
    """Market mode fields recsys.agents_per_role agents per role: the count is a derived default the stored config
    and ``catallax config show`` carry; a population.initial_agents the model would not build is refused."""
    market = ['recsys.mode="market"']
    exp = load("recsys", market)
    assert exp.population.initial_agents == 9 and exp.derived["population.initial_agents"] == (20, 9)
    assert load("recsys", market + ["recsys.agents_per_role=5"]).population.initial_agents == 15
    assert "population.initial_agents = 40: market mode fields recsys.agents_per_role = 3 agents per role (9)" in \
        refusal("recsys", market + ["population.initial_agents=40"])
    code, out, _ = cli(["config", "show", "recsys", "--set", 'recsys.mode="market"'], capsys)
    assert code == 0 and any("initial_agents" in line and "9" in line and "derived" in line for line in out.splitlines())


def test_recsys_team_mode_refuses_the_auction_and_population_keys_it_does_not_read():
    for key in ("market.rent=0.05", "market.bid_scheme=learned", "population.initial_agents=40"):
        assert "not read: team mode has no auction and no population" in refusal("recsys", [key]), key
    assert load("recsys", ["market.batch=128"]).market.batch == 128  # the batch it reads
