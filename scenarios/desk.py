"""Scenario ``desk``: a question desk where a small model's market learning shows.

Questions of three kinds arrive at a desk: "What is a + b?", "What is a - b?", "What is a * b?" (one-digit
numbers; a difference is never negative). Each kind has its specialists, one LLM role per kind (``adder``,
``subtractor``, ``multiplier``, all on one SmolLM2-135M), which must reply exactly ``Answer: <number>``. One
reply ends the episode: reward 1 if it is exactly right, else 0.

Why this world: on wordmath a 135M model's market barely moves in a run this machine can afford (its chain of
three steps multiplies the steps' failures, so a learner's groups rarely differ and the skill gate sees too little).
Here every step is the whole task, so every mechanism has contrast to work with, and the learning curve
(``run.eval_every``) of a run of a few minutes on one core shows what each does (docs/results/desk.md):

* **the market** selects within each role: agents are born holding different lines of their role's pool, some of
  them wrong on purpose, and wealth or learned bids route the questions to those that answer them right;
* **the LoRA learner** (``agents.actions = "grpo"``) trains the shared model on sampled replies;
* **skill evolution** (``skills.credit = "grse"``) can prune the planted lines.

The planted lines (``WRONG``) are of two kinds, and ``catallax probe desk --role R`` measures each one's harm
(held-out success without the line minus with it, when the role's agent holds its whole pool): a worked example
whose reply drops the ``Answer:`` prefix, which a small model copies (the harmful kind), and a worked example with
a wrong number in the right format, which it mostly ignores. docs/results/desk.md has the measurements.
``desk.harmful`` and ``desk.misleading`` set how often a newcomer holds each kind (0.4 by default). Where some agents
lack a line the market can route around it, and in desk's shipped runs it mostly does; with ``desk.harmful = 1`` and
``desk.misleading = 0`` every agent holds its role's format-breaking example and none the example that hides it, so
only skill evolution can take it out (``experiments/desk_market_harm.py`` measures a line's harm where the gate sees it).

Wake-up is off by default (``desk.policy.wake = false``): every agent of the role a question needs bids for it, and
bids alone route; no yes-vs-no scoring pass runs, so the agents pay no tokens for one. Only its own kind of question is legal for a role
(``may_act``), so the complete agent (one agent holding every role's whole pool, wrong lines included, with the
roles' summed token budget) answers each question as the role that may: it is the fair baseline, and the curated
complete agent (the same, without ``WRONG``) the ceiling.

Written with the public text-world API only (scenarios/text/world.py), as a user's own world is.
"""

from __future__ import annotations

from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.llm.policy import PolicyConfig
from market.strict import STRICT
from scenarios.text import Role, TextWorld
from scenarios.text.scenario import TextWorldConfig

KINDS = ("adder", "subtractor", "multiplier")
"""The question kinds, each named by the role that answers it."""
SIGN = {"adder": "+", "subtractor": "-", "multiplier": "*"}
STAGES = ("An addition question waits.", "A subtraction question waits.", "A multiplication question waits.")

ROLES = tuple(Role(kind, f"You {verb} two numbers. Reply only with: Answer: <number>", wake="Act?", max_tokens=8)
              for kind, verb in zip(KINDS, ("add", "subtract", "multiply")))

HARMFUL = ("example: What is 2 + 6? => 8", "example: What is 9 - 5? => 4", "example: What is 2 * 4? => 8")
"""Planted worked examples whose reply drops the ``Answer:`` prefix: an agent holding one tends to copy the bare
number, which scores 0."""
MISLEADING = ("example: What is 5 + 4? => Answer: 54", "example: What is 8 - 3? => Answer: 83",
              "example: What is 6 * 3? => Answer: 63")
"""Planted worked examples with a wrong number in the right format."""
WRONG = HARMFUL + MISLEADING


def wake_examples() -> list[str]:
    return [f"example: {stage} Act? => {answer}" for stage in STAGES for answer in ("yes", "no")]


