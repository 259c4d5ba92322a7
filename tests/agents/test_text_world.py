"""The text-world API (scenarios/text/world.py): a world written outside the package, in one class, runs in the
market; the framework's own prompts carry nothing of another world; what the world lacks is refused at load.

The LLM is a scripted stand-in (each answer a function of the prompt), so the checks are exact and fast; the
real-model runs are the procurement scenario's (tests/scenarios/test_procurement.py).
"""

import re
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest

from scenarios.text import scenario as text_scenario
from agents.backends.base import Completion, Stats
from scenarios import build_model, load
from scenarios import procurement, wordmath

TRIAGE = '''
"""Triage: a classifier labels a customer message, a router sends the label on."""
from scenarios.text import Role, TextWorld

MESSAGES = ("I love the new update", "The app crashes every time", "Thanks for the quick help", "Refund me now")


class Triage(TextWorld):
    roles = (Role("classifier", "Label the customer message. Reply: positive or negative.", max_tokens=4),
             Role("router", "Route a labelled message. Reply: support or archive.", max_tokens=4))
    pool = {"classifier": ["Read the whole message.", (0.5, ["Complaints are negative."])],
            "router": [(0.5, ["Negative messages go to support."])]}
    stages = ("A message waits for a label.", "A label waits for a route.")
    horizon = 4

    def problem(self, rng):
        return int(rng.integers(len(MESSAGES)))

    def start(self, problem):
        return {"message": MESSAGES[problem], "bad": problem % 2 == 1 or problem == 3, "label": None, "route": None}

    def read(self, state, role):
        return f"Message: {state['message']}" if role == "classifier" else f"Label: {state['label']}"

    def may_act(self, state, role):
        return (state["label"] is None) == (role == "classifier")

    def stage(self, state):
        return int(state["label"] is not None)

    def act(self, state, role, text):
        word = text.strip().lower().split(" ")[0].strip(".")
        if role == "classifier" and word in ("positive", "negative"):
            state["label"] = word
        elif role == "router" and word in ("support", "archive"):
            state["route"] = word
        else:
            return f"unreadable: {text!r}"

    def done(self, state):
        return state["route"] is not None

    def reward(self, state):
        return float(state["route"] == ("support" if state["bad"] else "archive"))
'''
CORRECT = '''
    def correct(self, state, role):
        if role == "classifier":
            return "negative" if state["bad"] else "positive"
        return "support" if state["bad"] else "archive"
'''
TOML = '''
[run]
scenario = "triage.py"
episodes = 24

[market]
batch = 4

[population]
initial_agents = 6
birth_interval = 1
p_exploit = 0.5
p_explore = 0.5
max_agents = 30
'''


TRIAGE_POOL = '''    pool = {"classifier": ["Read the whole message.", (0.5, ["Complaints are negative."])],
            "router": [(0.5, ["Negative messages go to support."])]}
'''


def write_triage(folder, pool: str = TRIAGE_POOL):
    """The triage world written into ``folder`` as a user's own (``triage.py`` with ``correct``, ``triage.toml``),
    its skill pool replaced by ``pool`` (the lines of a ``pool = {...}`` assignment)."""
    assert TRIAGE_POOL in TRIAGE
    (folder / "triage.py").write_text(TRIAGE.replace(TRIAGE_POOL, pool) + CORRECT)
    (folder / "triage.toml").write_text(TOML)
    return folder

class Scripted:
    """Answers each prompt by a hash of it; records every prompt the framework sends."""

    name = "scripted"

    def __init__(self):
        self.stats, self.scored_tokens, self.sent = Stats(), np.zeros(0, dtype=np.int64), []

    def generate(self, prompts):
        self.sent += prompts
        words = ("positive", "negative", "support", "archive", "Read every word before you answer, twice.")
        return [Completion(words[zlib.crc32(f"{p.user}|{p.seed}".encode()) % 5], tokens=2, prompt_tokens=9)
                for p in prompts]

    def score(self, prompts):
        self.sent += prompts
        self.scored_tokens = np.full(len(prompts), 9, dtype=np.int64)
        return np.array([zlib.crc32(f"{p.skills}|{p.user}".encode()) % 2000 / 1000 - 1 for p in prompts])

    def close(self):
        pass


