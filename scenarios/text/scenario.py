"""A text world's scenario: its config section, build, load-time checks and metrics, made by the framework.

A module that defines one :class:`~scenarios.text.world.TextWorld` subclass and no ``build`` is a scenario
(scenarios/registry.py asks :func:`as_scenario` for the interface): ``Config`` is
:class:`TextWorldConfig` or the module's own subclass of it (the world's own keys, read as ``world.config``),
``build`` makes the batch of worlds, its
held-out and validation batches (their own seed streams of the world's generator) and the LLM
policy, ``validate`` refuses what the world cannot serve before anything loads, and ``metrics``
reports the frozen market against the complete agent on the same held-out problems (a module's own
``metrics`` replaces it, e.g. to add to :func:`metrics` or rename its keys).
"""

from __future__ import annotations

import dataclasses
import functools
import types
from pathlib import Path

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.backends import BackendConfig
from agents.backends.factory import require_engine, shared_backend, usage
from agents.heldout import heldout_point, outcomes
from agents.llm.policy import LLMPolicy, PolicyConfig
from scenarios.text.adapter import TextBatch, TextBoard
from scenarios.text.world import TextWorld
from market import MarketConfig, MarketModel, PopulationConfig
from scenarios.spec import ScenarioSpec
from market.strict import STRICT


@dataclass(config=STRICT)
class TextWorldConfig:
    llm: BackendConfig = Field(default_factory=BackendConfig)
    """The agents' shared model (hf / vllm / openai keys; agents/backends/base.py)."""
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    horizon: int | None = Field(None, ge=1)
    """Steps per episode (None: the world's ``horizon``)."""
    heldout: int = Field(32, ge=1)
    """Held-out problems the summary's accuracy and reward are measured on (the market and the complete agent)."""
    heldout_seed: int = 10_000
    """Seed stream of the held-out problems; training draws from stream 0."""
    validation: int = Field(16, ge=1)
    """Validation problems the skill gate scores candidate libraries on (``skills.credit`` other than none)."""
    validation_seed: int = 20_000
    """Seed stream of the validation problems, apart from training's and the held-out ones."""
    role_weights: tuple[float, ...] | None = None
    """How often a random newcomer has each role, in the world's role order (None: equally often)."""
    initial_roles: tuple[str, ...] = ()
    """Roles of the first newborns, in order (the rest of the population is drawn at random)."""
    roles: dict[str, BackendConfig] = Field(default_factory=dict)
    """``[<section>.roles.NAME]``: the model role NAME's agents call instead of ``llm`` (a whole backend config: its
    unset keys take the defaults, not ``llm``'s values; it overrides the role's own ``Role.llm``). Roles naming one
    config share one engine."""


def role_models(cls: type[TextWorld], cfg: TextWorldConfig) -> dict[str, BackendConfig]:
    """The LLM roles that call a model other than the shared one -> that model's config."""
    out = {r.name: cfg.roles.get(r.name, r.llm) for r in cls.roles if not r.tool}
    return {name: model for name, model in out.items() if model is not None and model != cfg.llm}


def as_scenario(module):
    """``module`` as a scenario: unchanged if it is one already (or defines no text world), else a namespace
    of its attributes plus the interface made for its one TextWorld subclass."""
    if hasattr(module, "build") or hasattr(module, "make_model"):
        return module
    worlds = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, TextWorld)
              and v is not TextWorld and v.__module__ == module.__name__]
    if len(worlds) != 1:
        return module
    cls = worlds[0]
    section = Path(getattr(module, "__file__", None) or module.__name__).stem
    if section.startswith("catallax_plugin_") or section == "__init__":
        section = module.__name__.rsplit(".", 1)[-1]
    own = vars(module).get("Config", TextWorldConfig)
    if not (isinstance(own, type) and issubclass(own, TextWorldConfig)):
        raise ValueError(f"{getattr(module, '__file__', module.__name__)}: Config must subclass "
                         "scenarios.text.scenario.TextWorldConfig (a text world's keys are added to the framework's)")
    out = types.SimpleNamespace(**vars(module))
    out.__doc__ = module.__doc__ or cls.__doc__
    out.Config = own
    out.build = functools.partial(build, cls)
    out.validate = functools.partial(validate, cls, section)
    out.metrics = vars(module).get("metrics", metrics)
    out.heldout_point = heldout_point
    # Learned bids read the stage (one-hot under numeric), nothing (agent) or the stage's summary as text; the
    # sero objective reads the correct continuation, where the world can say it. Every text world branches: its
    # states are deep-copied and replayed from the move log already (scenarios/text/adapter.py).
    out.SPEC = ScenarioSpec(bid_features=("numeric", "agent", "hf", "minilm"), skill_library=True,
                            learned_actions="lm", oracle=cls.has_correct(), credit_signals=cls.signals(),
                            branches=True, batch_signals=("context_edit",) if cls.edit_roles else (),
                            subgoals=cls.has_subgoals(), rubric=cls.has_rubric(), value_bids=dict(cls.value_bids))
    return out


