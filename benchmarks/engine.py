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
``max_agents = N``; rent is small so nobody starves during the run).

*naive*: :class:`NaiveRelayModel` below, the same economy written the straightforward Mesa way:
one :class:`NaiveTrader` (``mesa.Agent``) per agent holding its own wealth (int
micro-credits) and rule; each auction step the model calls
``model.agents.shuffle_do("bid")``, every trader checks its rule against each world's
observation and, where it wakes, offers its bid to that world's auction (max bid, random
tie-break); then the winner pays the previous owner (or the house), the world steps, the
final owner is paid, and at the end of a round every trader pays rent
(``agents.do("pay_rent")``), the bankrupt are written off and removed, and a
``DataCollector`` records the same model reporters as the engine.

Same seed, same results: the naive model is built *from* a freshly constructed engine model
(each live row becomes a ``NaiveTrader`` with that row's account id, wealth and compiled rule)
and its numpy ``Generator`` gets the engine's ``bit_generator.state``. It then draws the same
random numbers in the same order (per auction step, one uniform draw per agent tied at the
top bid, in (world, row) order, exactly as ``market.auction.clear`` draws them; the two
``rng.binomial`` draws of ``plan_births`` per round), and writes the same transfer log
in ``market.ledger.TRANSFER_DTYPE``. "identical" means: the sha256 of the naive log equals
``model.ledger.hash`` after the same number of rounds (and, in the verification runs, every
account's final balance matches). The shuffle order of ``shuffle_do`` uses Mesa's own
``model.random`` and cannot change the outcome (the auction is order-free).

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
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import mesa  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks._units import label  # noqa: E402
from agents.rules import ALWAYS  # noqa: E402
from market import MarketConfig, MarketModel, PopulationConfig, Reason, gini, to_micro  # noqa: E402
from market.ledger import HOUSE_ID, TRANSFER_DTYPE  # noqa: E402
from scenarios import relay  # noqa: E402

STAGES = 5
SEED = 7


# ---------------------------------------------------------------------------- the engine
def build_engine(n: int, batch: int, scheme: str = "holland", rent: float = 0.0001, seed: int = SEED):
    """A MarketModel on relay with a fixed population of ``n`` and a step counter on its world."""
    world, policy = relay.build(relay.Config(stages=STAGES))
    market = MarketConfig(batch=batch, bid_scheme=scheme, rent=rent)
    population = PopulationConfig(initial_agents=n, max_agents=n, min_agents=0, p_exploit=0.0, p_explore=0.0,
                                  birth_interval=0)
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


def engine_rounds(model: MarketModel, rounds: int) -> tuple[int, float]:
    """Run whole rounds; return (agent-bids, seconds)."""
    counter, B = model.bench_counter, model.cfg.batch
    bids = 0
    start = time.perf_counter()
    for _ in range(rounds):
        live, s0 = model.population.size, counter["steps"]
        model.step()
        bids += live * B * (counter["steps"] - s0)
        model.round_hashes.append(model.ledger.hash)
    return bids, time.perf_counter() - start


# ------------------------------------------------------------------------ the naive model
class House:
    """The house account (id 0): funds rewards, receives first bids, rent and absorbs write-offs."""

    account = HOUSE_ID
    alive = True

    def __init__(self, wealth: int):
        self.wealth = wealth


class NaiveTrader(mesa.Agent):
    """One trader, all its state on the object: wealth (micro-credits), its rule, its bid."""

    def __init__(self, model, account: int, row: int, wealth: int, terms, action: int, bid_param: int):
        super().__init__(model)
        self.account = account  # ledger account id (the engine's unique_id for the same agent)
        self.row = row  # the engine row: orders this agent's tie-break draw
        self.wealth = wealth
        self.terms = terms  # ((feature, op mask, value), ...) of the rule's condition
        self.action = action
        self.bid_param = bid_param  # the fixed scheme's bid
        self.alive = True

    def wakes(self, obs) -> bool:
        """Does this agent's rule condition hold on ``obs``? (agents/rules.py semantics)"""
        for feature, op, value in self.terms:
            x = obs[feature]
            sign = 0 if x < value else (1 if x == value else 2)
            if not (op >> sign) & 1:
                return False
        return True

    def bid_amount(self) -> int:
        m, w = self.model, self.wealth
        raw = max(w * m.c_ppm // 1_000_000, m.base_bid) if m.scheme == "holland" else self.bid_param
        return min(raw, max(w, 0))  # a bid never exceeds the bidder's wealth

    def bid(self) -> None:
        """Offer this step's bid to every running world whose observation wakes this agent."""
        m = self.model
        amount = self.bid_amount()
        for b in m.open_worlds:
            if self.wakes(m.obs[b]):
                if amount > m.best_bid[b]:
                    m.best_bid[b], m.tied[b] = amount, [self]
                elif amount == m.best_bid[b]:
                    m.tied[b].append(self)

    def pay_rent(self, amount: int, episode: int) -> None:
        self.model.transfer(self, self.model.house, amount, Reason.RENT, episode, -1)


class NaiveRelayModel(mesa.Model):
    """The relay economy, per agent. ``step()`` is one auction step of B lockstep worlds."""

    def __init__(self, engine: MarketModel):
        super().__init__(rng=0)
        self.rng.bit_generator.state = engine.rng.bit_generator.state  # same random numbers from here on
        cfg, pop = engine.cfg, engine.population
        if (cfg.clearing, cfg.payment, cfg.terminal) != ("first_price", "bucket_brigade", "owner"):
            raise NotImplementedError("the naive model implements first_price / bucket_brigade / owner only")
        self.batch, self.scheme = cfg.batch, cfg.bid_scheme
        self.c_ppm = round(cfg.holland_c * 1_000_000)
        self.base_bid, self.rent = to_micro(cfg.base_bid), to_micro(cfg.rent)
        self.rent_interval, self.reward = cfg.rent_interval, to_micro(cfg.reward_scale)
        self.pop_cfg = engine.pop_cfg
        self.stages, self.horizon = engine.world.stages, engine.world.horizon
        if engine.episodes_done or engine.ledger.count != pop.size:
            raise ValueError("build the naive model from a freshly constructed engine model")
        self.episodes_done = 0
        self.t = 0  # auction step within the round
        self.rounds = 0
        self.bids = 0  # agent-bids so far (the benchmark's unit)
        self.log: list[tuple] = []  # this round's transfers
        self.house = House(0)
        rules = engine.policy.rules
        funding = to_micro(engine.pop_cfg.initial_wealth)
        for row in np.flatnonzero(pop.traders).tolist():  # row order == creation order
            terms = tuple((int(f), int(o), int(v)) for f, o, v in zip(rules.feature[row], rules.op[row],
                                                                        rules.value[row]) if o != ALWAYS)
            trader = NaiveTrader(self, int(pop.ids[row]), row, 0, terms, int(rules.action[row]), int(pop.bid[row]))
            self.transfer(self.house, trader, funding, Reason.FUND, 0, -1)  # the house funds each newborn
        self.sha = hashlib.sha256()
        self.round_hashes: list[str] = []
        self.round_logs: list[np.ndarray] | None = None  # set to [] to keep each round's log (verification)
        self.last_success_rate = float("nan")
        self.datacollector = mesa.DataCollector(model_reporters={
            "population": lambda m: len(m.agents),
            "house": lambda m: m.house.wealth,
            "gini": lambda m: gini(np.array([a.wealth for a in m.agents], dtype=np.int64)),
            "success": lambda m: m.last_success_rate,
        })

    def transfer(self, src, dst, amount: int, reason: Reason, episode: int, step: int) -> None:
        if amount == 0:
            return  # moves nothing; the engine's ledger drops it too
        if amount < 0 or not (src.alive and dst.alive):
            raise RuntimeError("bad transfer")
        src.wealth -= amount
        dst.wealth += amount
        self.log.append((src.account, dst.account, amount, int(reason), episode, step))

    def step(self) -> None:
        B = self.batch
        if self.t == 0:  # a new round: B fresh work items
            self.stage = [0] * B
            self.owner = [None] * B
            self.active = [True] * B
        t, first = self.t, self.episodes_done

        # every agent bids in random order into the running worlds' auctions
        self.obs = [(s,) for s in self.stage]
        self.open_worlds = [b for b in range(B) if self.active[b]]
        self.best_bid, self.tied = [-1] * B, [[] for _ in range(B)]
        self.agents.shuffle_do("bid")
        self.bids += len(self.agents) * B
        # ties: one uniform draw per tied agent, in (world, row) order, as market.auction.clear draws them
        for b in range(B):
            self.tied[b].sort(key=lambda agent: agent.row)
        draws = iter(self.rng.random(sum(len(t) for t in self.tied)).tolist())
        self.best_agent = [None] * B
        for b in range(B):
            best_draw = -1.0
            for agent in self.tied[b]:
                draw = next(draws)
                if draw > best_draw:
                    best_draw, self.best_agent[b] = draw, agent

        # bucket brigade: the winner pays its bid to the previous owner, the first winner to the house
        for b in range(B):
            winner = self.best_agent[b]
            if winner is not None:
                payee = self.house if self.owner[b] is None else self.owner[b]
                if payee is not winner:
                    self.transfer(winner, payee, self.best_bid[b], Reason.BID, first + b, t)
        # the winner acts on its item; reaching stage K pays the final owner (there are no step rewards)
        for b in range(B):
            winner = self.best_agent[b]
            if winner is not None:
                if winner.action == self.stage[b]:
                    self.stage[b] += 1
                self.owner[b] = winner
        for b in range(B):
            if self.active[b] and self.stage[b] == self.stages:
                self.active[b] = False
                self.transfer(self.house, self.owner[b], self.reward, Reason.REWARD, first + b, t)

        self.t += 1
        if self.t == self.horizon or not any(self.active):
            self.settle()

    def settle(self) -> None:
        """End of a round: rent, bankruptcies, (no) births, the log, data collection."""
        B = self.batch
        self.last_success_rate = sum(s == self.stages for s in self.stage) / B
        before = self.episodes_done
        self.episodes_done = after = before + B
        charges = after // self.rent_interval - before // self.rent_interval
        if charges and self.rent:
            self.agents.do("pay_rent", charges * self.rent, after - 1)
        for agent in [a for a in self.agents if a.wealth < 0]:  # row order
            self.transfer(self.house, agent, -agent.wealth, Reason.WRITE_OFF, after - 1, -1)
            agent.alive = False
            agent.remove()
        # births are disabled in this benchmark; draw what plan_births draws, and insist on none
        cfg = self.pop_cfg
        exploit, explore = self.rng.binomial(B, cfg.p_exploit), self.rng.binomial(B, cfg.p_explore)
        if exploit or explore or cfg.birth_interval or len(self.agents) < cfg.min_agents:
            raise NotImplementedError("the naive model does not implement births")
        rows = np.array(self.log, dtype=TRANSFER_DTYPE)
        self.sha.update(rows.tobytes())
        if self.round_logs is not None:
            self.round_logs.append(rows)
        self.log = []
        self.round_hashes.append(self.sha.hexdigest())
        self.rounds += 1
        self.t = 0
        self.datacollector.collect(self)

    def balances(self) -> dict[int, int]:
        return {HOUSE_ID: self.house.wealth} | {a.account: a.wealth for a in self.agents}


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
    engine = build_engine(n, batch, scheme)
    naive = NaiveRelayModel(engine)
    engine_rounds(engine, 1)  # warm-up (numpy buffers); the naive model replays it as its first round
    e_rates, n_rates = [], []
    for _ in range(repeats):  # interleaved: engine, naive, engine, naive, ...
        bids, secs = 0, 0.0
        while secs < engine_s:
            b, s = engine_rounds(engine, 1)
            bids, secs = bids + b, secs + s
        e_rates.append(bids / secs)
        bids, secs, steps = 0, 0.0, 0
        while secs < naive_s and steps < naive_max_steps:
            b, s = naive_steps(naive, 1)
            bids, secs, steps = bids + b, secs + s, steps + 1
        n_rates.append(bids / secs)
    # same results: the naive ledger hash after its last complete round == the engine's after that round
    if naive.rounds and len(engine.round_hashes) < naive.rounds:
        engine_rounds(engine, naive.rounds - len(engine.round_hashes))
    identical = naive.round_hashes == engine.round_hashes[: naive.rounds] if naive.rounds else None
    ratio = statistics.median(e / v for e, v in zip(e_rates, n_rates))  # paired: adjacent in time
    return {"N": n, "B": batch, "engine": statistics.median(e_rates), "naive": statistics.median(n_rates),
            "ratio": ratio, "naive_rounds": naive.rounds, "identical": identical}



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
    print(f"  {'N':>7} {'B':>3} {'engine bids/s':>15} {'naive bids/s':>14} {'ratio':>8}  naive rounds  identical")
    rows = []
    for n, batch, repeats, engine_s, naive_s, naive_max in plan:
        r = bench(n, batch, repeats, engine_s, naive_s, naive_max)
        rows.append(r)
        ident = "n/a (<1 round)" if r["identical"] is None else str(r["identical"])
        print(f"  {n:>7} {batch:>3} {r['engine']:>15,.0f} {r['naive']:>14,.0f} {r['ratio']:>7.1f}x  "
              f"{r['naive_rounds']:>12}  {ident}", flush=True)

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
