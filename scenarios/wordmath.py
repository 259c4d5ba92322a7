"""Scenario ``wordmath``: weak LLM agents in a market beat the best of them alone.

The world: short two-step arithmetic word problems, generated locally with exact
answers (``problem``; five templates, numbers drawn per problem). Held-out
problems come from their own seed stream (``heldout_seed``), which training never
draws from. An episode's state goes text -> expression -> value; it ends when an
agent gives a final answer (reward 1 if it is exactly right) or at the horizon.

The world is written on the text-world API (scenarios/text/world.py), as any user's LLM world is: the class
``Wordmath`` holds a problem's state as plain Python (its problem, expression, value and answer) and says
how text moves it; the framework (scenarios/text/adapter.py, scenarios/text/scenario.py) batches it, draws the
held-out and validation streams, runs the agents and measures the baselines.

The agents (agents/llm/policy.py), all on one frozen SmolLM2-135M by default:

* ``extractor`` (LLM, 16 tokens): writes the problem as one expression, using
  only the problem's numbers; illegal once an expression exists;
* ``calculator`` (a tool, no LLM): evaluates the expression exactly (fractions);
  wakes only when an expression waits for its value;
* ``answerer`` (LLM, 10 tokens): reads the computed value only, states the final
  answer; illegal before there is a value;
* ``generalist`` (LLM, 10 tokens): answers from whatever it sees, at any stage.

None of them can do the task alone: a 135M model answers two-step problems
directly about 5% of the time, and the tool cannot read text. Newcomers draw a
random role, a random draw from their role's skill pool (worked examples, some of
them wrong on purpose; general lines; yes/no wake-up examples) and a random wake
threshold; the market (holland bids, bucket brigade, EoM path payment, rent) and
births (LLM rewrites) sort out who acts where. What routes the work, honestly
stated: SmolLM2's yes/no answers depend little on the state (its wake-up is mostly
a per-agent propensity the market selects on); legality (an extractor cannot act
once an expression exists, an answerer before there is a value, the calculator
only has work in between), the
forfeit rule (an agent that cannot act here sleeps on this state), and wealth
(the richest awake agent wins, and agents on successful paths get rich) do most
of the routing.

Skills live in the run's library (skills/library.py, named by the run id): every line of ``POOL``
is a skill of its role (``extractor-example-1``, ``answerer-rule-2``, ``generalist-wake-3``, ...;
skills/catalogue.py), an agent holds a list of them, and a birth's rewrite that makes a new line adds
a skill whose edit names the birth and the parent agent (agents/llm/policy.py). ``catallax skills
list|show|lineage|export --run RUN_ID`` reads it.

Metrics, measured in the same run on the same held-out problems (the framework's, under wordmath's names:
:func:`metrics`): ``heldout_accuracy`` (the trained market, frozen); ``single_agent_accuracy`` (the best
single live agent, each playing every step of each problem alone, its wake-up bypassed; only agents whose
role can give an answer are run, since a world ends only with an answer: the others score 0 alone by
construction); and ``complete_agent_accuracy``, the strong baseline Economy of Minds compares its market
with: one agent holding everything the market has (the calculator, every correct skill line of the
scenario's pool, the extractor's and the answerer's token budgets added up for each of its generations,
the same horizon), playing every step itself as the step needs (extract, compute, answer), with no auction
and no wrong worked examples: the curated one, a ceiling. Beside it, ``complete_agent_whole_pool_accuracy``
is the fair twin Economy of Minds uses: the same agent holding the whole initial pool of each role, the
wrong worked examples included.
"""

from __future__ import annotations

from dataclasses import dataclass as plain_dataclass
from fractions import Fraction

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.llm import parse
from scenarios.text import scenario as text_scenario
from scenarios.text import Prompts
from scenarios.text.scenario import TextWorldConfig
from scenarios.text import Role, TextWorld
from market.strict import STRICT

NAMES = ("Ann", "Tom", "Mia", "Sam", "Lea", "Ben", "Ivy", "Max")
ITEMS = ("apples", "pens", "cards", "stickers", "coins", "books", "shells", "marbles")
STAGES = ("text", "expression", "value")
SUMMARIES = ("The problem has no expression yet.", "The expression needs computing.", "The value needs reporting.")
"""What the wake-up question sees, per stage: short and distinct, so even a 135M model's yes/no
can follow an agent's wake examples (and the scores are cached per agent and summary)."""
WAKE = "Act?"



def calculate(state) -> str | None:
    """The calculator tool: the expression's exact value (None on a division by zero: nothing to write)."""
    value = parse.evaluate(state["expr"])
    return None if value is None else str(value)


ROLES = (
    Role("extractor", "Write the word problem as one arithmetic expression with its numbers and + - * / ( ). "
         "Output only the expression.", wake=WAKE, max_tokens=16),
    Role("calculator", "A calculator tool: evaluates the written expression exactly.", tool=calculate),
    Role("answerer", "You are an answerer. Read the computed value and reply with the final answer as: "
         "Answer: <number>", wake=WAKE, max_tokens=10),
    Role("generalist", "You solve word problems. Reply with the final answer only, as: Answer: <number>",
         wake=WAKE, max_tokens=10),
)