def validate(cls: type[TextWorld], section: str, exp) -> None:
    """What the run's keys need and the world lacks, refused before any model loads (one line, the key)."""
    cfg, names = exp.scenario, [r.name for r in cls.roles]
    if not cls.roles or all(r.tool for r in cls.roles):
        raise ValueError(f"{cls.__name__}.roles: a text world needs at least one LLM role")
    require_engine(cfg.llm.backend, f"{section}.llm.backend")
    if exp.agents.actions == "grpo" and cfg.llm.backend != "hf":
        raise ValueError(f"{section}.llm.backend = {cfg.llm.backend!r}: agents.actions = 'grpo' trains LoRA adapters "
                         "of the model, which only the hf backend holds")
    if cfg.role_weights is not None and len(cfg.role_weights) != len(names):
        raise ValueError(f"{section}.role_weights: {len(cfg.role_weights)} weights for {len(names)} roles ({', '.join(names)})")
    if unknown := [r for r in cfg.initial_roles if r not in names]:
        raise ValueError(f"{section}.initial_roles: {', '.join(map(repr, unknown))} is not a role ({', '.join(names)})")
    for name, model in cfg.roles.items():
        if name not in names or next(r for r in cls.roles if r.name == name).tool:
            raise ValueError(f"{section}.roles.{name}: not an LLM role of {cls.__name__} "
                             f"({', '.join(r.name for r in cls.roles if not r.tool)})")
    for name, model in role_models(cls, cfg).items():
        require_engine(model.backend, f"{section}.roles.{name}.backend")
        if exp.agents.actions == "grpo":
            raise ValueError(f"{section}.roles.{name}: agents.actions = 'grpo' trains one LoRA adapter of the shared "
                             f"model ({section}.llm), and role {name!r} calls a model of its own")
    served = {f"{m.backend}:{m.model}" for m in (cfg.llm, *role_models(cls, cfg).values())}
    if unknown := sorted(set(exp.market.token_prices) - served):
        raise ValueError(f"market.token_prices.{unknown[0]}: no role of {cls.__name__} calls that model (its models: "
                         f"{', '.join(sorted(served))})")
    for attr in ("complete", "single", "edit_roles"):
        if unknown := [r for r in getattr(cls, attr) or () if r not in names]:
            raise ValueError(f"{cls.__name__}.{attr}: {', '.join(map(repr, unknown))} is not a role ({', '.join(names)})")
    if not cls.has_correct():
        missing = f"{cls.__name__}.correct(state, role) is not defined"
        if exp.population.births and exp.population.p_explore > 0:
            raise ValueError(f"population.p_explore = {exp.population.p_explore}: explore births show a failed agent "
                             f"the correct output, and {missing} (define it, or set population.p_explore = 0)")
        if exp.skills.credit != "none":
            raise ValueError(f"skills.credit = {exp.skills.credit!r}: skill edits rewrite a skill from the correct "
                             f"output, and {missing} (define it, or set skills.credit = 'none')")


def build(cls: type[TextWorld], cfg: TextWorldConfig):
    """The training batch (with its ``heldout`` and ``validation`` batches) and the LLM policy."""
    world = cls()
    world.config = cfg
    board = TextBoard(world)
    horizon = cfg.horizon or board.world.horizon
    world = TextBatch(board, seed=0, horizon=horizon)
    world.heldout = TextBatch(board, cfg.heldout_seed, horizon, fixed=np.arange(cfg.heldout))
    world.validation = TextBatch(board, cfg.validation_seed, horizon, fixed=np.arange(cfg.validation))
    seeds = [(name, None, None) for name in cfg.initial_roles]
    weights = list(cfg.role_weights) if cfg.role_weights is not None else None
    engines = {name: shared_backend(model) for name, model in role_models(cls, cfg).items()}
    policy = LLMPolicy(shared_backend(cfg.llm), board, list(board.world.roles), board.world.skill_pool(), weights,
                       cfg.policy, seeds, engines=engines)
    return world, policy


def single_agents(model, batch: TextBatch, names: tuple[str, ...]) -> tuple[float, float, str | None]:
    """The best live agent of the roles ``names`` alone on every problem of ``batch`` (one lockstep batch of
    agents x problems, each agent acting at every step), frozen -> (its success rate, its mean reward, its
    description); (0, 0, None) when no such agent lives."""
    policy = model.policy.unwrapped
    live = np.flatnonzero(model.population.traders)
    rows = live[np.isin([policy.roles[r].name for r in policy.role[live]], names)]
    if rows.size == 0:
        return 0.0, 0.0, None
    n, world = batch.fixed.size, batch.board.world
    policy.only = np.repeat(rows, n)
    try:
        model.run_episodes(world=batch, batch=rows.size * n, settle=False)
    finally:
        policy.only = None
    solved = batch.solved.reshape(rows.size, n).mean(axis=1)
    rewards = np.array([float(world.reward(s)) if world.done(s) else 0.0 for s in batch.states]).reshape(rows.size, n)
    best = int(np.argmax(rewards.mean(axis=1)))
    return float(solved[best]), float(rewards[best].mean()), policy.describe(rows[best:best + 1])[0]


