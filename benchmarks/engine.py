"""Engine throughput: the vectorized market against a per-agent Mesa implementation.

Usage::

    python benchmarks/engine.py            # full table, N = 1k, 10k, 100k; B = 1, 32 (~2-3 min on 2 cores)
    python benchmarks/engine.py --json     # ... and one final JSON line with the ratios
    python benchmarks/engine.py --quick    # smoke run: N = 1k only, a few rounds (a few seconds)

What is compared
----------------
*engine*: :class:`market.MarketModel` on the ``relay`` scenario (``scenarios.relay.build``,
K = 5 stages) with the ``rule`` policy, first-price clearing, bucket-brigade payments,
terminal reward to the final owner, rent; one ``model.step()`` is one round of B lockstep
episodes. The population is held fixed for the measurement (no births:
``p_exploit = p_explore = 0``, ``birth_interval = 0``, ``min_agents = 0``,
``max_agents = N``; every trader starts with ``BENCH_WEALTH`` credits, so rent and fees bankrupt nobody
during the run: the last column of the table says how many are alive at the end).

*naive*: :class:`NaiveRelayModel` (``benchmarks/_naive_relay.py``), the same economy written the
straightforward Mesa way: one ``mesa.Agent`` per trader holding its own wealth and rule,
``model.agents.shuffle_do("bid")`` each auction step, rent and write-offs per agent, a
``DataCollector`` with the same model reporters as the engine. It is built from a freshly
constructed engine model and draws the same random numbers in the same order, so it writes the
same transfer log. "identical" means: the sha256 of the naive log equals ``model.ledger.hash``
after the same number of rounds (and, in the verification runs, every account's final balance
and every collected model variable match). The timed engine does not read its hash between rounds
(that would wait for the ledger's hashing thread, which a run overlaps with its next round): an
untimed replay with the same seed reads it after every round, and its hash after the timed engine's
last round must be the timed engine's.

Definition: agent-bids per second
---------------------------------
One *agent-bid* is one (live agent, world) pair considered in one auction step: the agent's
rule is checked against that world's observation and, if it wakes, its bid enters that
world's auction. An auction step of B lockstep worlds over N live agents is N x B
agent-bids, whether or not every world is still running (the engine evaluates all of
[B, N]; the naive model skips finished worlds, which only flatters it). The count is the
same for both sides (identical runs execute identical steps), and the rate is
agent-bids / wall seconds of whole ``model.step()`` calls, round settlement (rent,
bankruptcy, data collection, ledger flush) included.

The engine is timed in whole rounds (its ``step()``); the naive model's ``step()`` is one
auction step (the round is settled inside the step that ends it), so at N = 100k it can be
timed over a few steps instead of whole rounds; the rate is per agent-bid, so the two are
comparable (a partial naive round leaves out its settlement, which makes the naive side look
slightly faster, never slower). Repeats are interleaved (engine chunk, naive chunk, engine
chunk, ...); the rates printed are medians over repeats and the ratio is the median of the
per-repeat ratios (each pair adjacent in time, so slow drifts of a shared machine cancel).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks._naive_relay import NaiveRelayModel  # noqa: E402
from benchmarks._units import label  # noqa: E402
from market import MarketConfig, MarketModel, PopulationConfig  # noqa: E402
from market.ledger import TRANSFER_DTYPE  # noqa: E402
from scenarios import relay  # noqa: E402

STAGES = 5
SEED = 7
BENCH_WEALTH = 100.0
"""Credits each trader starts with in the timed runs: enough that rent and fees bankrupt nobody however many
rounds the engine gets through, so both models are timed on the same N (at 0.5 a 1k x 32 engine shrank to 30
agents within its 0.2 s chunks while the slower naive model still held 1,000, and the rate compared the two)."""


# ---------------------------------------------------------------------------- the engine
def build_engine(n: int, batch: int, scheme: str = "holland", rent: float = 0.0001, seed: int = SEED,
                 wealth: float = 0.5):
    """A MarketModel on relay with a population of ``n`` (no births) and a step counter on its world."""
    world, policy = relay.build(relay.Config(stages=STAGES))
    market = MarketConfig(batch=batch, bid_scheme=scheme, rent=rent)
    population = PopulationConfig(initial_agents=n, max_agents=n, min_agents=0, p_exploit=0.0, p_explore=0.0,
                                  birth_interval=0, initial_wealth=wealth)
    model = MarketModel(world, policy, market, population, seed=seed)
    counter = {"steps": 0}
    observe = world.observe

    def counting_observe():  # one call per auction step of the round (instance attribute, market/ untouched)
        counter["steps"] += 1
        return observe()

    world.observe = counting_observe
    model.bench_counter = counter
    model.round_hashes = []  # ledger hash after each round
    return model


def engine_rounds(model: MarketModel, rounds: int, hashes: bool = True) -> tuple[int, float]:
    """Run whole rounds; return (agent-bids, seconds). ``hashes``: read the ledger hash after each round
    (``model.round_hashes``). Reading it waits for the ledger's hashing thread, which a run otherwise
    overlaps with the next round (a run reads the hash once, at its end), so the timed rounds do not."""
    counter, B = model.bench_counter, model.cfg.batch
    bids = 0
    start = time.perf_counter()
    for _ in range(rounds):
        live, s0 = model.population.size, counter["steps"]
        model.step()
        bids += live * B * (counter["steps"] - s0)
        if hashes:
            model.round_hashes.append(model.ledger.hash)
    return bids, time.perf_counter() - start


# ------------------------------------------------------------------------ the naive model
def naive_steps(model: NaiveRelayModel, steps: int) -> tuple[int, float]:
    b0 = model.bids
    start = time.perf_counter()
    for _ in range(steps):
        model.step()
    return model.bids - b0, time.perf_counter() - start


def naive_rounds(model: NaiveRelayModel, rounds: int) -> None:
    target = model.rounds + rounds
    while model.rounds < target:
        model.step()


def engine_balances(model: MarketModel) -> dict[int, int]:
    pop = model.population
    rows = np.flatnonzero(pop.alive)
    return dict(zip(pop.ids[rows].tolist(), pop.wealth[rows].tolist()))


# ---------------------------------------------------------------------- verification
def verify(n: int, batch: int, scheme: str, rounds: int, rent: float) -> dict:
    """Run both models the same number of rounds from the same state; compare log hashes and balances."""
    engine = build_engine(n, batch, scheme, rent=rent)
    naive = NaiveRelayModel(engine)
    naive.round_logs = []
    engine_logs = []
    for _ in range(rounds):
        engine_rounds(engine, 1)
        engine_logs.append(engine.last_round.transfers)
    naive_rounds(naive, rounds)
    same_hash = engine.round_hashes == naive.round_hashes
    same_balances = engine_balances(engine) == naive.balances()
    same_data = engine.datacollector.get_model_vars_dataframe().equals(naive.datacollector.get_model_vars_dataframe())
    return {
        "N": n, "B": batch, "scheme": scheme, "rounds": rounds, "transfers": engine.ledger.count,
        "alive": engine.population.size, "identical": bool(same_hash and same_balances and same_data),
        "hash": engine.ledger.hash[:12], "divergence": first_divergence(engine_logs, naive.round_logs),
    }


def first_divergence(engine_logs: list[np.ndarray], naive_logs: list[np.ndarray]) -> str | None:
    """Where the two transfer logs first differ, in words (None if they do not)."""
    names = TRANSFER_DTYPE.names
    for r, (e, v) in enumerate(zip(engine_logs, naive_logs)):
        for i in range(max(len(e), len(v))):
            a = dict(zip(names, e[i].tolist())) if i < len(e) else None
            b = dict(zip(names, v[i].tolist())) if i < len(v) else None
            if a != b:
                return f"round {r}, transfer {i}: engine {a} vs naive {b}"
    return None


# ------------------------------------------------------------------------- benchmark
def bench(n: int, batch: int, repeats: int, engine_s: float, naive_s: float, naive_max_steps: int,
          scheme: str = "holland") -> dict:
    engine = build_engine(n, batch, scheme, wealth=BENCH_WEALTH)
    naive = NaiveRelayModel(engine)
    engine_rounds(engine, 1, hashes=False)  # warm-up (numpy buffers); the naive model replays it as its first round
    e_rates, n_rates = [], []
    for _ in range(repeats):  # interleaved: engine, naive, engine, naive, ...
        bids, secs = 0, 0.0
        while secs < engine_s:
            b, s = engine_rounds(engine, 1, hashes=False)
            bids, secs = bids + b, secs + s
        e_rates.append(bids / secs)
        bids, secs, steps = 0, 0.0, 0
        while secs < naive_s and steps < naive_max_steps:
            b, s = naive_steps(naive, 1)
            bids, secs, steps = bids + b, secs + s, steps + 1
        n_rates.append(bids / secs)
    # same results, checked untimed on a replay (same seed, same rounds): its ledger hash after the last round
    # is the timed engine's, and after each round the naive model completed it is the naive model's
    played = engine.episodes_done // batch
    replay = build_engine(n, batch, scheme, wealth=BENCH_WEALTH)
    engine_rounds(replay, max(played, naive.rounds))
    same_run = replay.round_hashes[played - 1] == engine.ledger.hash
    identical = same_run and (naive.round_hashes == replay.round_hashes[: naive.rounds] if naive.rounds else None)
    ratio = statistics.median(e / v for e, v in zip(e_rates, n_rates))  # paired: adjacent in time
    return {"N": n, "B": batch, "engine": statistics.median(e_rates), "naive": statistics.median(n_rates),
            "ratio": ratio, "naive_rounds": naive.rounds, "identical": identical, "alive": engine.population.size}



def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: N = 1k only, a few rounds")
    ap.add_argument("--json", action="store_true", help="print one final JSON line with the ratios")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    print("same results (N=200, births off, rent high enough that agents go bankrupt, are written off and removed):")
    checks = []
    # B -> (rounds, rent in credits per episode)
    if args.quick:
        vplan = {1: (12, 0.06), 4: (4, 0.05), 32: (2, 0.01)}
    else:
        vplan = {1: (40, 0.02), 4: (15, 0.02), 32: (4, 0.005)}
    for scheme in ("holland", "fixed"):
        for batch, (rounds, rent) in vplan.items():
            r = verify(200, batch, scheme, rounds, rent=rent)
            checks.append(r)
            print(f"  {scheme:8s} B={batch:<2d}  rounds={rounds:3d}  transfers={r['transfers']:6d}  "
                  f"alive={r['alive']:3d}/200  ledger={r['hash']}  identical: {r['identical']}")
            if r["divergence"]:
                print(f"      first divergence: {r['divergence']}")

    if args.quick:
        plan = [(1000, 1, 1, 0.05, 0.05, 12), (1000, 32, 1, 0.05, 0.05, 12)]
    else:  # (N, B, repeats, engine seconds per repeat, naive seconds per repeat, naive max steps per repeat)
        plan = [(1000, 1, 5, 0.2, 0.2, 10**6), (1000, 32, 5, 0.2, 0.3, 10**6),
                (10000, 1, 5, 0.2, 0.4, 10**6), (10000, 32, 5, 0.3, 1.2, 10**6),
                (100000, 1, 5, 0.4, 1.5, 10**6), (100000, 32, 5, 0.6, 2.0, 3)]
    print("\nagent-bids per second (agent-bid = one live agent x one world x one auction step), "
          "relay K=5, holland bids, medians of interleaved repeats:")
    print(f"  {'N':>7} {'B':>3} {'engine bids/s':>15} {'naive bids/s':>14} {'ratio':>8}  naive rounds  identical"
          "  alive at the end")
    rows = []
    for n, batch, repeats, engine_s, naive_s, naive_max in plan:
        r = bench(n, batch, repeats, engine_s, naive_s, naive_max)
        rows.append(r)
        ident = "n/a (<1 round)" if r["identical"] is None else str(r["identical"])
        print(f"  {n:>7} {batch:>3} {r['engine']:>15,.0f} {r['naive']:>14,.0f} {r['ratio']:>7.1f}x  "
              f"{r['naive_rounds']:>12}  {ident:9s}  {r['alive']:,}", flush=True)

    identical = all(c["identical"] for c in checks) and all(r["identical"] is not False for r in rows)
    print(f"\nidentical: {identical}")
    print(f"wall time: {time.perf_counter() - t0:.1f} s")
    if args.json:
        out = {f"ratio_{label(r['N'])}_B{r['B']}": round(r["ratio"], 2) for r in rows}
        out |= {f"engine_{label(r['N'])}_B{r['B']}": round(r["engine"]) for r in rows}
        out |= {f"naive_{label(r['N'])}_B{r['B']}": round(r["naive"]) for r in rows}
        out["identical"] = identical
        print(json.dumps(out))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