def wake_examples() -> list[str]:
    """Every (state, yes/no) wake-up example: newcomers draw random subsets, the market selects."""
    return [f"example: {s} {WAKE} => {a}" for s in SUMMARIES for a in ("yes", "no")]


WRONG = [  # worked examples wrong on purpose: an agent holding these fails, and the market should route around it
    "example: Kim has 4 cups. Kim buys 3 more and then gives away 2. How many cups does Kim have now? => 4 + 3 + 2",
    "example: Joe buys 5 boxes with 6 toys in each box and loses 7 toys. How many toys are left? => 5 + 6 - 7",
]

POOL = {  # (p, lines): a newcomer holds each line with probability p (worked examples, general lines, wake-up)
    "extractor": [
        (0.8, [
            "example: Kim has 4 cups. Kim buys 3 more and then gives away 2. How many cups does Kim have now? => 4 + 3 - 2",
            "example: Joe buys 5 boxes with 6 toys in each box and loses 7 toys. How many toys are left? => 5 * 6 - 7",
            "example: Ava splits 12 eggs into 3 equal groups, keeps one group and then finds 4 more. How many eggs "
            "does Ava have? => 12 / 3 + 4",
            "example: A farm has 50 cows. It sells 10 in the morning and 5 in the afternoon. How many cows are left? "
            "=> 50 - 10 - 5",
            "example: Max reads 3 pages a day for 4 days and then 6 more pages. How many pages did Max read? => 3 * 4 + 6",
        ]),
        (0.3, WRONG),
        (0.3, ["Use every number of the problem exactly once.", "Write the operations in the order the story tells them."]),
        (0.3, wake_examples()),
    ],
    "answerer": [
        (0.5, ["example: Value: 8 What is the final answer? => The answer is 8."]),
        (0.3, ["Copy the computed value exactly.", "If the value is missing, give your best guess."]),
        (0.3, wake_examples()),
    ],
    "generalist": [
        (0.5, ["example: Problem: Ann has 5 pens and buys 3 more. Expression: none Value: none What is the final "
               "answer? => The answer is 8."]),
        (0.3, ["Think of the numbers in the problem and combine them.", "Answer with a whole number."]),
        (0.3, wake_examples()),
    ],
}

PROMPTS = Prompts(
    explore_demo=("example: Task: Joe has 3 cups and buys 2 more. | Wrote: 3 - 2 | Correct: 3 + 2 | Write a worked "
                  "example. => example: Joe has 3 cups and buys 2 more. => 3 + 2"),
    diagnose_demo="\n".join([
        'example: Blamed x-example-6 (correct: The answer is 8.). Step 0: extractor -> invalid_output "5 + +". => '
        '{"failure": "invalid_output", "step": 0, "action": "revise", "target": "x-example-6"}',
        'example: Blamed y-rule-2 (correct: The answer is 7.). Step 0: extractor -> ok "4 + 3". Step 1: answerer -> ok '
        '"9". => {"failure": "harmful_skill", "step": 1, "action": "prune", "target": "y-rule-2"}',
        'example: Blamed z-example-1. Step 0: extractor -> timeout "Max reads 3 pag". => {"failure": "timeout", '
        '"step": 0, "action": "revise", "target": "z-example-1"}',
    ]),
)
"""wordmath's own demonstrations (agents/llm/prompts.py): a worked explore rewrite (a weak model copies a shown
format far more reliably than it follows a described one) and three worked verdicts of the diagnoser's short
form (SmolLM2-135M answered 0 of 6 full diagnosis prompts with a JSON object, and copies this shape)."""


@dataclass(config=STRICT)
class Config(TextWorldConfig):
    """The framework's keys (scenarios/text/scenario.py) with wordmath's defaults."""

    heldout: int = Field(64, ge=1)
    role_weights: tuple[float, ...] | None = (0.35, 0.15, 0.25, 0.25)
    """How often a random newcomer is an extractor, calculator, answerer, generalist."""
    initial_roles: tuple[str, ...] = ("calculator", "extractor", "extractor", "answerer", "generalist")
    """Roles of the first newborns, in order (the rest of the population is drawn at random)."""


@plain_dataclass(frozen=True)
class Problem:
    text: str
    expression: str
    answer: int

    @property
    def numbers(self) -> set[str]:
        return set(parse._NUMBER.findall(self.expression))


