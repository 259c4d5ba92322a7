"""Learned bids against EoM's fixed schemes, and a learned market's pool scaling and dropout.

    python -m experiments.bids_compare                      # the three tables, 5 seeds (~40 min on 2 cores)
    python -m experiments.bids_compare --seeds 5 --workers 2 --out runs/bids_compare.md   # or --ray: Ray tasks
    python -m experiments.bids_compare --quick              # toy sizes, seconds (what the test runs)
    python -m experiments.bids_compare --tables recsys      # one table only (compare, recsys, pools)
    python -m experiments.bids_compare --tables pools --seeds 10 --first-seed 10   # a second set of seeds
    python -m experiments.bids_compare --tables compare --scenarios relay --seeds 20  # relay's rows only

**Comparison** (``market.bid_scheme`` = fixed | fixed_with_eps | holland | learned) on ``relay`` and
``blocks`` at the scenarios' *default* economies (their TOML files as shipped: rent, batch, pool,
clearing), several seeds; only the bid scheme changes (``learned`` brings softmax clearing where the
file sets none: relay; blocks sets first price). ``learned`` runs with both objectives:
``value`` (the default: each agent bids (1 - margin) x its head's prediction of what its turn will
earn, trained by regression on the ledger's flows) and ``reinforce`` (bids trained through the
softmax auction, which that objective brings along with its groups of 8 rollouts). blocks' shipped
economy *is* learned/value (per-state values); its runs are shortened to ``blocks_episodes``
(the default run is 48,000 episodes). Per run: ``success`` = training success over the last 20%
of episodes; ``episodes to target`` = the first episode at which the success over the trailing
``window`` episodes reaches the scenario's target (relay 0.9, blocks 0.5; "-" = never); ``gini`` =
Gini of the live agents' wealth at the end; blocks also reports held-out success (frozen) per size.

**recsys market mode** (``recsys.mode = "market"``, its shipped file otherwise: the whole default run,
2560 rollouts): the same schemes plus ``market``, the scenario's own bids (``market.bid_scheme =
"policy"``: each agent bids base_bid x (1 + its role's share), evolved with its skills). Per run: test
NDCG@10 and Recall@50 of the fielded team before and after, and the strongest tuned baseline's NDCG@10
on the same split for reference.

**Pool scaling and dropout** (relay, learned/value and holland, each under first-price and softmax
clearing; each scheme's own is the one without a suffix): the default economy with pools of
different sizes (initial = max agents, floor a third of it); after training, the population is
evaluated frozen (no money moves) on ``eval_episodes`` episodes with every agent, and again with a
random 20% of the live agents removed (they never wake; mean of ``draws`` draws per seed: whether a removal
breaks relay's chain is close to all or nothing, so a seed's dropout score is a probability, and 3 draws
measured it only to a third). *Top bidders advance*: the share of the same draws in which every stage's
top remaining bidder is one of its specialists (:func:`top_bidders_advance`), what a frozen first-price
market can reach. relay's value bids keep a margin of 0.3 (its ``SPEC.value_bids``), not blocks' 0.02.

Weak spots, said plainly: five seeds; blocks trained for a sixth of its default run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from experiments import harness, rows as results
from market import PolicyWrapper
from market.model import gini
from scenarios import relay
from scenarios.registry import SCENARIO_DIR

SCHEMES = ("fixed", "fixed_with_eps", "holland", "learned/value", "learned/reinforce")
POOL_SCHEMES = ("learned/value", "learned/value@first_price", "holland", "holland@softmax")
"""``@CLEARING`` sets ``market.clearing`` (otherwise the scheme's own: softmax for learned bids, relay's first price
for holland): a frozen first-price market hands a state to its top bidder every step, so one that wakes there and
does nothing holds it to the horizon; softmax clearing lets the next bidder have it."""
RECSYS_SCHEMES = ("market",) + SCHEMES
TABLES = ("compare", "recsys", "pools")
TARGET = {"relay": 0.9, "blocks": 0.5}


@dataclass
class Setup:
    seeds: int = 5
    relay_episodes: int = 1000
    blocks_episodes: int = 8000
    heldout_sizes: tuple[int, ...] = (4, 8, 16, 32)
    heldout_count: int = 50
    window: int = 200
    pools: tuple[int, ...] = (15, 30, 60, 120)
    eval_episodes: int = 400
    draws: int = 20
    """Random 20% removals per trained population (pool table)."""
    recsys_episodes: int = 0
    """0: recsys's shipped run length."""


