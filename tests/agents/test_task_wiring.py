"""agents.tasks in relay and blocks: the sampler draws the training rounds (G rollouts of each task) and
hears one reward per rollout after each; its variants and sub-problems are what they claim; held-out
instances are untouched; its state resumes exactly; worlds without task signals refuse it at load."""

import numpy as np
import pytest

from agents import RulePolicy
from market.checkpoint import decode, encode
from scenarios.blocks import SOLUTION, BlocksWorld, Config, Instance, evaluate, generate
from scenarios.blocks.world import prefixes as goal_prefixes
from scenarios.relay import Config as RelayConfig
from scenarios.relay import RelayWorld
from scenarios.relay import prefixes as chain_prefixes
from scenarios.run.config import ConfigError, load
from scenarios.run.runner import build_model
from tests.helpers import error_line

G = 4
SMALL = {"relay": ["market.batch=8", "run.episodes=64"],
         "blocks": ["market.batch=8", "run.episodes=64", "blocks.heldout_sizes=[4]", "blocks.heldout_count=8",
                    "blocks.task_pool=16"]}


def trained(scenario: str, sampler: str, rounds: int = 0, seed: int = 1):
    exp = load(scenario, SMALL[scenario] + [f"agents.tasks={sampler}", "agents.actions=grpo", f"agents.group={G}"],
               seed=seed)
    model = build_model(exp)
    for _ in range(rounds):
        model.step()
    return model


def draws(world) -> dict:
    """The world's Draw per key: one for relay, one per training size for blocks."""
    return {None: world.draw} if isinstance(world, RelayWorld) else world.draws


def is_subproblem(task) -> bool:
    """A relay chain shorter than the world's; a blocks goal shorter than the blocks in play."""
    return len(task) < 5 if isinstance(task[0], int) else len(task[0]) < len(sum(task[1], ()))


def blocks_progress(world: BlocksWorld) -> np.ndarray:
    """The goal's share in place on stack 1 (its correct prefix / the goal's length)."""
    H = world.stack.shape[2]
    match = (world.stack[:, 1] == world.stack[:, 0]) & (np.arange(H) < world.height[:, 1:2])
    return np.cumprod(match, axis=1).sum(axis=1) / world.n


@pytest.mark.parametrize("scenario", ["relay", "blocks"])
@pytest.mark.parametrize("sampler", ["uniform", "rods", "scrl"])
def test_the_sampler_draws_each_round_and_hears_one_reward_per_rollout(scenario, sampler):
    model = trained(scenario, sampler)
    world = model.world
    heard = {key: [] for key in draws(world)}
    for key, draw in draws(world).items():
        def update(ids, rewards, inner=draw.sampler.update, log=heard[key]):
            log.append((list(ids), list(rewards)))
            inner(ids, rewards)
        draw.sampler.update = update
    drawn = []
    for _ in range(8):
        model.step()
        ids = world.task_ids
        assert len(ids) == 8 and all(ids[i] == ids[i - i % G] for i in range(8))  # G rollouts of each task
        drawn += ids
        if scenario == "relay":
            progress, keys = world.stage / world.length, [None] * 8
        else:
            progress, keys = blocks_progress(world), world.sizes.tolist()
        expected = progress if sampler == "rods" else world.solved.astype(float)
        for key, log in heard.items():
            mine = [k == key for k in keys]
            if any(mine):
                assert log.pop() == ([t for t, m in zip(ids, mine) if m], expected[mine].tolist())
            assert not log  # one report a round, by the sampler that drew the tasks
    chain = tuple(range(5))
    if sampler == "uniform":  # relay has one task of its own; blocks draws from its pool, not fresh instances
        own = {chain} if scenario == "relay" else {t for d in world.draws.values() for t in d.sampler.tasks}
        assert set(drawn) <= own and len(set(drawn)) > (0 if scenario == "relay" else 4)
    if sampler == "rods":
        samplers = [d.sampler for d in draws(world).values()]
        assert sum(st[0] for s in samplers for st in s.stats.values()) == 64  # every rollout's reward, once
        if scenario == "relay":  # its one task's relabellings fill the buffer at once
            assert len(set(drawn)) > 4 and all(sorted(t) == list(chain) for t in drawn)
    if sampler == "scrl":
        sub = [t for t in drawn if is_subproblem(t)]
        assert 0 < len(sub) <= len(drawn) // 2  # the curriculum's half: sub-problems; the other half the tasks
        if scenario == "relay":
            assert world.draw.sampler.level[chain] >= 1  # it climbed its ladder