def draw(rng: np.random.Generator) -> Problem:
    """A problem drawn with ``rng``: one of five templates, its numbers, its exact answer."""
    kind, name, item = rng.integers(5), NAMES[rng.integers(len(NAMES))], ITEMS[rng.integers(len(ITEMS))]
    if kind == 0:
        a, b = rng.integers(5, 40), rng.integers(2, 20)
        c = rng.integers(1, a + b)
        text, expr = f"{name} has {a} {item}. {name} buys {b} more and then gives away {c}. How many {item} does {name} have now?", f"{a} + {b} - {c}"
    elif kind == 1:
        a, b = rng.integers(2, 10), rng.integers(2, 10)
        c = rng.integers(1, a * b)
        text, expr = f"{name} buys {a} bags with {b} {item} in each bag and loses {c} {item}. How many {item} are left?", f"{a} * {b} - {c}"
    elif kind == 2:
        b = rng.integers(2, 6)
        a, c = b * rng.integers(2, 10), rng.integers(1, 20)
        text, expr = f"{name} splits {a} {item} into {b} equal groups, keeps one group and then finds {c} more. How many {item} does {name} have?", f"{a} / {b} + {c}"
    elif kind == 3:
        a = rng.integers(20, 90)
        b = rng.integers(1, a // 2)
        c = rng.integers(1, a - b)
        text, expr = f"A shop has {a} {item}. It sells {b} in the morning and {c} in the afternoon. How many {item} are left?", f"{a} - {b} - {c}"
    else:
        a, b, c = rng.integers(2, 10), rng.integers(2, 10), rng.integers(1, 30)
        text, expr = f"{name} reads {a} pages a day for {b} days and then {c} more pages. How many pages did {name} read?", f"{a} * {b} + {c}"
    return Problem(text, expr, int(parse.evaluate(expr)))


def problem(seed: int, pid: int) -> Problem:
    """Problem ``pid`` of stream ``seed``, as the framework draws it (scenarios/text/adapter.py)."""
    return draw(np.random.default_rng([seed, pid]))


class Wordmath(TextWorld):
    """A problem's state: the problem, then its expression, its value and the answer given, each None until
    written. Only the stage (which of them exists) reaches the wake-up question and learned bids."""

    roles = ROLES
    pool = POOL
    stages = SUMMARIES
    horizon = 8
    """Steps per episode (a full chain needs 3; a forfeit spends one)."""
    prompts = PROMPTS
    wrong = tuple(WRONG)
    complete = ("extractor", "calculator", "answerer")  # the generalist only shortcuts the chain
    single = ("answerer", "generalist")  # a world ends only with an answer: the others score 0 alone

    def problem(self, rng):
        return draw(rng)

    def start(self, problem):
        return {"problem": problem, "expr": None, "value": None, "answer": None}

    def stage(self, state):
        return 0 if state["expr"] is None else 1 if state["value"] is None else 2

    def may_act(self, state, role):
        stage = self.stage(state)
        return {"extractor": stage == 0, "calculator": stage == 1, "answerer": stage == 2}.get(role, True)

    def read(self, state, role):
        value = "none" if state["value"] is None else str(state["value"])
        if role == "extractor":
            return state["problem"].text
        if role == "answerer":  # it only formats the computed value (shown the problem, SmolLM2 retells it)
            return f"Value: {value}\nWhat is the final answer?"
        return (f"Problem: {state['problem'].text}\nExpression: {state['expr'] or 'none'}\nValue: {value}\n"
                "What is the final answer?")

    def act(self, state, role, text):
        if role == "extractor":
            state["expr"] = parse.expression(text, allowed=state["problem"].numbers)
            return None if state["expr"] else "unparsable or uses numbers not in the problem"
        if role == "calculator":
            state["value"] = Fraction(text)
            return None
        state["answer"] = parse.answer(text)
        return None if state["answer"] is not None else "unparsable answer"

    def done(self, state):
        return state["answer"] is not None

    def reward(self, state):
        return float(state["answer"] == state["problem"].answer)

    def correct(self, state, role):
        """The exact solver: the problem's expression for the extractor, its answer for the others."""
        p = state["problem"]
        return p.expression if role == "extractor" else f"The answer is {p.answer}."

    def given(self, state, role):
        """The problem itself (one line), whatever the role read."""
        p = state["problem"]
        return p.text if role == "extractor" else f"Problem: {p.text}"


NAMES_OF = {"heldout_success": "heldout_accuracy", "single_agent_success": "single_agent_accuracy",
            "curated_agent_success": "complete_agent_accuracy",
            "complete_agent_success": "complete_agent_whole_pool_accuracy"}
"""The framework's summary keys -> wordmath's (a success is an exact answer: its accuracy); the rewards,
equal to the successes here (1 for an exact answer, else 0), are left out."""


def metrics(model, episodes: list[dict], cfg: Config) -> dict:
    """The framework's summary (scenarios/text/scenario.py) under wordmath's names (module docstring)."""
    out = text_scenario.metrics(model, episodes, cfg)
    for key in ("heldout_reward", "single_agent_reward", "curated_agent_reward", "complete_agent_reward"):
        out.pop(key)
    return {NAMES_OF.get(k, k): v for k, v in out.items()}