@pytest.fixture
def triage(tmp_path, monkeypatch):
    """A triage world written outside the package (with ``correct``), its TOML, and the scripted LLM."""
    (tmp_path / "triage.py").write_text(TRIAGE + CORRECT)
    (tmp_path / "triage.toml").write_text(TOML)
    backend = Scripted()
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: backend)
    return tmp_path, backend


def words_of(*worlds) -> set[str]:
    """Distinctive words of other worlds' prompts, pools and problems."""
    out = {*wordmath.NAMES, *wordmath.ITEMS, "cups", "Joe", "extractor", "answerer", "calculator", "expression"}
    return out | {*procurement.ITEMS, "negotiator", "splitter", "seller", "Budget", "offer"}


def test_no_prompt_the_framework_sends_carries_another_worlds_words(triage):
    """Births (exploit and explore rewrites) and skill edits with the LLM diagnoser, in a world whose pool has no
    worked example at all: every prompt sent is the world's own or the generic defaults."""
    folder, backend = triage
    exp = load(str(folder / "triage.toml"), ["skills.credit=grse", "skills.diagnoser=llm", "agents.group=2",
                                             "triage.validation=2", "triage.heldout=4"], seed=1)
    model = build_model(exp)
    for _ in range(6):
        model.step()
    summary = text_scenario.metrics(model, [], exp.scenario)
    assert summary["rewrites"] > 0 and model.policy.evolver.counts["edit_passes"] > 0
    systems = {p.system for p in backend.sent}
    assert any("improve the skills" in s for s in systems) and any("workflow" in s for s in systems)
    foreign = words_of()
    for p in backend.sent:
        text = f"{p.system}\n{p.skills}\n{p.user}"
        assert not {w for w in foreign if re.search(rf"\b{w}\b", text, flags=re.IGNORECASE)}, text
    assert 0 <= summary["heldout_reward"] <= 1 and 0 <= summary["complete_agent_reward"] <= 1


def test_sampled_actions_are_seeded_by_the_run_seed(triage):
    """At a temperature above 0, two run seeds sample with different seeds, and one run seed samples the same way
    again: before, an action's seed was its count and world only, the same in every run, so seeds sampled alike."""
    folder, backend = triage

    def seeds(seed: int) -> list[int]:
        backend.sent = []
        model = build_model(load(str(folder / "triage.toml"), ["triage.policy.temperature=0.7"], seed=seed))
        for _ in range(2):
            model.step()
        return [p.seed for p in backend.sent if p.temperature > 0 and p.max_tokens > 1]

    first, other = seeds(1), seeds(2)
    assert first and other and not set(first) & set(other)
    assert seeds(1) == first


def test_a_world_gives_its_own_value_bid_defaults_and_a_run_key_overrides_them(triage):
    folder, _ = triage
    source = (folder / "triage.py").read_text()
    (folder / "triage.py").write_text(source.replace("class Triage(TextWorld):\n",
                                                     "class Triage(TextWorld):\n    value_bids = {'newcomer': 0.1}\n", 1))
    toml = str(folder / "triage.toml")
    assert load(toml, ["market.bid_scheme=learned"]).agents.value.newcomer == 0.1
    assert load(toml, ["market.bid_scheme=learned", "agents.value.newcomer=0.3"]).agents.value.newcomer == 0.3
    assert load(str(write_triage(folder) / "triage.toml"), ["market.bid_scheme=learned"]).agents.value.newcomer == 0.5


def test_the_world_moves_by_text_and_a_refusal_is_a_forfeit_on_an_unchanged_state(triage):
    folder, _ = triage
    model = build_model(load(str(folder / "triage.toml")))
    batch, board = model.world, model.world.board
    batch.reset(2, np.random.default_rng(0))  # two worlds, by hand
    obs = batch.observe()
    assert board.summaries(obs) == ["A message waits for a label."] * 2
    assert board.illegal("router", obs[0]) and not board.illegal("classifier", obs[0])
    assert board.parse("classifier", "maybe", obs[0]) == (None, "unreadable: 'maybe'")
    assert board.parse("classifier", "negative.", obs[0])[0] == "negative."
    board.deliver(["negative.", None])
    reward, done = batch.step(np.array([0, -1]), np.array([True, False]))
    assert batch.states[0]["label"] == "negative" and batch.states[1]["label"] is None and not done.any()
    after = batch.observe()
    assert after[0, 5] == 1 and after[1, 5] == 0 and (after[1] == obs[1]).all()  # unchanged: the same observation
    assert board.state_at(obs[0])["label"] is None  # an old observation's state, replayed from the move log
    assert board.lesson(after[0], "router")[0] == "Label: negative"


