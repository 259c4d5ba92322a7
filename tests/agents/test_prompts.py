"""The framework's own prompts (agents/llm/prompts.py) belong to the world: generic defaults, wordmath's its own."""

import re
from pathlib import Path

from scenarios.text import Prompts
from scenarios.text import Role
from scenarios import wordmath

ROOT = Path(__file__).resolve().parents[2]
WORDMATH_WORDS = {*wordmath.NAMES, *wordmath.ITEMS, "cups", "toys", "eggs", "cows", "Joe", "Kim", "extractor",
                  "answerer", "calculator", "answer is", "expression"}
"""Words of wordmath's prompts and problems that no other world's prompt has any business carrying."""


def words_of_wordmath(text: str) -> set[str]:
    return {w for w in WORDMATH_WORDS if re.search(rf"\b{w}\b", text, flags=re.IGNORECASE)}


def test_defaults_carry_nothing_of_any_task():
    roles = [Role("classifier", "Label the message positive or negative."), Role("router", "Route the label.")]
    pool = {"classifier": [(1.0, ["Read the whole message first.", "example: Act? => yes"])]}
    resolved = Prompts().resolve(roles, pool)
    for field, value in vars(resolved).items():
        for text in value.values() if isinstance(value, dict) else [value]:  # a demonstration per role
            assert not words_of_wordmath(text), field
            assert not re.search(r"\d", re.sub(r'(?i)step"?:? 0|-\d\b', "", text)), field  # no numbers but the format's
    # no worked example in the pool: no demonstration rather than another world's (or another role's)
    assert resolved.explore_demo == {"classifier": "", "router": ""}
    assert resolved.exploit_demo["classifier"].endswith("=> Read the whole message first.")  # its own line, no wake
    assert resolved.exploit_demo["router"] == ""  # the router has no line: it is shown none, not the classifier's
    assert "classifier-example-1" in resolved.diagnose_demo and "router" not in resolved.diagnose_demo


def test_the_explore_demo_is_made_from_the_worlds_own_worked_example():
    pool = {"router": [(0.5, ["example: Label: positive => support", "example: Act? => no"])]}
    demo = Prompts().resolve([Role("router", "Route.")], pool).explore_demo["router"]
    assert demo == ("example: Task: Label: positive | Wrote: (empty) | Correct: support | Write a worked example. "
                    "=> example: Label: positive => support")
    own = Prompts(explore_demo="example: mine => mine", exploit_demo="", diagnose_demo="")
    assert own.resolve([Role("router", "Route.")], pool) == own  # a world's own demonstrations are kept as given


def test_wordmath_brings_its_own_demonstrations():
    policy_prompts = wordmath.Wordmath.prompts.resolve(wordmath.ROLES, wordmath.POOL)
    assert "Joe has 3 cups" in policy_prompts.explore_demo and "extractor" in policy_prompts.diagnose_demo


def test_no_task_text_in_agents_or_skills():
    """Prompts, demonstrations and worked examples live with their world: the framework's packages carry no
    problem's names, items or worked arithmetic (docstrings may name wordmath as an example of a scenario)."""
    found = []
    for path in sorted([*(ROOT / "agents").rglob("*.py"), *(ROOT / "skills").rglob("*.py")]):
        text = path.read_text()
        found += [(path.name, w) for w in {*wordmath.NAMES, *wordmath.ITEMS, "cups", "toys", "Joe", "Kim"}
                  if re.search(rf"\b{w}\b", text)]
        found += [(path.name, m) for m in re.findall(r"=> *\d+ [-+*/] \d+", text)]  # a worked sum
        found += [(path.name, m) for m in re.findall(r"example: [^\n]*?\d+ [a-z]+ [^\n]*=>", text)]  # a worked problem
    assert not found


def test_a_rewrite_ends_where_the_ask_s_next_field_would_begin():
    """SmolLM2 revising desk's format-breaking example wrote ``example: What is 2 + 3? => Answer: 5 | Write a worked
    example.``: it went on into the ask's next field. A rewrite stops at ``|``, which no demonstrated line holds."""
    prompts = Prompts().resolve(wordmath.ROLES, wordmath.POOL)
    explore = prompts.rewrite("explore", "extractor", {"given": "g", "wrote": "w", "correct": "c"}, max_tokens=8)
    exploit = prompts.rewrite("exploit", "answerer", {"role": "r", "skills": "a | b"}, max_tokens=8)
    assert "|" in explore.stop and "|" in exploit.stop and "\n" in explore.stop
    for demo in [*prompts.explore_demo.values(), *prompts.exploit_demo.values()]:
        assert "|" not in demo.rsplit(" => ", 1)[-1]  # the demonstrated line itself
