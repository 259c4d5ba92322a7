"""A live view of a running market in the browser, with Mesa's SolaraViz.

    catallax dashboard                 # relay, on http://127.0.0.1:8765
    catallax dashboard blocks --port 8800

Press Step or Play: each step is one round of the market (B episodes, then
rent, bankruptcy and births). Four panels: the live agents' wealth (coloured
by lineage, the last auction's winner outlined), the last auction (every
eligible bid and the winner), the population, and the success rate, the last
two from the model's own Mesa ``DataCollector``. The sidebar's parameters
(scenario, seed, lockstep batch) take effect on Reset.

The market engine records no auction history (it would cost every run for a
view few runs have), so :class:`LiveMarket` wraps the policy to watch the
auctions of the runs it drives; everything else is ``market.MarketModel`` as is.
"""

from __future__ import annotations

import os

import numpy as np
import solara
from mesa.visualization import SolaraViz, make_plot_component
from mesa.visualization.utils import update_counter

from market import MarketModel, PolicyWrapper
from market.money import MICRO
from scenarios.run.config import load
from scenarios.registry import SCENARIOS, get_scenario
from scenarios.report.dashboard_server import live_scenarios, telemetry_off
from scenarios.report.style import LINEAGE_PALETTE, figure

RECENT = 20  # rounds in the success rate's moving average
telemetry_off()  # also under a plain `solara run` of this file (catallax dashboard turns it off before the server starts)


class AuctionWatch(PolicyWrapper):
    """Wraps a policy to see each auction: ``eligible`` (before bidding) and ``act`` (after clearing, with
    the winners) are the calls the market makes once per step; everything else goes to the policy untouched."""

    def __init__(self, policy, on_act):
        super().__init__(policy)
        self._on_act = on_act
        self.eligible_now: np.ndarray | None = None

    def eligible(self, obs):
        self.eligible_now = np.asarray(self.inner.eligible(obs))
        return self.eligible_now

    def act(self, obs, winners):
        self._on_act(obs, winners)
        return self.inner.act(obs, winners)


class LiveMarket(MarketModel):
    """``MarketModel`` built from a scenario by keyword (what SolaraViz's Reset calls), with its auctions watched."""

    def __init__(self, scenario: str = "relay", seed: int = 0, batch: int = 1):
        if scenario not in SCENARIOS:  # the Select's value comes from a websocket: checked on the server, so a
            raise ValueError(f"dashboard: scenario {scenario!r} is not a built-in one")  # client names no .py file
        exp = load(scenario, [f"market.batch={int(batch)}"], seed=int(seed))
        world, policy = get_scenario(scenario).build(exp.scenario)
        self.watch = AuctionWatch(policy, self._record)
        self.auction: dict | None = None  # the last auction with a winner in world 0
        self._bids = None
        super().__init__(world, self.watch, exp.market, exp.population, seed=int(seed))
        self.scenario, self.features = scenario, tuple(getattr(world.space, "features", ()))
        self.root = {int(a): int(a) for a in self.population.ids[self.population.traders]}  # agent -> lineage root

    def current_bids(self, obs=None):
        self._bids = super().current_bids(obs)  # what the market bids with this step, kept for _record
        return self._bids

    def _record(self, obs, winners) -> None:
        if self.watch.eligible_now is None or self._bids is None or int(winners[0]) < 0:
            return
        rows = np.flatnonzero(self.watch.eligible_now[0] & self.population.traders)
        bids = self._bids if self._bids.ndim == 1 else self._bids[0]
        self.auction = {"ids": self.population.ids[rows].copy(), "bids": bids[rows] / MICRO,
                        "winner": int(self.population.ids[int(winners[0])]),
                        "obs": dict(zip(self.features, np.asarray(obs)[0].tolist()))}

    def step(self):
        super().step()
        for b in self.last_round.births:
            self.root[b["agent_id"]] = self.root.get(b["parent_id"], b["agent_id"])