def test_what_the_world_lacks_is_refused_at_load_naming_the_method_and_the_key(tmp_path):
    (tmp_path / "triage.py").write_text(TRIAGE)
    (tmp_path / "triage.toml").write_text(TOML)
    cmd = [sys.executable, "-m", "scenarios.cli.main", "run", str(tmp_path / "triage.toml"), "--out", str(tmp_path)]
    for extra, key in (([], "population.p_explore"), (["--set", "population.p_explore=0", "--set", "skills.credit=grse"],
                                                        "skills.credit")):
        done = subprocess.run(cmd + extra, capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])
        assert done.returncode == 2, done.stderr[-600:]
        assert key in done.stderr and "Triage.correct(state, role)" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run(cmd + ["--set", "population.p_explore=0", "--set", "agents.objective=sero"],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_a_world_module_without_a_text_world_is_left_to_the_registry(tmp_path):
    from scenarios.registry import ScenarioError, get_scenario

    (tmp_path / "empty.py").write_text(textwrap.dedent('"""Nothing here."""\nX = 1\n'))
    with pytest.raises(ScenarioError, match="defines Config, metrics, build"):
        get_scenario(str(tmp_path / "empty.py"))


def test_a_killed_and_resumed_text_world_run_ends_with_the_ledger_of_an_uninterrupted_one(triage, monkeypatch):
    """Births and LLM-diagnosed skill edits (which replay past states from the move log) across a resume."""
    from scenarios.run import runner
    from tests.scenarios.test_wordmath_skills import run_killed

    folder, _ = triage
    exp = load(str(folder / "triage.toml"), ["run.checkpoint_every=1", "run.episodes=20", "skills.credit=grse",
                                             "skills.diagnoser=llm", "agents.group=2", "triage.validation=2",
                                             "triage.heldout=4"])
    whole = runner.run_experiment(exp, f"sqlite:///{folder / 'a.db'}", progress=False, run_id="whole")
    url = f"sqlite:///{folder / 'b.db'}"
    run_killed(exp, url, monkeypatch)
    resumed = runner.resume_experiment("cut", url, progress=False)
    assert resumed["ledger_hash"] == whole["ledger_hash"] and resumed["conservation_ok"]
    assert resumed["rewrites"] == whole["rewrites"] > 0 and resumed["heldout_reward"] == whole["heldout_reward"]


OWN_KEYS = '''
from pydantic import Field
from pydantic.dataclasses import dataclass

from scenarios.text.scenario import TextWorldConfig


@dataclass
class Config(TextWorldConfig):
    messages: int = Field(4, ge=1, le=4)
    """How many of the messages problems are drawn from."""
    heldout: int = 8


def draw(rng, world):
    return int(rng.integers(world.config.messages))
'''


def test_a_world_declares_keys_of_its_own_and_reads_them_as_its_config(tmp_path, monkeypatch):
    from scenarios.run.config import ConfigError

    (tmp_path / "triage.py").write_text(TRIAGE.replace("return int(rng.integers(len(MESSAGES)))",
                                                       "return draw(rng, self)") + CORRECT + OWN_KEYS)
    (tmp_path / "triage.toml").write_text(TOML)
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Scripted())
    exp = load(str(tmp_path / "triage.toml"), ["triage.messages=1"])
    assert exp.scenario.messages == 1 and exp.scenario.heldout == 8  # its own key, its own default
    model = build_model(exp)
    assert model.world.board.world.config.messages == 1
    assert {model.world.board.problem(0, pid) for pid in range(20)} == {0}  # the world reads its key
    with pytest.raises(ConfigError, match=r"triage\.messages"):
        load(str(tmp_path / "triage.toml"), ["triage.messages=9"])
    (tmp_path / "triage.py").write_text(TRIAGE + "\n\nclass Config:\n    pass\n")
    with pytest.raises(ValueError, match="Config must subclass scenarios.text.scenario.TextWorldConfig"):
        load(str(tmp_path / "triage.toml"))
