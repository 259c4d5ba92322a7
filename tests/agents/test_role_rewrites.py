"""Rewrites in the role's own format (agents/llm/prompts.py, agents/llm/births.py ``write_lines``): in a two-role world
written outside the package, births and skill edits show each role's rewrite that role's own worked example, so the
lines born for a role are in its format; a rewrite that copies the framework's own words is refused.

The LLM is a scripted stand-in that writes as a weak model does: it copies the format of the demonstration it is
shown (a new line in the shown line's shape) and, shown none, echoes the system line back.
"""

import zlib

import numpy as np
import pytest

from agents.backends.base import Completion, example
from scenarios.text import scenario as text_scenario
from agents.llm.prompts import REWRITE_SYSTEM
from scenarios.text import Prompts
from scenarios import build_model, load
from tests.agents.test_text_world import Scripted, write_triage

POOLS = '''
    pool = {"classifier": ["example: Message: I love it => positive", "example: Message: It broke => negative"],
            "router": ["example: Label: negative => support", "example: Label: positive => archive"]}
'''


class Copier(Scripted):
    """Acts (and wakes) by a hash of the prompt; a rewrite copies its demonstration's shape (a new line like the
    shown one), or, shown none, repeats the system line."""

    def generate(self, prompts):
        return [Completion(self.write(p), tokens=2, prompt_tokens=9) for p in prompts]

    @staticmethod
    def write(p) -> str:
        if p.system != REWRITE_SYSTEM:
            words = ("positive", "negative", "support", "archive")
            return words[zlib.crc32(f"{p.user}|{p.seed}".encode()) % 4]
        shown = [example(line) for line in p.skills.splitlines()]
        shown = [s[1] for s in shown if s]
        if not shown:
            return REWRITE_SYSTEM.split(". ")[0] + "."
        line = shown[-1]
        cut = line.rindex("=>")
        return f"{line[:cut]}(v{p.seed % 997}) {line[cut:]}"


@pytest.fixture
def two_roles(tmp_path, monkeypatch):
    write_triage(tmp_path, POOLS)
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: Copier())
    return tmp_path


def born_lines(policy, pool) -> dict[str, set[str]]:
    """role -> the lines births and edits wrote for it (every version's lines, less the pool's)."""
    out: dict[str, set[str]] = {}
    for v in policy.versions:
        for name in v["skills"]:
            line = policy.catalogue.lines[name]
            if line not in pool[v["role"]]:
                out.setdefault(v["role"], set()).add(line)
    return out


def test_births_and_edits_write_each_role_s_lines_in_its_own_format(two_roles):
    exp = load(str(two_roles / "triage.toml"), ["skills.credit=grse", "agents.group=2", "triage.validation=2",
                                                 "triage.heldout=4"], seed=2)  # a seed whose routers get births
    model = build_model(exp)
    for _ in range(6):
        model.step()
    policy = model.policy.unwrapped
    pool = {"classifier": ["example: Message: I love it => positive", "example: Message: It broke => negative"],
            "router": ["example: Label: negative => support", "example: Label: positive => archive"]}
    born = born_lines(policy, pool)
    assert born.get("classifier") and born.get("router"), born
    assert all(line.startswith("example: Message:") for line in born["classifier"]), born["classifier"]
    assert all(line.startswith("example: Label:") for line in born["router"]), born["router"]
    assert policy.counts["rewrites"] > 0


def test_each_role_is_shown_its_own_demonstration_and_an_echo_is_refused(two_roles):
    model = build_model(load(str(two_roles / "triage.toml")))
    policy = model.policy.unwrapped
    prompts = policy.prompts
    for role, shape in (("classifier", "Message:"), ("router", "Label:")):
        for kind, fields in (("explore", {"given": "x", "wrote": "y", "correct": "z"}),
                             ("exploit", {"role": "r", "skills": "s"})):
            demo = prompts.rewrite(kind, role, fields).skills
            assert shape in demo and ("Message:" if shape == "Label:" else "Label:") not in demo, (role, kind, demo)
    assert prompts.echoes("You improve the skills of an assistant.") and prompts.echoes("Task: 3 | Wrote: 4")
    assert not prompts.echoes("example: Label: negative => support")
    one = Prompts(explore_demo="example: a => b")  # a world's single demonstration: every role's, as it chose
    assert one.rewrite("explore", "router", {"given": "", "wrote": "", "correct": ""}).skills == "example: a => b"
    rows = np.flatnonzero(policy.role == policy.role_index["router"])[:1]
    policy.prompts = Prompts(explore_demo="", exploit_demo="")  # shown nothing, the copier echoes the system line
    before = policy.counts["malformed_rewrites"]
    policy.inherit(rows, rows, np.random.default_rng(0))
    assert policy.counts["malformed_rewrites"] == before + 1
    assert policy.records[-1]["reason"] == "echo"