def _colour(root: int) -> str:
    return LINEAGE_PALETTE[root % (len(LINEAGE_PALETTE) - 1)]


@solara.component
def WealthBars(model: LiveMarket):
    update_counter.get()
    pop = model.population
    rows = np.flatnonzero(pop.traders)
    ids, wealth = pop.ids[rows], pop.wealth[rows] / MICRO
    winner = model.auction["winner"] if model.auction else None
    solara.Markdown(f"### Wealth of {rows.size} live agents after {model.episodes_done} episodes")
    fig = figure(6, 3.2)
    ax = fig.subplots()
    ax.bar(range(ids.size), wealth, color=[_colour(model.root.get(int(a), int(a))) for a in ids],
           edgecolor=["black" if a == winner else "none" for a in ids], linewidth=1.5)
    ax.set_xticks(range(ids.size), [str(a) for a in ids], rotation=90, fontsize=6)
    ax.set_xlabel("agent id (colour: lineage; outlined: last auction's winner)")
    ax.set_ylabel("wealth (credits)")
    solara.FigureMatplotlib(fig, format="png")


@solara.component
def AuctionView(model: LiveMarket):
    update_counter.get()
    a = model.auction
    if a is None:
        solara.Markdown("### Last auction\nNo auction yet: press Step.")
        return
    state = ", ".join(f"{k}={v}" for k, v in a["obs"].items())
    solara.Markdown(f"### Last auction: winner #{a['winner']} of {a['ids'].size} bidders ({state})")
    fig = figure(6, 3.2)
    ax = fig.subplots()
    won = a["ids"] == a["winner"]
    ax.bar(range(a["ids"].size), a["bids"], color=np.where(won, "#d62728", "#9ecae1"))
    ax.set_xticks(range(a["ids"].size), [str(i) for i in a["ids"]], rotation=90, fontsize=7)
    ax.set_xlabel("eligible agent id (red: winner)")
    ax.set_ylabel("bid (credits)")
    ax.set_title(f"{model.cfg.clearing} clearing, {model.cfg.bid_scheme} bids", fontsize=9)
    solara.FigureMatplotlib(fig, format="png")


@solara.component
def SuccessRate(model: LiveMarket):
    update_counter.get()
    success = np.asarray(model.datacollector.model_vars["success"], dtype=float)
    recent = success[-RECENT:]
    solara.Markdown(f"### Success rate: {recent.mean():.2f} over the last {recent.size} rounds" if recent.size
                    else "### Success rate: no round yet")
    fig = figure(6, 3.0)
    ax = fig.subplots()
    if success.size:
        end = np.arange(1, success.size + 1)
        total = np.concatenate([[0.0], np.cumsum(success)])
        rolling = (total[end] - total[np.maximum(end - RECENT, 0)]) / np.minimum(end, RECENT)
        ax.plot(np.arange(1, success.size + 1), rolling, color="black", label=f"mean of last {RECENT} rounds")
        ax.legend(fontsize=8, loc="lower right")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("round")
    ax.set_ylabel("success rate")
    solara.FigureMatplotlib(fig, format="png")


def page_for(scenario: str):
    """The SolaraViz page for a scenario (module-level ``page`` is what ``solara run`` serves)."""
    model = LiveMarket(scenario=scenario)
    params = {
        "scenario": {"type": "Select", "value": scenario, "values": live_scenarios(), "label": "scenario"},
        "seed": {"type": "SliderInt", "value": 0, "min": 0, "max": 99, "step": 1, "label": "seed"},
        "batch": {"type": "SliderInt", "value": 1, "min": 1, "max": 16, "step": 1, "label": "episodes per round (B)"},
    }
    population = make_plot_component({"population": "black"}, post_process=lambda ax: ax.set_ylabel("live agents"))
    components = [WealthBars, AuctionView, population, SuccessRate]
    return SolaraViz(model, components=components, model_params=params, name=f"Catallax market: {scenario}")


page = page_for(os.environ.get("CATALLAX_DASHBOARD", "relay"))