def pool_lines(pool: dict, role: str) -> list[str]:
    """The lines of ``role`` in a world's ``skill_pool()`` that a newcomer may hold (p > 0), wake-up examples left out:
    what the complete agent holds and ``catallax probe`` measures."""
    return [line for p, group in pool.get(role, []) if p > 0 for line in group if LLMPolicy.line_kind(line) != "wake"]


def complete_agent(model, batch: TextBatch, drop: tuple[str, ...] = ()) -> tuple[float, float]:
    """The complete agent on every problem of ``batch``, frozen: one row per role it combines (``complete``,
    default all: every tool; each LLM role holding its whole initial pool, every line a newcomer may hold, wrong
    worked examples included, but for ``drop``, and the summed token budget of its LLM roles), and at each state
    the first of its roles, in order, that may act there plays it: no auction routes. -> (success rate, mean
    reward)."""
    trained, board = model.policy.unwrapped, batch.board
    world = board.world
    mine = [next(r for r in world.roles if r.name == name) for name in world.complete] if world.complete else world.roles
    budget = sum(r.max_tokens for r in mine if not r.tool)
    roles = [r if r.tool else dataclasses.replace(r, max_tokens=budget) for r in mine]
    pool = board.world.skill_pool()
    lines = {r.name: [line for line in pool_lines(pool, r.name) if line not in drop] for r in roles}
    cfg = dataclasses.replace(trained.cfg, max_skills=max([len(v) for v in lines.values()] + [1]))
    seeds = [(r.name, lines[r.name], 0.0) for r in roles]
    engines = {trained.roles[i].name: engine for i, engine in trained.engines.items()}
    policy = LLMPolicy(trained.backend, board, roles, pool, None, cfg, seeds, engines=engines)
    n = batch.fixed.size
    solo = MarketModel(batch, policy, MarketConfig(batch=n),
                       PopulationConfig(initial_agents=len(roles), births=False, min_agents=0, max_agents=len(roles)),
                       seed=0)
    rows = np.flatnonzero(solo.population.traders)  # in seed order: one per role

    def player(obs: np.ndarray) -> np.ndarray:
        out = np.full(len(obs), rows[0])
        for b, row in enumerate(obs):
            state = board.state_at(row)
            out[b] = next((rows[i] for i, r in enumerate(roles) if board.world.may_act(state, r.name)), rows[0])
        return out

    policy.only = player
    solo.run_episodes(world=batch, batch=n, settle=False)
    return outcomes(batch)


def metrics(model, episodes: list[dict], cfg: TextWorldConfig) -> dict:
    """The frozen market and the complete agent (on the untrained model) on the same held-out problems; with
    the world's ``wrong`` lines, also the curated complete agent (without them: the ceiling); with its
    ``single`` roles, the best of their live agents alone."""
    policy, heldout = model.policy.unwrapped, model.world.heldout
    point = heldout_point(model)  # the learning curve's last point, when it measured this state already
    success, reward = point["success"], point["reward"]
    with policy.evaluating():
        single = single_agents(model, heldout, heldout.board.world.single) if heldout.board.world.single else None
        with policy.base_weights():
            complete_success, complete_reward = complete_agent(model, heldout)
            wrong = tuple(heldout.board.world.wrong)
            curated = complete_agent(model, heldout, drop=wrong) if wrong else None
    live = np.flatnonzero(model.population.traders)
    roles = np.array([policy.roles[r].name for r in policy.role[live]])
    tail = episodes[len(episodes) - max(1, len(episodes) // 5):]
    used = usage(policy.all_engines())
    return {
        "heldout_success": success, "heldout_reward": reward,
        "complete_agent_success": complete_success, "complete_agent_reward": complete_reward,
        **({"curated_agent_success": curated[0], "curated_agent_reward": curated[1]} if curated else {}),
        **({"single_agent_success": single[0], "single_agent_reward": single[1], "single_agent": single[2]}
           if heldout.board.world.single else {}),
        "heldout_problems": cfg.heldout, "heldout_seed": cfg.heldout_seed,
        "train_success_rate": float(np.mean([e["success"] for e in tail])) if tail else 0.0,
        "population": int(live.size), "roles": {r: int((roles == r).sum()) for r in sorted(set(roles))},
        "invalid_actions": int(policy.counts["invalid"]), "actions": int(policy.counts["actions"]),
        "rewrites": int(policy.counts["rewrites"]), "malformed_rewrites": int(policy.counts["malformed_rewrites"]),
        "backend": policy.backend.name, "backend_seconds": round(sum(u["seconds"] for u in used.values()), 2),
        "completion_tokens": sum(u["completion_tokens"] for u in used.values()),
        "llm_tokens": sum(u["prompt_tokens"] + u["completion_tokens"] for u in used.values()),
        "llm_usage": {k: {**u, "seconds": round(u["seconds"], 2)} for k, u in used.items()},
        "role_tokens": {r.name: int(policy.counts[f"tokens:{r.name}"]) for r in policy.roles if not r.tool},
        **policy.wake_report(),
    }