def test_once_rods_has_retired_every_relabelling_rounds_draw_the_worlds_own_chain():
    exp = load("relay", ["market.batch=8", "run.episodes=400", "relay.stages=2", "agents.tasks=rods"], seed=0)
    model = build_model(exp)
    rods = model.world.draw.sampler
    while model.episodes_done < exp.run.episodes and (rods.buffer or not rods.retired):
        model.step()
    assert not rods.buffer and not rods.pool and rods.retired  # a 2-stage chain is soon mastered: nothing left
    for _ in range(3):
        model.step()
        assert model.world.task_ids == [(0, 1)] * 8


def solve(world, rules: list[str]) -> np.ndarray:
    """Run the rules (exclusive: at most one wakes) on the world's loaded instances; which it solved."""
    solver = RulePolicy(world.space, initial_rules=rules)
    solver.resize(len(rules))
    solver.spawn(np.arange(len(rules)), np.random.default_rng(0))
    for _ in range(world.horizon):
        wake = solver.eligible(world.observe())
        world.step(solver.rules.action[wake.argmax(1)], wake.any(1))
    return world.solved.copy()


def test_blocks_variants_are_isomorphic_and_its_sub_problems_are_goal_prefixes_the_solution_solves():
    cfg = Config(curriculum=False, features=["wrong1", "need_at", "need_depth", "prefix", "progress"])
    world, rng = BlocksWorld(cfg), np.random.default_rng(3)
    tasks = [(i.goal, i.stacks) for i in (generate(n, cfg.colours, rng) for n in (4, 8, 16) for _ in range(10))]
    variants = [world.recolour(t, rng) for t in tasks]
    assert variants != tasks
    for (goal, stacks), (vgoal, vstacks) in zip(tasks, variants):
        assert [len(s) for s in stacks] == [len(s) for s in vstacks] and set(vgoal) <= set(range(1, cfg.colours + 1))
        same = lambda a, b: [x == y for x in a for y in b]  # noqa: E731 (which blocks share a colour)
        flat, vflat = goal + sum(stacks, ()), vgoal + sum(vstacks, ())
        assert same(flat, flat) == same(vflat, vflat)
    a, b, acting = BlocksWorld(cfg), BlocksWorld(cfg), np.ones(len(tasks), dtype=bool)
    a.load([Instance(*t) for t in tasks])
    b.load([Instance(*t) for t in variants])
    while not a.over.all():  # colour-blind features see the same states, move for move
        assert np.array_equal(a.observe(), b.observe())
        moves = rng.integers(6, size=len(tasks))
        assert np.array_equal(a.step(moves, acting)[0], b.step(moves, acting)[0])
    assert np.array_equal(a.solved, b.solved)

    subs = [(task, sub) for task in tasks for sub in goal_prefixes(task)]
    assert {len(s[0]) for t, s in subs if len(t[0]) == 16} == {4, 8, 12}
    assert all(s[0] == t[0][: len(s[0])] and s[1] == t[1] for t, s in subs)  # the goal's prefix, every block in play
    world = BlocksWorld(cfg)
    world.load([Instance(*s) for _, s in subs])
    assert not world.solved.any() and solve(world, list(SOLUTION)).all()
    assert all(tuple(world.stack[b, 1, : world.height[b, 1]].tolist()) == s[0] for b, (_, s) in enumerate(subs))


