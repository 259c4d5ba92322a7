"""The relay economy written the usual Mesa way: the per-agent baseline of ``benchmarks/engine.py``.

One :class:`NaiveTrader` (``mesa.Agent``) per agent holding its own wealth (int
micro-credits) and rule; each auction step the model calls
``model.agents.shuffle_do("bid")``, every trader checks its rule against each world's
observation and, where it wakes, offers its bid to that world's auction (max bid, random
tie-break); then the winner pays the previous owner (or the house), the world steps, the
final owner is paid, and at the end of a round every trader pays rent
(``agents.do("pay_rent")``), the bankrupt are written off and removed, and a
``DataCollector`` records the same model reporters as the engine.

Same seed, same results: the model is built *from* a freshly constructed engine model
(each live row becomes a ``NaiveTrader`` with that row's account id, wealth and compiled rule)
and its numpy ``Generator`` gets the engine's ``bit_generator.state``. It then draws the same
random numbers in the same order (per auction step, one uniform draw per agent tied at the
top bid, in (world, row) order, exactly as ``market.auction.clear`` draws them; the two
``rng.binomial`` draws of ``plan_births`` per round), and writes the same transfer log
in ``market.ledger.TRANSFER_DTYPE``. The shuffle order of ``shuffle_do`` uses Mesa's own
``model.random`` and cannot change the outcome (the auction is order-free).

The leading underscore keeps this module out of ``catallax bench``'s list: it is not a benchmark.
"""

from __future__ import annotations

import hashlib

import mesa
import numpy as np

from agents.rules import ALWAYS
from market import MarketModel, Reason, gini, to_micro
from market.ledger import HOUSE_ID, TRANSFER_DTYPE


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
            "tokens": lambda m: 0,  # rule agents call no LLM
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
