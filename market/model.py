"""The economy as a Mesa model.

One ``MarketModel.step()`` is one *round*: B episodes of the world run in
lockstep over one population, then the economy settles (rent, bankruptcy,
births). Per step of a round (docs: concepts/index.md, "The economy"):

1. every live agent's eligibility for each world's observation  -> [B, N]
2. eligible agents bid (scheme, capped at wealth)                -> [N]
3. the auction clears each world                                 -> winner, price [B]
4. the winner pays the previous owner (bucket brigade) or the house
5. the winner acts; step rewards go to it
6. on completion the terminal reward goes to the final owner or the path's authors

Every phase is one array operation over [B, N]; nothing loops over agents.
With B > 1 an agent can win in several worlds in one step; its bid is capped
at its wealth at the start of the step, so its lockstep payments can exceed
what it has, and it then goes bankrupt at the round's end like anyone else.
"""

from __future__ import annotations

import mesa
import numpy as np

from market.agent import LazyTraders
from market.auction import COMPILED_CELLS, capped, capped_credits, clear, holland_bids
from market.births import EXPLOIT, EXPLORE, RANDOM_NEWCOMER, plan_births
from market.book import CompiledBook, NumpyBook, Round, Settlement
from market.branching import Branches
from market.config import MarketConfig, PopulationConfig
from market.ledger import Ledger, Reason
from market.money import MICRO, share, to_micro
from market.population import HOUSE_ROW, Population
from market.protocols import Economy, Policy, World
from market.trace import RoundLog, RoundTrace

__all__ = ["BALANCE_BIDS", "MarketModel", "RoundLog", "RoundTrace", "WealthGini", "gini", "gini_of_sorted"]

BALANCE_BIDS = ("fixed", "fixed_with_eps", "holland")
"""Bid schemes whose bid reads nothing but the bidder's own state: its balance, and its evolved bid (which
changes only at births). Within a round their bids change only where a payment moved a balance."""


def gini(values: np.ndarray) -> float:
    """Gini coefficient of non-negative values (0: equal, ->1: one holds all); negatives count as 0."""
    return gini_of_sorted(np.sort(np.asarray(values)))


def gini_of_sorted(v: np.ndarray) -> float:
    """:func:`gini` of values already in ascending order (clipping at 0 keeps the order)."""
    v = np.maximum(v, 0).astype(np.float64, copy=False)
    total = v.sum()
    if v.size == 0 or total == 0:
        return 0.0
    weights = np.arange(1 - v.size, v.size, 2, dtype=np.float64)  # 2i - n - 1 for ranks i = 1..n, as floats
    return float(weights @ v / (v.size * total))


class WealthGini:
    """The DataCollector's Gini of the traders' balances, every round.

    A round moves few balances far (rent moves all of them by the same amount), so last round's order is
    nearly this round's: a stable sort (timsort) from it is close to one pass, where sorting afresh cost a
    tenth of a 10k-agent round. The sorted values, and so the Gini, are :func:`gini`'s."""

    def __init__(self):
        self.order = np.arange(0)

    def __call__(self, wealth: np.ndarray, traders: np.ndarray) -> float:
        order = self.order if self.order.size == wealth.size else np.arange(wealth.size)
        self.order = order = order[np.argsort(wealth[order], kind="stable")]
        return gini_of_sorted(wealth[order[traders[order]]])