def config(scenario: str, scheme: str, seed: int, setup: Setup, pool: int | None = None) -> dict:
    """The experiment as a config dict (the same keys ``catallax run --set`` takes): the scenario's
    shipped file, with only the bid scheme (and the run's length) changed."""
    data = tomllib.loads((SCENARIO_DIR / f"{scenario}.toml").read_text())
    episodes = {"relay": setup.relay_episodes, "blocks": setup.blocks_episodes}.get(scenario, setup.recsys_episodes)
    data["run"].update(seed=seed, episodes=episodes or data["run"]["episodes"])
    if scenario == "blocks":
        data["blocks"].update(heldout_sizes=list(setup.heldout_sizes), heldout_count=setup.heldout_count)
    if scenario == "recsys":
        data["recsys"]["mode"] = "market"
    if pool:
        data.setdefault("population", {}).update(initial_agents=pool, max_agents=pool, min_agents=pool // 3)
    scheme, _, clearing = scheme.partition("@")
    bids, _, objective = scheme.partition("/")
    if clearing:
        data["market"]["clearing"] = clearing
    agents = data.setdefault("agents", {})
    if bids != "market":  # market: the scenario's own scheme
        data.setdefault("market", {})["bid_scheme"] = bids
    if bids != "learned" or objective == "reinforce":  # the shipped value-bid settings belong to value bids
        agents.pop("value", None)
    if objective:
        agents["bid_objective"] = objective
    if objective == "reinforce":  # it brings its own clearing (softmax) and groups (batch 8)
        data["market"].pop("clearing", None)
        data["market"].pop("batch", None)
    return data


def build(data: dict):
    from scenarios.run.config import from_dict
    from scenarios.run.runner import build_model

    exp = from_dict(data, source="bids_compare")
    return exp, build_model(exp)


def train(data: dict) -> tuple[object, object, np.ndarray]:
    exp, model = build(data)
    success = []
    while model.episodes_done < exp.run.episodes:
        model.step()
        success += [e["success"] for e in model.last_round.episodes]
    return exp, model, np.asarray(success, dtype=float)


def episodes_to(success: np.ndarray, target: float, window: int) -> int | None:
    """First episode at which the trailing-window success reaches ``target`` (None: never)."""
    if success.size < window:
        return None
    trailing = np.convolve(success, np.ones(window) / window, mode="valid")
    hit = np.flatnonzero(trailing >= target - 1e-12)
    return int(hit[0] + window) if hit.size else None


def compare_run(scenario: str, scheme: str, seed: int, setup: Setup) -> dict:
    _threads()
    start = time.perf_counter()
    exp, model, success = train(config(scenario, scheme, seed, setup))
    pop = model.population
    out = {
        "scenario": scenario, "scheme": scheme, "seed": seed,
        "success": float(success[-max(1, success.size // 5):].mean()),
        "episodes_to_target": episodes_to(success, TARGET[scenario], setup.window),
        "gini": gini(pop.wealth[pop.traders]),
        "population": pop.size,
        "seconds": time.perf_counter() - start,
    }
    if scenario == "blocks":
        from scenarios import blocks

        out["heldout"] = blocks.evaluate(model, exp.scenario)
    return out


def recsys_run(scheme: str, seed: int, setup: Setup) -> dict:
    """One whole recsys run through the runner (its skill library lives in the run's database: a temporary
    SQLite file) -> the summary's test metrics."""
    _threads()
    from scenarios.run.config import from_dict
    from scenarios.run.runner import run_experiment

    with tempfile.TemporaryDirectory() as folder:
        m = run_experiment(from_dict(config("recsys", scheme, seed, setup), source="bids_compare"),
                           f"sqlite:///{folder}/recsys.db", progress=False)
    return {"scheme": scheme, "seed": seed, "population": m["population"], "baseline": m["baseline_best"],
            "baseline_ndcg10": m["baselines"][m["baseline_best"]],
            **{k: m[k] for k in ("ndcg10_initial", "ndcg10_final", "recall50_initial", "recall50_final")}}


class Without(PolicyWrapper):
    """The policy with some rows removed: they never wake (evaluation-time dropout)."""

    def __init__(self, policy, rows: np.ndarray):
        super().__init__(policy)
        self.rows = rows

    def eligible(self, obs):
        awake = self.inner.eligible(obs).copy()
        awake[:, self.rows] = False
        return awake


def frozen_success(model, episodes: int, drop: np.ndarray | None = None) -> float:
    policy = model.policy
    if drop is not None:
        model.policy = Without(policy, drop)
    try:
        return float(np.mean([e["success"] for e in model.run_episodes(batch=episodes, settle=False)]))
    finally:
        model.policy = policy


def chain_kept(able: np.ndarray, drop: np.ndarray) -> bool:
    """Whether every stage still has a specialist once the rows in ``drop`` are removed: no bid scheme can
    finish an item through a stage with none, so the share of draws that keep the chain is the ceiling of
    the eval with 20% removed, measured on the same draws."""
    able = able.copy()
    able[:, drop] = False
    return bool(able.any(axis=1).all())


def top_bidders_advance(model, able: np.ndarray, drop: np.ndarray) -> bool:
    """Whether, with the rows in ``drop`` removed, every stage's top bidder (each of them, on a tie) is one of
    its specialists. Under frozen first-price clearing a stage's state does not change until someone advances
    it, and neither do the bids, so a top bidder that does not advance holds the item to the horizon: the
    share of draws where this holds is what the frozen eval can reach under first-price clearing."""
    stages = np.arange(able.shape[0])[:, None]
    awake = Without(model.policy, drop).eligible(stages) & model.population.traders[None, :]  # as the market sees it
    bids = np.where(awake, np.broadcast_to(model.current_bids(stages), awake.shape), -1)
    top = awake & (bids == bids.max(axis=1, keepdims=True))
    return bool(awake.any(axis=1).all() and not (top & ~able).any())


def pool_run(scheme: str, pool: int, seed: int, setup: Setup) -> dict:
    _threads()
    exp, model, success = train(config("relay", scheme, seed, setup, pool=pool))
    live = np.flatnonzero(model.population.traders)
    rng = np.random.default_rng([seed, pool])
    drops = [rng.choice(live, size=max(1, round(0.2 * live.size)), replace=False) for _ in range(setup.draws)]
    able = relay.specialists(model, exp.scenario.stages)
    return {
        "scheme": scheme, "pool": pool, "seed": seed, "live": int(live.size),
        "specialists": able.sum(axis=1).tolist(),
        "train_success": float(success[-max(1, success.size // 5):].mean()),
        "eval_full": frozen_success(model, setup.eval_episodes),
        "eval_dropout": float(np.mean([frozen_success(model, setup.eval_episodes, d) for d in drops])),
        "ceiling": float(np.mean([chain_kept(able, d) for d in drops])),
        "top_bidders_advance": float(np.mean([top_bidders_advance(model, able, d) for d in drops])),
    }


def _threads() -> None:
    """One torch thread per worker: the learner's ops are small, and workers already fill the cores."""
    import torch

    torch.set_num_threads(1)


# ------------------------------------------------------------------------------------ tables
fmt = partial(harness.mean_sd, lone=True)
"""``fmt(values, digits=2)``: mean ± sd over seeds; one seed's value alone (no spread to claim)."""


def compare_table(rows: list[dict]) -> str:
    sizes = sorted({int(n) for r in rows for n in r.get("heldout", {})})
    body = []
    for scenario in ("relay", "blocks"):
        for scheme in SCHEMES:
            runs = [r for r in rows if r["scenario"] == scenario and r["scheme"] == scheme]
            if not runs:
                continue
            reached = [r["episodes_to_target"] for r in runs if r["episodes_to_target"] is not None]
            to = f"{int(np.median(reached))} ({len(reached)}/{len(runs)})" if reached else f"- (0/{len(runs)})"
            held = [fmt([r["heldout"][str(n)] for r in runs]) if scenario == "blocks" else "" for n in sizes]
            body.append([f"{scenario} (target {TARGET[scenario]})", scheme, fmt([r["success"] for r in runs]), to,
                         fmt([r["gini"] for r in runs]), *held])
    return harness.markdown(["scenario", "bids", "success", "episodes to target (seeds reaching)", "gini",
                             *(f"held-out n={n}" for n in sizes)], body)


RECSYS_COLUMNS = ("ndcg10_initial", "ndcg10_final", "recall50_initial", "recall50_final", "baseline_ndcg10")


def recsys_table(rows: list[dict]) -> str:
    body = []
    for scheme in RECSYS_SCHEMES:
        runs = [r for r in rows if r["scheme"] == scheme]
        if runs:
            cells = [fmt([r[k] for r in runs], 3) for k in RECSYS_COLUMNS]
            body.append([scheme, *cells[:-1], f"{cells[-1]} ({runs[0]['baseline']})"])
    return harness.markdown(["bids", "test NDCG@10 before", "test NDCG@10 after", "Recall@50 before", "Recall@50 after",
                             "best tuned baseline NDCG@10"], body)


POOL_COLUMNS = ("train_success", "eval_full", "eval_dropout", "ceiling", "top_bidders_advance")


def pool_table(rows: list[dict]) -> str:
    body = []
    for scheme in POOL_SCHEMES:
        for pool in sorted({r["pool"] for r in rows}):
            runs = [r for r in rows if r["scheme"] == scheme and r["pool"] == pool]
            if runs:
                body.append([scheme, pool, fmt([r["live"] for r in runs], 0),
                             fmt([np.mean(r["specialists"]) for r in runs], 1),
                             *(fmt([r[k] for r in runs]) for k in POOL_COLUMNS),
                             fmt([r["eval_full"] - r["eval_dropout"] for r in runs])])
    return harness.markdown(["bids", "pool (max agents)", "live at end", "specialists per stage", "train success",
                             "frozen eval", "eval, 20% removed", "ceiling: chain kept", "top bidders advance", "drop"],
                            body)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_flags(parser, seeds=5, workers=2, sets=False, quick="64 episodes, pools of 10, recsys 512 rollouts",
                      out=Path("runs/bids_compare.md"), out_help="the tables (Markdown), the runs beside it (.json)",
                      rows_help="write each table as JSON Lines rows with their provenance: the first to ROWS, the "
                                "others to ROWS-STEM_TABLE.jsonl beside it (docs/results pages)")
    parser.add_argument("--tables", nargs="+", choices=TABLES, default=list(TABLES), help="which tables to run")
    parser.add_argument("--scenarios", nargs="+", choices=tuple(TARGET), default=list(TARGET),
                        help="the comparison table's scenarios")
    args = harness.parse(parser, argv)
    setup = Setup(seeds=args.seeds)
    if args.quick:
        setup = Setup(seeds=args.seeds, relay_episodes=64, blocks_episodes=64, heldout_sizes=(4,), heldout_count=10,
                      window=16, pools=(10,), eval_episodes=16, draws=3, recsys_episodes=512)
    seeds = harness.seeds(args)
    jobs = {"compare": (compare_run, [(s, scheme, seed, setup) for s in args.scenarios for scheme in SCHEMES
                                      for seed in seeds]),
            "recsys": (recsys_run, [(scheme, seed, setup) for scheme in RECSYS_SCHEMES for seed in seeds]),
            "pools": (pool_run, [(scheme, pool, seed, setup) for scheme in POOL_SCHEMES for pool in setup.pools
                                 for seed in seeds])}
    start = time.perf_counter()
    runs = {name: harness.run(*jobs[name], args) if name in args.tables else [] for name in TABLES}
    made = {"compare": lambda: compare_table(runs["compare"]), "recsys": lambda: recsys_table(runs["recsys"]),
            "pools": lambda: pool_table(runs["pools"])}
    heads = {"compare": f"## Bids: learned vs fixed schemes ({setup.seeds} seeds, mean ± std)",
             "recsys": f"## recsys market mode ({setup.seeds} seeds)",
             "pools": f"## Pool scaling and dropout (relay, {setup.seeds} seeds)"}
    report = "\n\n".join(f"{heads[name]}\n\n{made[name]()}" for name in TABLES if name in args.tables) + "\n"
    print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report)
    args.out.with_suffix(".json").write_text(json.dumps(runs, indent=1))
    print(f"wrote {args.out} and {args.out.with_suffix('.json')} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    if args.rows:
        results.write_tables(args.rows, {name: made[name]() for name in TABLES if name in args.tables},
                             "experiments.bids_compare", argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
