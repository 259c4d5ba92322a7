"""Scenario ``wordmath``: weak LLM agents in a market beat the best of them alone.

The world: short two-step arithmetic word problems, generated locally with exact
answers (``problem``; five templates, numbers drawn per problem). Held-out
problems come from their own seed stream (``heldout_seed``), which training never
draws from. An episode's state goes text -> expression -> value; it ends when an
agent gives a final answer (reward 1 if it is exactly right) or at the horizon.

The agents (agents/llm_policy.py), all on one frozen SmolLM2-135M by default:

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
a skill whose edit names the birth and the parent agent (agents/llm_policy.py). ``catallax skills
list|show|lineage|export --run RUN_ID`` reads it.

Metrics, measured in the same run on the same held-out problems:
``heldout_accuracy`` (the trained market, frozen); ``single_agent_accuracy``
(the best single live agent, each playing every step of each problem alone,
its wake-up bypassed; only agents whose role can give an answer are run, since
a world ends only with an answer: the others score 0 alone by construction);
and ``complete_agent_accuracy``, the strong baseline Economy of Minds compares
its market with: one agent holding everything the market has (the calculator,
every correct skill line of the scenario's pool, the extractor's and the
answerer's token budgets added up for each of its generations, the same
horizon), playing every step itself as the step needs (extract, compute,
answer), with no auction and no wrong worked examples: the curated one, a ceiling. Beside it,
``complete_agent_whole_pool_accuracy`` is the fair twin Economy of Minds uses: the same agent holding
the whole initial pool of each role, the wrong worked examples included.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass as plain_dataclass
from fractions import Fraction

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents import parse
from agents.backends import BackendConfig
from agents.backends.factory import require_engine, shared_backend
from agents.llm_policy import LLMPolicy, PolicyConfig, Role
from agents.prompts import Prompts
from agents.rules import RuleSpace
from market import MarketConfig, MarketModel, PopulationConfig
from market.config import STRICT
from market.protocols import World
from scenarios.spec import ScenarioSpec

NAMES = ("Ann", "Tom", "Mia", "Sam", "Lea", "Ben", "Ivy", "Max")
ITEMS = ("apples", "pens", "cards", "stickers", "coins", "books", "shells", "marbles")
STAGES = ("text", "expression", "value")
SUMMARIES = ("The problem has no expression yet.", "The expression needs computing.", "The value needs reporting.")
"""What the wake-up question sees, per stage: short and distinct, so even a 135M model's yes/no
can follow an agent's wake examples (and the scores are cached per agent and summary)."""
WAKE = "Act?"