def planted_pool(harmful: float = 0.4, misleading: float = 0.4) -> dict[str, list]:
    """Each role's pool: (p, lines), a newcomer of the role holding each line of a group with probability p; the
    role's planted format-breaking example with probability ``harmful``, its wrong-number one with ``misleading``.
    Every group is drawn whatever its p (one uniform per line, in order), so runs that differ only in these two
    keys draw the same newcomers apart from the planted lines they hold."""
    correct = {"adder": ["example: What is 3 + 4? => Answer: 7", "example: What is 6 + 2? => Answer: 8"],
               "subtractor": ["example: What is 9 - 4? => Answer: 5", "example: What is 7 - 2? => Answer: 5"],
               "multiplier": ["example: What is 3 * 4? => Answer: 12", "example: What is 2 * 5? => Answer: 10"]}
    general = {"adder": ["Add the two numbers and reply with the sum.", "Count up from the larger number."],
               "subtractor": ["Subtract the second number from the first.",
                              "The answer is smaller than the first number."],
               "multiplier": ["Multiply the two numbers and reply with the product.",
                              "The product of 1 and a number is that number."]}
    return {kind: [(0.7, correct[kind]), (harmful, [HARMFUL[i]]), (misleading, [MISLEADING[i]]),
                   (0.3, general[kind]), (0.3, wake_examples())] for i, kind in enumerate(KINDS)}


@dataclass(config=STRICT)
class Config(TextWorldConfig):
    """The framework's keys (scenarios/text/scenario.py) with desk's defaults."""

    heldout: int = Field(64, ge=1)
    initial_roles: tuple[str, ...] = KINDS * 4
    """Four agents of each role to start with (births then draw roles equally often)."""
    policy: PolicyConfig = Field(default_factory=lambda: PolicyConfig(wake=False))
    """Wake-up off: every agent bids for its role's questions and bids alone route (module docstring)."""
    harmful: float = Field(0.4, ge=0, le=1)
    """Probability that a newcomer holds its role's planted format-breaking example. Where some agents lack it, the
    market can route around it; at 1 every agent of the role holds it and only skill evolution can take it out."""
    misleading: float = Field(0.4, ge=0, le=1)
    """Probability that a newcomer holds its role's planted wrong-number example (which restates the ``Answer:``
    format, and so hides much of the format-breaking example's harm where both are held: docs/results/desk.md)."""


def answer(problem: dict) -> int:
    a, b = problem["a"], problem["b"]
    return {"adder": a + b, "subtractor": a - b, "multiplier": a * b}[problem["kind"]]


class Desk(TextWorld):
    """A question's state: the question, then the reply given (None until one is)."""

    roles = ROLES
    stages = STAGES
    horizon = 1
    wrong = WRONG
    value_bids = {"newcomer": 0.0}
    """Learned value bids: a newborn guesses no value. At the platform's 0.5, close to what a good agent here earns
    (about 0.6), newborns kept outbidding proven agents: on tuning seeds 100-102 (not the comparison's 0-4), learned
    bids ended at 0.417 with it and 0.516 with 0 (benchmarks/results/desk_tuning*.jsonl)."""

    @property
    def pool(self):
        """The pool at the run's ``desk.harmful`` and ``desk.misleading`` (their defaults before the config is set)."""
        cfg = self.config
        return planted_pool(cfg.harmful, cfg.misleading) if cfg is not None else planted_pool()

    def problem(self, rng):
        kind = KINDS[int(rng.integers(len(KINDS)))]
        a, b = int(rng.integers(1, 10)), int(rng.integers(1, 10))
        if kind == "subtractor" and a < b:
            a, b = b, a
        return {"kind": kind, "a": a, "b": b}

    def start(self, problem):
        return {"problem": problem, "reply": None}

    def stage(self, state):
        return KINDS.index(state["problem"]["kind"])

    def may_act(self, state, role):
        return role == state["problem"]["kind"]

    def read(self, state, role):
        p = state["problem"]
        return f"What is {p['a']} {SIGN[p['kind']]} {p['b']}?"

    def act(self, state, role, text):
        state["reply"] = text
        return None

    def done(self, state):
        return state["reply"] is not None

    def reward(self, state):
        reply = state["reply"]
        return float(reply is not None and reply.strip() == self.correct(state, None))

    def correct(self, state, role):
        return f"Answer: {answer(state['problem'])}"