class MarketModel(LazyTraders, mesa.Model, Economy):
    """The market economy as a Mesa model: a population of agents that bid for a world's steps, paid on a ledger.

    Each ``step()`` is a round: B episodes of the world in lockstep, each step's owner chosen by an auction among
    the agents the policy finds eligible; the payments (the bucket brigade, or final-only), rent, taxes and
    rewards moved through the integer ledger; then bankruptcies and births. The scenarios build it
    (``scenarios.build_model``); a scenario of your own builds one from its world and policy.

    Args:
        world: B instances of the task (``market.protocols.World``).
        policy: What the agents are: who is eligible, what the winner does, how agents are born and learn
            (``market.protocols.Policy``, e.g. ``agents.RulePolicy``).
        market: ``[market]``: bid scheme, clearing, payment rule, rent, taxes, batch size B.
        population: ``[population]``: initial agents and wealth, birth rates, the population's bounds.
        seed: Seeds the model's generator (Mesa's ``rng``): the same seed and config give the same ledger hash.

    Attributes:
        ledger: The append-only ledger of integer transfers (``market.ledger.Ledger``).
        population: The agents' rows: wealth, bids, birth and death (``market.population.Population``).
        datacollector: Mesa's, with ``population``, ``house``, ``gini``, ``success`` and ``tokens`` per round.
    """

    def __init__(self, world: World, policy: Policy, market: MarketConfig, population: PopulationConfig, seed: int):
        super().__init__(rng=seed)
        self.world, self.policy = world, policy
        self.cfg, self.pop_cfg = market, population
        self.population = Population(capacity=population.max_agents + 1)
        self.policy.resize(self.population.capacity)
        self.ledger = Ledger(self.population)
        self.next_agent_id = 1  # account ids: the house is 0, traders count up from 1, never reused
        self.episodes_done = 0
        self.last_round: RoundLog | None = None
        self.trace: RoundTrace | None = None
        self._money = {
            "base_bid": to_micro(market.base_bid),
            "bid_eps": to_micro(market.bid_eps),
            "reward": to_micro(market.reward_scale),
            "rent": to_micro(market.rent),
            "fee": to_micro(market.action_fee),
            "token_price": to_micro(market.token_price),  # per 1000 tokens
            "token_prices": {model: to_micro(price) for model, price in market.token_prices.items()},
            "initial_wealth": to_micro(population.initial_wealth),
        }
        self._births: list[dict] = []  # this round's birth records
        self._unrecorded: list[np.ndarray] = []  # rows born since, whose records are made by _record_births
        self._born(np.full(population.initial_agents, RANDOM_NEWCOMER, dtype=np.int64))
        self._gini = WealthGini()
        self.datacollector = mesa.DataCollector(
            model_reporters={
                "population": lambda m: m.population.size,
                "house": lambda m: int(m.population.wealth[HOUSE_ROW]),
                "gini": lambda m: m._gini(m.population.wealth, m.population.traders),
                "success": lambda m: m.last_success_rate,
                "tokens": lambda m: m.round_tokens,  # LLM tokens the agents' calls used in the round
            }
        )
        self.last_success_rate = float("nan")
        self.round_tokens = 0

    # ------------------------------------------------------------------ bids
    def current_bids(self, obs: np.ndarray | None = None) -> np.ndarray:
        """[N] bids of every row under the configured scheme ([B, N] for ``policy``), capped at wealth."""
        pop, cfg = self.population, self.cfg
        if cfg.bid_scheme == "holland":
            return holland_bids(pop.wealth, cfg.holland_c, self._money["base_bid"], cfg.bid_cap)
        if cfg.bid_scheme in ("policy", "learned"):  # the agents' own bids in credits: evolved, or a bid head
            return capped_credits(self.policy.bids(obs), pop.wealth, cfg.bid_cap)
        return capped(pop.bid, pop.wealth, cfg.bid_cap)  # a bid never exceeds bid_cap x wealth: a newcomer earns its way up

    def rebid(self, bids: np.ndarray, rows: np.ndarray) -> None:
        """``bids`` (this round's, from :meth:`current_bids`) after a payment moved the balances of ``rows``. Only
        for a scheme whose bid reads nothing but its bidder's balance (``BALANCE_BIDS``): the rows that paid or
        were paid are bid again, the rest stand (bidding every row again would cost a large economy a sizeable
        part of each auction step, and a step moves a few balances)."""
        pop, cfg = self.population, self.cfg
        if cfg.bid_scheme == "holland":
            holland_bids(pop.wealth, cfg.holland_c, self._money["base_bid"], cfg.bid_cap, rows=rows, out=bids)
        else:
            bids[rows] = capped(pop.bid[rows], pop.wealth[rows], cfg.bid_cap)

    def _newborn_bid(self) -> int:
        if self.cfg.bid_scheme == "fixed_with_eps" and self.population.size > 0:
            return int(self.population.bid[self.population.traders].max()) + self._money["bid_eps"]
        return self._money["base_bid"]

    # ------------------------------------------------------------- episodes
    def run_episodes(self, world: World | None = None, batch: int | None = None, settle: bool = True) -> list[dict]:
        """Run B episodes in lockstep; return one summary dict per episode.

        ``settle=False`` runs the population *frozen*: the same auctions and
        actions, but no money moves (evaluation on held-out tasks).

        Each step reads as the economy's phases: clear (eligibility, bids, the auction), act (the winners'
        actions), step (the world), book (the step's records and payments, market/book.py, then the ledger).
        A training round of a policy that branches (``policy.branches`` = N) plays its first M = B / (1 + N)
        worlds in full, then branches the rest from their states (market/branching.py).
        """
        self._record_births()  # before any policy update (the construction cohort's records)
        world = world or self.world
        B, cfg = batch or self.cfg.batch, self.cfg
        episode_ids = self.episodes_done + np.arange(B)
        world.reset(B, self.rng)
        branches = Branches(self.policy.branches if settle and world is self.world else 0, B)
        rnd = Round(B, branches.horizon(world.horizon), branches.full)
        compiled = B * self.population.capacity >= COMPILED_CELLS  # as the auction's: a small economy never loads numba
        book = (CompiledBook if compiled else NumpyBook)(B, cfg.payment, cfg.conserve, self._money["reward"],
                                                          self._money["fee"], world.horizon)
        pay = Settlement(self.ledger, B, episode_ids, cfg.terminal) if settle else None
        self._bids, auctions = None, []  # auctions: per step, for a policy that reads them in full
        for t in range(len(rnd.path)):
            branches.before_step(world)
            obs = world.observe()
            rnd.observed(t, obs)
            winner, price = self._clear(obs, rnd, t, auctions)
            actions = self.policy.act(obs, winner)  # action -1 from a winner: invalid, it forfeits
            won, winner, payer, payee, pays = book.buy(rnd, winner, actions)
            reward, done = world.step(actions, won)
            src, dst, amount, micro, ended, playing = book.book(rnd, t, reward, done, won, winner, price, payer, payee,
                                                                pays)
            if pay is not None:  # the step's money in one ledger call (no world reads a balance: it may move after the act)
                moved = pay(rnd, t, src, dst, amount, micro, done, ended)
                if cfg.bid_scheme in BALANCE_BIDS:
                    self.rebid(self._bids, moved)
            if not branches.after_step(self, world, rnd, t) and not playing:
                break

        solved = np.asarray(world.solved)
        if settle:
            self.last_success_rate = float(solved.mean())
            T = t + 1
            extra = dict(zip(("eligible", "wealth"), map(np.stack, zip(*auctions)))) | branches.trace_fields()
            column = {name: g[:T] for name, g in rnd.grid.items()}
            self.trace = RoundTrace(rnd.path[:T], rnd.seen[:T], solved.copy(), column["winner"], column["price"],
                               column["reward"], column["done"], pay.payments, column["live"], **extra)
        return [
            {"episode": int(e), "success": bool(s), "steps": int(n), "reward": int(r)}
            for e, s, n, r in zip(episode_ids, solved, rnd.steps, rnd.earned)
        ]

    def _clear(self, obs, rnd: Round, t: int, auctions: list) -> tuple[np.ndarray, np.ndarray]:
        """Phases 1-3: every live agent's eligibility for each world in play, bids (capped), each world's auction."""
        pop, cfg, B = self.population, self.cfg, rnd.active.size
        eligible = self.policy.eligible(obs) & pop.traders  # nobody is born or dies during a round's episodes
        if np.count_nonzero(rnd.active) < B:  # (an & with active[:, None] broadcasts by a slow strided loop: 11 us at 10k)
            eligible[~rnd.active] = False
        if self._bids is None or cfg.bid_scheme not in BALANCE_BIDS:
            self._bids = self.current_bids(obs)  # BALANCE_BIDS: bid once a round, then where a payment moved a balance
        winner, price = clear(self._bids, eligible, cfg.clearing, self.rng, cfg.temperature * MICRO)  # [N] bids broadcast
        rnd.grid["winner"][t], rnd.grid["price"][t] = winner, price
        if self.policy.reads_auctions:
            auctions.append((eligible, pop.wealth.copy()))
        return winner, price

    # -------------------------------------------------------------- economy
    def step(self) -> None:
        """One round: B episodes, then rent, bankruptcy and births."""
        before = self.episodes_done
        episodes = self.run_episodes()
        self.policy.learn(self)  # a trained policy updates its weights from this round (agents/learners/policy.py)
        self.episodes_done += self.cfg.batch
        after = self.episodes_done
        self._charge_compute(after)
        self._charge_rent(before, after)
        bankrupt = self._bankruptcies()
        parents, kinds = plan_births(self.population.wealth, self.population.traders, bankrupt, (before, after),
                                     self.pop_cfg, self.rng, with_kinds=True)
        self._born(parents, kinds)  # before the bankrupt rows are recycled: explore children read their rules
        deaths = self._release(bankrupt)
        size = self.population.size
        for summary in episodes:
            summary["population"] = size
        self.last_round = RoundLog(self.ledger.flush(), episodes, self._pending_births, deaths)
        self._pending_births = []
        self.datacollector.collect(self)

    def _charge_compute(self, after: int) -> None:
        """The LLM tokens each agent's calls used this round, counted on its row and charged at
        market.token_price per 1000 (a model named in market.token_prices at its own; the sum floored to
        whole micro-credits). The policy reports [N] tokens, or {model: [N] tokens} where models differ."""
        spent = self.policy.compute()
        if spent is None:
            return
        pop = self.population
        by_model = spent if isinstance(spent, dict) else {"": spent}
        used = {m: np.where(pop.traders, t[: pop.capacity], 0) for m, t in by_model.items()}
        tokens = sum(used.values(), np.zeros(pop.capacity, dtype=np.int64))
        pop.tokens += tokens
        self.round_tokens = int(tokens.sum())
        rows = np.flatnonzero(tokens)
        prices = {m: self._money["token_prices"].get(m, self._money["token_price"]) for m in used}
        if any(prices.values()) and rows.size:
            amount = sum(t[rows] * prices[m] for m, t in used.items()) // 1000
            paid = amount > 0
            self.ledger.transfer(rows[paid], HOUSE_ROW, amount[paid], Reason.COMPUTE, after - 1, -1)

    def _charge_rent(self, before: int, after: int) -> None:
        charges = after // self.cfg.rent_interval - before // self.cfg.rent_interval
        if not charges:
            return
        payers = np.flatnonzero(self.population.traders)
        if self._money["rent"]:
            self.ledger.transfer(payers, HOUSE_ROW, charges * self._money["rent"], Reason.RENT, after - 1, -1)
        if self.cfg.wealth_tax:  # Holland's c_tax x S: old fortunes fade unless renewed
            wealth = np.maximum(self.population.wealth[payers], 0)
            kept = share(wealth, (1 - self.cfg.wealth_tax) ** charges)
            self.ledger.transfer(payers, HOUSE_ROW, wealth - kept, Reason.RENT, after - 1, -1)

    def _bankruptcies(self) -> np.ndarray:
        """Rows whose wealth fell below zero: the house absorbs the debt, then they die."""
        pop = self.population
        rows = np.flatnonzero(pop.traders & (pop.wealth < 0))
        if rows.size:
            self.ledger.transfer(HOUSE_ROW, rows, -pop.wealth[rows], Reason.WRITE_OFF, self.episodes_done - 1, -1)
        pop.alive[rows] = False  # dead from here on; rows are recycled after births read their skills
        return rows

    def _release(self, rows: np.ndarray) -> list[dict]:
        if not rows.size:
            return []
        pop = self.population
        deaths = [{"agent_id": a, "died_episode": self.episodes_done - 1, "tokens": t}
                  for a, t in zip(pop.ids[rows].tolist(), pop.tokens[rows].tolist())]
        self.population.release(rows)
        return deaths

    def _born(self, parents: np.ndarray, kinds: np.ndarray | None = None) -> None:
        """Create one newborn per entry of ``parents`` (-1: random), funded by the house.

        The policy's ``revise`` gets the explore children with their parents' failure observations
        (RoundTrace.failures); the children it does not revise inherit, as exploit children do.
        """
        if parents.size == 0:
            return
        pop = self.population
        parent_ids = np.where(parents >= 0, pop.ids[np.maximum(parents, 0)], -1)
        rows = pop.allocate(parents.size)
        self.policy.resize(pop.capacity)
        pop.ids[rows] = self.next_agent_id + np.arange(rows.size)
        self.next_agent_id += rows.size
        pop.alive[rows] = True
        pop.parent[rows] = parent_ids
        pop.born[rows] = self.episodes_done
        pop.tokens[rows] = 0
        pop.bid[rows] = self._newborn_bid()
        mutants = parents >= 0
        revised = np.zeros(parents.size, dtype=bool)
        if kinds is not None and self.trace is not None:
            explore = (kinds == EXPLORE) & mutants
            if explore.any():
                revised[explore] = self.policy.revise(rows[explore], parents[explore],
                                                      *self.trace.failures(parents[explore]), self.rng)
        self.policy.spawn(rows[~mutants], self.rng)
        self.policy.inherit(rows[mutants & ~revised], parents[mutants & ~revised], self.rng)
        funder, grant = HOUSE_ROW, self._money["initial_wealth"]  # scalars: a million-row build copies neither
        if self.pop_cfg.child_share > 0 and kinds is not None:  # Hayek: a rich agent endows its child itself
            endowed = kinds == EXPLOIT
            funder, grant = np.full(rows.size, funder), np.full(rows.size, grant)
            funder[endowed] = parents[endowed]
            grant[endowed] = share(pop.wealth[parents[endowed]], self.pop_cfg.child_share)
        self.ledger.transfer(funder, rows, grant, Reason.FUND, max(self.episodes_done - 1, 0), -1)
        self._unrecorded.append(rows)

    def _record_births(self) -> None:
        """Make the records of the rows born since the last call (their skill text from ``policy.describe``).

        Deferred from birth to the next round's start or its log, whichever comes first, with no policy
        update in between, so a record reads as at birth; describing every skill was most of the time
        to build a million agents, and a model that is built and thrown away never pays it.
        """
        if not self._unrecorded:
            return
        pop, rows = self.population, np.concatenate(self._unrecorded)
        self._unrecorded = []
        self._births += [
            {"agent_id": int(pop.ids[r]), "parent_id": int(pop.parent[r]), "born_episode": int(pop.born[r]),
             "skill": skill}
            for r, skill in zip(rows.tolist(), self.policy.describe(rows))
        ]

    @property
    def _pending_births(self) -> list[dict]:
        """The birth records not yet in a round's log (read by a model that rewrites them: recsys)."""
        self._record_births()
        return self._births

    @_pending_births.setter
    def _pending_births(self, records: list[dict]) -> None:
        self._births, self._unrecorded = records, []

    def attach(self, store) -> None:
        """The runner's hook before the first round: the policy may keep state in the run database too."""
        self.policy.attach(store, self.population)

    # ---------------------------------------------------------- checkpoints
    def state_dict(self) -> dict:
        """Everything needed to continue this run exactly, at a round boundary."""
        return {
            "population": self.population.state_dict(),
            "policy": self.policy.state_dict(),
            "world": self.world.state_dict(),
            "rng": self.rng.bit_generator.state,
            "random": self.random.getstate(),
            "episodes_done": self.episodes_done,
            "next_agent_id": self.next_agent_id,
            "steps": self.steps,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a checkpoint; the ledger's hash is restored separately from the stored log."""
        self.population.load_state_dict(state["population"])
        self.policy.load_state_dict(state["policy"])
        if state["world"] is not None:
            self.world.load_state_dict(state["world"])
        self.rng.bit_generator.state = state["rng"]
        self.random.setstate(state["random"])
        self.episodes_done, self.next_agent_id = state["episodes_done"], state["next_agent_id"]
        self.steps = state["steps"]
        self._drop_traders()
        self._pending_births = []