ROLES = (
    Role("extractor", "Write the word problem as one arithmetic expression with its numbers and + - * / ( ). "
         "Output only the expression.", wake=WAKE, max_tokens=16),
    Role("calculator", "A calculator tool: evaluates the written expression exactly.", tool=True),
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
"""wordmath's own demonstrations (agents/prompts.py): a worked explore rewrite (a weak model copies a shown
format far more reliably than it follows a described one) and three worked verdicts of the diagnoser's short
form (SmolLM2-135M answered 0 of 6 full diagnosis prompts with a JSON object, and copies this shape)."""


@dataclass(config=STRICT)
class Config:
    llm: BackendConfig = Field(default_factory=BackendConfig)
    """The shared frozen model (hf / vllm / openai keys; see agents/backends/base.py)."""
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    horizon: int = Field(8, ge=1)
    """Steps per episode (a full chain needs 3; a forfeit spends one)."""
    heldout: int = Field(64, ge=1)
    """Held-out problems for heldout_accuracy and single_agent_accuracy."""
    heldout_seed: int = 10_000
    """Seed stream of the held-out problems; training problems use the run's seed stream."""
    validation: int = Field(16, ge=1)
    """Validation problems the skill gate scores candidate libraries on (agents/llm_skills.py), from the
    seed stream ``validation_seed``: neither training nor the held-out metrics draw from it."""
    validation_seed: int = 20_000
    role_weights: tuple[float, float, float, float] = (0.35, 0.15, 0.25, 0.25)
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


def problem(seed: int, pid: int) -> Problem:
    """Problem ``pid`` of stream ``seed``: a pure function, so a state can name its problem by two integers."""
    rng = np.random.default_rng([seed, pid])
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


class WordmathWorld(World):
    """B problems in lockstep. Observation row: (stage, stream seed, problem id, world index, episode
    serial): enough to name the problem, the state and the episode; the stage first, as the one
    bounded feature learned bids read (``numeric``: its one-hot, SPACE)."""

    def __init__(self, cfg: Config, board: "Board", seed: int, fixed: np.ndarray | None = None):
        self.horizon, self.board, self.seed = cfg.horizon, board, seed
        self.fixed = fixed  # held-out: these problem ids, in order; training: fresh ids from the model's RNG
        self.serial = 0  # this world's episode number, from the board's count (unique across the run's worlds)
        self.reset(1, np.random.default_rng(0))

    def reset(self, batch: int, rng: np.random.Generator) -> None:
        if self.fixed is not None:
            self.pid = np.resize(self.fixed, batch)
        else:  # G consecutive worlds on one problem (group-relative learning)
            self.pid = np.repeat(rng.integers(2**31, size=-(-batch // self.group)), self.group)[:batch]
        self.problems = [problem(self.seed, int(p)) for p in self.pid]
        self.stage = np.zeros(batch, dtype=np.int64)
        self.expr: list[str | None] = [None] * batch
        self.value: list[Fraction | None] = [None] * batch
        self.correct = np.zeros(batch, dtype=bool)
        self.board.episodes += 1  # one count for training, held-out and validation worlds: an observation names its
        self.serial = self.board.episodes  # episode even after a resume (a forfeit benches an agent on it)

    def observe(self) -> np.ndarray:
        self.board.current = self
        B = self.stage.size
        return np.stack([self.stage, np.full(B, self.seed), self.pid, np.arange(B), np.full(B, self.serial)], axis=1)

    def step(self, actions: np.ndarray, acting: np.ndarray):
        done = np.zeros(self.stage.size, dtype=bool)
        for b in np.flatnonzero(acting & (actions >= 0)).tolist():
            role, payload = ROLES[actions[b]].name, self.board.payloads[b]
            if role == "extractor":
                self.expr[b], self.stage[b] = payload, 1
            elif role == "calculator":
                self.value[b], self.stage[b] = Fraction(payload), 2
            else:
                self.correct[b] = int(payload) == self.problems[b].answer
                done[b] = True
        return (done & self.correct).astype(np.float64), done

    @property
    def solved(self) -> np.ndarray:
        return self.correct.copy()

    def state_dict(self) -> dict:
        return {"serial": self.board.episodes}

    def load_state_dict(self, state: dict) -> None:
        self.board.episodes = state["serial"]


class Board:
    """What the LLM policy reads and writes (agents/llm_policy.py's TextTask): the world last
    observed is ``current``; payloads flow back through ``payloads``. ``space``: the observation's one
    bounded feature, the stage, for learned bids (``numeric``: its one-hot; ``hf``/``minilm``: the
    stage's summary as text)."""

    all_summaries = SUMMARIES
    prompts = PROMPTS
    space = RuleSpace(features=("stage",), low=(0,), high=(len(STAGES) - 1,), actions=tuple(r.name for r in ROLES))

    def __init__(self):
        self.episodes = 0  # episodes begun by any world of the run (WordmathWorld.serial)
        self.current: WordmathWorld | None = None
        self.payloads: list[str | None] = []

    def summaries(self, obs: np.ndarray) -> list[str]:
        return [SUMMARIES[s] for s in obs[:, 0]]

    def context(self, obs_row: np.ndarray, role: str) -> str:
        w, b = self.current, int(obs_row[3])
        value = "none" if w.value[b] is None else str(w.value[b])
        if role == "extractor":
            return w.problems[b].text
        if role == "answerer":  # it only formats the computed value (shown the problem, SmolLM2 retells it)
            return f"Value: {value}\nWhat is the final answer?"
        return f"Problem: {w.problems[b].text}\nExpression: {w.expr[b] or 'none'}\nValue: {value}\nWhat is the final answer?"

    def illegal(self, role: str, obs_row: np.ndarray) -> str:
        if role == "extractor" and obs_row[0] > 0:
            return "illegal: an expression already exists"
        if role == "answerer" and obs_row[0] < 2:
            return "illegal: no computed value to report"
        return ""

    def parse(self, role: str, text: str, obs_row: np.ndarray) -> tuple[str | None, str]:
        w, b = self.current, int(obs_row[3])
        if role == "extractor":
            expr = parse.expression(text, allowed=w.problems[b].numbers)
            return (expr, "") if expr else (None, "unparsable or uses numbers not in the problem")
        value = parse.answer(text)
        return (str(value), "") if value is not None else (None, "unparsable answer")

    def tool(self, role: str, obs_row: np.ndarray) -> tuple[str | None, str]:
        w, b = self.current, int(obs_row[3])
        if w.stage[b] != 1:
            return None, "illegal: no expression waits for a value"
        value = parse.evaluate(w.expr[b])
        return (str(value), "") if value is not None else (None, "illegal: division by zero")

    def tool_wake(self, role: str, obs: np.ndarray) -> np.ndarray:
        return obs[:, 0] == 1

    def deliver(self, payloads: list[str | None]) -> None:
        self.payloads = payloads

    def question(self, obs_row: np.ndarray) -> tuple[str, str]:
        """The problem a world plays ("stream:id": the G rollouts of a group share it) and its answer."""
        seed, pid = int(obs_row[1]), int(obs_row[2])
        return f"{seed}:{pid}", f"The answer is {problem(seed, pid).answer}."

    def lesson(self, obs_row: np.ndarray, role: str) -> tuple[str, str]:
        p = problem(int(obs_row[1]), int(obs_row[2]))
        if role == "extractor":
            return p.text, p.expression
        return f"Problem: {p.text}", f"The answer is {p.answer}."


SPEC = ScenarioSpec(bid_features=("numeric", "agent", "hf", "minilm"), skill_library=True, oracle=True,
                    learned_actions="lm")
"""Learned bids read the stage (Board.space): one-hot (``numeric``, the default: a value per agent and
stage), nothing (``agent``: a value per agent), or the stage's summary through the agents' own LM (``hf``,
no second model copy) or MiniLM. The agents' skill lines are the run's library; ``[skills]`` with a credit
other than ``none`` evolves it (agents/llm_skills.py; wordmath.toml ships ``credit = "none"``: births alone
change the skills). The exact solver's output at a state (Board.lesson: the problem's expression, its answer)
is the sero objective's oracle continuation. ``agents.actions = "grpo"`` trains a LoRA adapter of the agents'
shared LM on their completions (agents/lm_grpo.py; the hf backend only)."""

def validate(exp) -> None:
    """The LLM's engine must be installed, and trainable if the run trains it: refused before any model loads."""
    require_engine(exp.scenario.llm.backend, "wordmath.llm.backend")
    if exp.agents.actions == "grpo" and exp.scenario.llm.backend != "hf":
        raise ValueError(f"wordmath.llm.backend = {exp.scenario.llm.backend!r}: agents.actions = 'grpo' trains LoRA "
                         "adapters of the model, which only the hf backend holds (vllm and openai serve fixed weights)")


def build(cfg: Config, seed: int = 0):
    board = Board()
    world = WordmathWorld(cfg, board, seed=seed)
    world.heldout = WordmathWorld(cfg, board, seed=cfg.heldout_seed, fixed=np.arange(cfg.heldout))
    world.validation = WordmathWorld(cfg, board, seed=cfg.validation_seed, fixed=np.arange(cfg.validation))
    seeds = [(name, None, None) for name in cfg.initial_roles]
    policy = LLMPolicy(shared_backend(cfg.llm), board, list(ROLES), POOL, list(cfg.role_weights), cfg.policy, seeds)
    return world, policy


def solo_accuracy(model, rows: np.ndarray, world: WordmathWorld) -> np.ndarray:
    """Each row alone on every problem of ``world`` (one lockstep batch of rows x problems), frozen."""
    if rows.size == 0:
        return np.zeros(0)
    n = world.fixed.size
    model.policy.unwrapped.only = np.repeat(rows, n)
    try:
        episodes = model.run_episodes(world=world, batch=rows.size * n, settle=False)
    finally:
        model.policy.unwrapped.only = None
    return np.array([e["success"] for e in episodes], dtype=float).reshape(rows.size, n).mean(axis=1)


def complete_accuracy(model, world: WordmathWorld, whole: bool = False) -> float:
    """The complete agent (module docstring) on every problem of ``world``, frozen: its capabilities are
    three seeded rows (extractor, calculator, answerer) of a policy of its own on the same engine, and
    the state decides which of them acts (``LLMPolicy.only`` per stage), so no auction ever routes.
    ``whole``: each row holds its role's whole pool, wrong worked examples included (the fair twin)."""
    trained = model.policy.unwrapped
    budget = sum(r.max_tokens for r in ROLES if r.name in ("extractor", "answerer"))
    roles = [r if r.tool else dataclasses.replace(r, max_tokens=budget) for r in ROLES]
    correct = {name: [line for _, group in POOL.get(name, []) for line in group
                      if (whole or line not in WRONG) and line not in wake_examples()]
               for name in ("extractor", "answerer")}
    seeds = [("extractor", correct["extractor"], 0.0), ("calculator", [], 0.0), ("answerer", correct["answerer"], 0.0)]
    policy = LLMPolicy(trained.backend, trained.task, roles, POOL, None, trained.cfg, seeds)
    solo = MarketModel(world, policy, MarketConfig(batch=world.fixed.size),
                       PopulationConfig(initial_agents=3, births=False, min_agents=0, max_agents=3), seed=0)
    rows = np.flatnonzero(solo.population.traders)  # in seed order: one per stage (text, expression, value)
    policy.only = np.tile(rows, (world.fixed.size, 1))
    episodes = solo.run_episodes(world=world, batch=world.fixed.size, settle=False)
    return float(np.mean([e["success"] for e in episodes]))


def metrics(model, episodes: list[dict], cfg: Config) -> dict:
    """Held-out accuracy of the market and of the baselines, greedy; the complete agent on the base
    model (a run that trains the LM's weights trains them for the market's agents, not for it)."""
    policy, heldout = model.policy.unwrapped, model.world.heldout
    with policy.evaluating():
        market = model.run_episodes(world=heldout, batch=cfg.heldout, settle=False)
        live = np.flatnonzero(model.population.traders)
        roles = np.array([policy.roles[r].name for r in policy.role[live]])
        answering = live[np.isin(roles, ["answerer", "generalist"])]
        solo = solo_accuracy(model, answering, heldout)
        with policy.base_weights():
            complete = complete_accuracy(model, heldout)
            whole_pool = complete_accuracy(model, heldout, whole=True)
    best = int(np.argmax(solo)) if solo.size else -1
    tail = episodes[len(episodes) - max(1, len(episodes) // 5):]
    stats = policy.backend.stats
    return {
        "heldout_accuracy": float(np.mean([e["success"] for e in market])),
        "single_agent_accuracy": float(solo.max()) if solo.size else 0.0,
        "complete_agent_accuracy": complete,
        "complete_agent_whole_pool_accuracy": whole_pool,
        "single_agent": policy.describe(answering[best:best + 1])[0] if solo.size else None,
        "heldout_problems": cfg.heldout,
        "heldout_seed": cfg.heldout_seed,
        "train_success_rate": float(np.mean([e["success"] for e in tail])),
        "population": int(live.size),
        "roles": {r: int((roles == r).sum()) for r in sorted(set(roles))},
        "invalid_actions": int(policy.counts["invalid"]),
        "actions": int(policy.counts["actions"]),
        "rewrites": int(policy.counts["rewrites"]),
        "malformed_rewrites": int(policy.counts["malformed_rewrites"]),
        "backend": policy.backend.name,
        "backend_seconds": round(stats.seconds, 2),
        "completion_tokens": stats.completion_tokens,
        "llm_tokens": stats.prompt_tokens + stats.completion_tokens,
    }