def test_relay_variants_are_relabellings_and_its_sub_problems_shorter_chains_specialists_solve():
    world = RelayWorld(RelayConfig(stages=5))
    chain, rng = tuple(range(5)), np.random.default_rng(0)
    variants = [world.relabel(chain, rng) for _ in range(20)]
    assert len(set(variants)) > 10 and all(sorted(v) == list(chain) for v in variants)
    subs = [sub for v in variants for sub in chain_prefixes(v)]
    assert [len(s) for s in chain_prefixes(chain)] == [1, 2, 3, 4]
    world.load(variants + subs)
    specialists = [f"stage == {s} -> advance_{s}" for s in chain]
    assert solve(world, specialists).all() and (world.stage == [5] * 20 + [len(s) for s in subs]).all()
    world.load([chain] * 2)
    assert not solve(world, [f"stage == {s} -> advance_{(s + 1) % 5}" for s in chain]).any()


def test_blocks_held_out_evaluation_is_untouched_by_the_sampler():
    model, cfg = trained("blocks", "rods", rounds=2), load("blocks", SMALL["blocks"]).scenario
    before = {n: d.sampler.state_dict() for n, d in model.world.draws.items()}
    first = evaluate(model, cfg)
    assert {n: d.sampler.state_dict() for n, d in model.world.draws.items()} == before
    assert evaluate(model, cfg) == first  # the same fixed instances, and nothing learned from them


@pytest.mark.parametrize("scenario,sampler", [("blocks", "rods"), ("relay", "scrl"), ("blocks", "scrl")])
def test_a_resumed_run_draws_and_ends_as_the_uninterrupted_one(scenario, sampler):
    straight = trained(scenario, sampler, rounds=6)
    first, log = trained(scenario, sampler), []
    for _ in range(3):
        first.step()
        log.append(first.last_round.transfers)
    resumed = trained(scenario, sampler)
    resumed.load_state_dict(decode(encode(first.state_dict())))  # the checkpoint format, not a pickle
    resumed.ledger.restore(np.concatenate(log))
    for _ in range(3):
        resumed.step()
    assert resumed.ledger.hash == straight.ledger.hash
    assert resumed.world.task_ids == straight.world.task_ids
    assert {k: d.sampler.state_dict() for k, d in draws(resumed.world).items()} == \
        {k: d.sampler.state_dict() for k, d in draws(straight.world).items()}
    assert {k: d.sampler.state_dict() for k, d in draws(first.world).items()} != \
        {k: d.sampler.state_dict() for k, d in draws(straight.world).items()}  # it went on learning after the resume


@pytest.mark.parametrize("scenario", ["wordmath", "recsys", "boltzmann"])
def test_worlds_without_task_signals_refuse_agents_tasks_at_load(capsys, scenario):
    line = error_line(capsys, ["run", scenario, "--set", "agents.tasks=rods"])
    assert "agents.tasks = 'rods'" in line and "does not provide: progress, tasks, variant" in line, line


def test_scrl_with_learned_actions_needs_groups():
    with pytest.raises(ConfigError, match="agents.tasks = 'scrl'.*agents.group >= 2"):
        load("blocks", ["agents.tasks=scrl", "agents.actions=grpo"])
    assert load("blocks", ["agents.tasks=scrl"]).agents.tasks == "scrl"  # rule actions: no normalisation to feed


def test_a_samplers_settings_are_set_keys_that_reach_it_and_another_samplers_are_refused():
    """agents.task_settings.<name> is a typed table like the credit estimators': the chosen sampler gets its settings,
    a bad value or a sampler the run does not use is refused at load, naming the key."""
    sets = ["market.batch=8", "relay.stages=2", "agents.tasks=rods", "agents.task_settings.rods.capacity=3"]
    rods = build_model(load("relay", sets, seed=0)).world.draw.sampler
    assert rods.cfg.capacity == 3 and build_model(load("relay", sets[:3], seed=0)).world.draw.sampler.cfg.capacity == 64
    with pytest.raises(ConfigError, match=r"agents\.task_settings\.scrl = \{.*\}: not read: .*\(now 'rods'\)"):
        load("relay", sets + ["agents.task_settings.scrl.advance=0.5"])
    with pytest.raises(ConfigError, match=r"agents\.task_settings\.rods\.mastered"):
        load("relay", sets + ["agents.task_settings.rods.mastered=2"])
