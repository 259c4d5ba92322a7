"""A run read back from the database, and the series the plots draw, all rebuilt from its tables.

Nothing here needs the model that made the run: per-agent balances over time
come from replaying the ``transfer`` table (money moves only through it, so
its running sum *is* every balance), births and deaths from the ``agent``
table, success from ``episode``. That is what makes the report generic: any
scenario that writes these tables (relay, blocks, recsys, boltzmann) gets the
same plots.

Time is binned: at most ``points`` columns, each holding the balances at the
end of its last episode, so a run of 100,000 episodes costs the same memory as
one of 400.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime

import networkx as nx
import numpy as np
from sqlalchemy import Engine
from sqlmodel import Session, select

from market import Reason, gini
from market.ledger import HOUSE_ID
from market.money import MICRO
from market.store import (Agent, Run, StoreError, checked_ints, load_episodes, load_transfers, make_engine, snapshot,
                          stored_json)
from skills.lineage import agent_graph

# Money in the ledger is int64 micro-credits; plots are in credits.
CREDITS = 1.0 / MICRO
# Transfers that are not earned: the house's grant to a newborn and its write-off of a bankrupt's debt.
UNEARNED = (int(Reason.FUND), int(Reason.WRITE_OFF))


def reason_name(code: int) -> str:
    """``Reason`` member name, or the bare code for reasons this catallax does not know (a newer scenario's)."""
    try:
        return Reason(code).name.lower()
    except ValueError:
        return f"reason {code}"


@dataclass
class RunData:
    """One run's rows, as arrays indexed by agent column (``ids[i]`` is column i's account id)."""

    run: Run
    ids: np.ndarray  # [A] agent ids, ascending
    parent: np.ndarray  # [A] parent id, -1 for a random newcomer
    born: np.ndarray  # [A] born_episode
    died: np.ndarray  # [A] died_episode, -1 while alive at the end
    skill: list[str | None]  # [A] the agent's skill text at birth
    transfers: np.ndarray  # market.ledger.TRANSFER_DTYPE, in order
    episodes: list[dict]
    config: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    agents_graph: nx.DiGraph = field(default_factory=nx.DiGraph)  # skills.lineage.agent_graph: parent -> child

    @property
    def n_episodes(self) -> int:
        last = max((e["episode"] for e in self.episodes), default=-1)
        if self.transfers.size:
            last = max(last, int(self.transfers["episode"].max()))
        return max(self.run.episodes, last + 1, 1)

    def column(self, agent_ids) -> np.ndarray:
        """Columns of account ids (-1 for the house or an id with no agent row)."""
        agent_ids = np.asarray(agent_ids, dtype=np.int64)
        if self.ids.size == 0:
            return np.full(agent_ids.shape, -1, dtype=np.int64)
        col = np.searchsorted(self.ids, agent_ids)
        col = np.minimum(col, self.ids.size - 1)
        return np.where(self.ids[col] == agent_ids, col, -1)

    def roots(self) -> np.ndarray:
        """[A] the id of each agent's lineage root (the random newcomer its family descends from)."""
        root = {}
        for a, p in zip(self.ids.tolist(), self.parent.tolist()):  # parents are older: ids ascend
            root[a] = root.get(p, a) if p > 0 else a
        return np.array([root[a] for a in self.ids.tolist()], dtype=np.int64)

    @property
    def agents(self):
        """The agents as one table (a pandas DataFrame indexed by ``agent_id``): ``parent`` (-1: a random
        newcomer), ``born``, ``died`` (-1: alive at the end), ``skill`` and ``final_balance`` (micro-credits)."""
        import pandas as pd

        return pd.DataFrame({"parent": self.parent, "born": self.born, "died": self.died, "skill": self.skill,
                             "final_balance": self.final_balance()}, index=pd.Index(self.ids, name="agent_id"))

    def final_balance(self) -> np.ndarray:
        """[A] every agent's balance after the last transfer (dead agents end at zero)."""
        return self._net(self.transfers)

    def profit(self) -> np.ndarray:
        """[A] earned money: everything received minus everything paid, grants and write-offs left out.

        Under conserved payments this is the value an agent added downstream
        (Baum): what its buyers paid it plus the world's reward, less its bids,
        rent and fees.
        """
        return self._net(self.transfers[~np.isin(self.transfers["reason"], UNEARNED)])

    def _net(self, t: np.ndarray) -> np.ndarray:
        """[A] received minus paid over the transfers ``t`` (the house and unknown ids left out)."""
        out = np.zeros(self.ids.size, dtype=np.int64)
        for side, sign in (("src", -1), ("dst", 1)):
            col = self.column(t[side])
            keep = col >= 0
            np.add.at(out, col[keep], sign * t["amount"][keep])
        return out


def load_run(engine, run_id: str) -> RunData:
    """Every row of one run that the plots use, read in one transaction (a run being written reads as it was
    at its last committed round); KeyError if the database has no such run. ``engine``: an engine, or a
    connection already in a :func:`market.store.snapshot`."""
    with snapshot(engine) if isinstance(engine, Engine) else nullcontext(engine) as conn:
        return _load(conn, run_id)


def _load(conn, run_id: str) -> RunData:
    """The rows, each checked for the type the plots need: a database may come from anyone, and a bad
    value is a StoreError naming its table and column (one line, exit 2), not a traceback."""
    try:
        with Session(conn) as s:
            run = s.get(Run, run_id)
            if run is None:
                raise KeyError(f"run {run_id}: not found")
            agents = s.exec(select(Agent).where(Agent.run_id == run_id).order_by(Agent.agent_id)).all()
            s.expunge(run)
    except (ValueError, TypeError, OverflowError) as err:  # a date or number SQLAlchemy cannot convert
        raise StoreError(f"run {run_id}: run or agent row: {' '.join(str(err).split())[:120]}") from None
    for key in ("seed", "episodes"):
        checked_ints([(getattr(run, key),)], (key,), "run")
    for key in ("id", "scenario", "status"):
        if not isinstance(getattr(run, key), str):
            raise StoreError(f"run.{key}: {getattr(run, key)!r:.60} is not text")
    if not isinstance(run.started_at, datetime):
        raise StoreError(f"run.started_at: {run.started_at!r:.60} is not a date and time")
    if not all(isinstance(a.skill, str | None) for a in agents):
        raise StoreError("agent.skill: not text")
    columns = ("agent_id", "parent_id", "born_episode", "died_episode")
    rows = [(a.agent_id, -1 if a.parent_id is None else a.parent_id, a.born_episode,
             -1 if a.died_episode is None else a.died_episode) for a in agents]
    ids, parent, born, died = checked_ints(rows, columns, "agent").T
    config, summary = (stored_json(getattr(run, key), f"run.{key}") or {} for key in ("config", "summary"))
    for key, value in (("config", config), ("summary", summary)):
        if not isinstance(value, dict):
            raise StoreError(f"run.{key}: not a JSON object")
    return RunData(
        run=run, ids=ids.copy(), parent=parent.copy(), born=born.copy(), died=died.copy(),
        skill=[a.skill for a in agents],
        transfers=load_transfers(conn, run_id),
        episodes=load_episodes(conn, run_id),
        config=config,
        summary=summary,
        agents_graph=agent_graph(conn, run_id),
    )


def open_run(url: str, run_id: str) -> RunData:
    """A run read back from its results database, for notebooks and scripts: ``.summary``, ``.config``,
    ``.transfers`` (the whole ledger), the agents (``.agents``, a table; ``.ids``, ``.parent``, ``.born``,
    ``.died``, ``.skill`` as arrays),
    ``.episodes`` and ``.final_balance()`` (replayed from the ledger).

    Args:
        url: The results database's SQLAlchemy URL (``sqlite:///runs/catallax.db``).
        run_id: The run's id (``summary["run_id"]``, or ``catallax runs``).

    Returns:
        The run, read whole into memory (the database is closed again).

    Raises:
        StoreError: The database cannot be opened, or holds no such run.
    """
    engine = make_engine(url)
    try:
        return load_run(engine, run_id)
    finally:
        engine.dispose()


@dataclass
class Timeline:
    """Balances and population per time bin, replayed from the transfer log."""

    episode: np.ndarray  # [T] episodes completed at the end of each bin (the x axis)
    wealth: np.ndarray  # [T, A] float credits; NaN where the agent is not alive
    house: np.ndarray  # [T] the house's balance, credits
    alive: np.ndarray  # [T, A] bool
    births: np.ndarray  # [T] agents born in the bin (the initial population is not counted)
    deaths: np.ndarray  # [T] agents that died in the bin

    @property
    def population(self) -> np.ndarray:
        return self.alive.sum(1)

    def gini(self) -> np.ndarray:
        """[T] Gini of the live agents' wealth (market.gini), per bin."""
        return np.array([gini(w[a]) for w, a in zip(np.nan_to_num(self.wealth), self.alive)])

    def quantiles(self, qs=(0.1, 0.25, 0.5, 0.75, 0.9)) -> np.ndarray:
        """[len(qs), T] wealth quantiles over the live agents (NaN for an empty population)."""
        out = np.full((len(qs), self.episode.size), np.nan)
        for t in range(self.episode.size):
            w = self.wealth[t, self.alive[t]]
            if w.size:
                out[:, t] = np.quantile(w, qs)
        return out


def timeline(data: RunData, points: int = 400) -> Timeline:
    """Replay the transfer log into per-bin balances: a scatter-add per bin, then a cumulative sum."""
    E = data.n_episodes
    T = min(points, E)
    bin_of = lambda episode: np.clip(np.asarray(episode, dtype=np.int64) * T // E, 0, T - 1)  # noqa: E731
    last = (np.arange(1, T + 1) * E + T - 1) // T - 1  # last episode of each bin
    A = data.ids.size
    delta = np.zeros((T, A + 1), dtype=np.int64)  # column A: the house (and any id without an agent row)
    t = data.transfers
    b = bin_of(t["episode"])
    for side, sign in (("src", -1), ("dst", 1)):
        col = data.column(t[side])
        np.add.at(delta, (b, np.where(col >= 0, col, A)), sign * t["amount"])
    balance = np.cumsum(delta, axis=0)
    # an agent born with born_episode = k came after episode k-1 ended; one that died at d is gone after d
    alive = (data.born[None, :] <= last[:, None] + 1) & ((data.died[None, :] < 0) | (data.died[None, :] > last[:, None]))
    wealth = np.where(alive, balance[:, :A] * CREDITS, np.nan)
    births = np.bincount(bin_of(data.born[data.born > 0] - 1), minlength=T)
    deaths = np.bincount(bin_of(data.died[data.died >= 0]), minlength=T)
    return Timeline(last + 1, wealth, balance[:, A] * CREDITS, alive, births, deaths)


def role_of(skill: str | None) -> str:
    """A default role for an agent: what its rule does (the action after ``->``), else its skill's first word.

    Scenarios whose agents carry explicit roles pass their own mapping to the plots instead.
    """
    if not skill:
        return "agent"
    if "->" in skill:
        return skill.rsplit("->", 1)[1].strip()[:24]
    return skill.split()[0].rstrip(":,;")[:24]  # e.g. "recall bid 0.01: recall-knn" -> recall


def rule_operator(parent: str | None, child: str | None) -> str:
    """How a child's rule differs from its parent's: ``copy``, or for ``condition -> action`` rules a new
    ``condition``, a new ``action`` or ``both``; other skill texts that differ are an ``edit``."""
    if parent == child:
        return "copy"
    if parent and child and "->" in parent and "->" in child:
        pc, pa = (x.strip() for x in parent.rsplit("->", 1))
        cc, ca = (x.strip() for x in child.rsplit("->", 1))
        return {(True, False): "action", (False, True): "condition"}.get((pc == cc, pa == ca), "both")
    return "edit"


def flows(data: RunData, roles: dict[int, str] | None = None, top: int = 10) -> tuple[list[str], np.ndarray, dict]:
    """Money moved between groups of accounts: (group names, [G, G] credits payer x payee, credits by reason).

    Groups are ``roles`` (agent id -> role) or :func:`role_of` the agent's skill,
    plus ``house``; beyond the ``top`` groups by volume the rest are ``other``.
    """
    role = [(roles or {}).get(int(a)) or role_of(s) for a, s in zip(data.ids.tolist(), data.skill)]
    label, code = np.unique(np.array([*role, "house", "other"], dtype=object), return_inverse=True)  # per account
    A, t = data.ids.size, data.transfers

    def group_of(ids: np.ndarray) -> np.ndarray:  # account ids -> label index (the house, unknown ids: "other")
        col = data.column(ids)
        return code[np.where(col >= 0, col, np.where(ids == HOUSE_ID, A, A + 1))]

    src, dst = group_of(t["src"]), group_of(t["dst"])
    volume, seen = np.zeros(label.size, dtype=np.int64), np.zeros(label.size, dtype=bool)
    for side in (src, dst):
        np.add.at(volume, side, t["amount"])
        seen[side] = True
    names = [g for g, v in sorted(zip(label[seen].tolist(), volume[seen].tolist()), key=lambda gv: (-gv[1], gv[0]))
             if g not in ("house", "other")]
    other = len(names) > top or "other" in label[seen]
    groups = ["house"] + sorted(names[:top]) + (["other"] if other else [])
    index = {g: i for i, g in enumerate(groups)}
    fold = np.array([index.get(g, len(groups) - 1) for g in label.tolist()])  # beyond the top: "other", the last
    matrix = np.zeros((len(groups), len(groups)))
    np.add.at(matrix, (fold[src], fold[dst]), t["amount"] * CREDITS)
    by_reason = {reason_name(int(r)): float(t["amount"][t["reason"] == r].sum() * CREDITS)
                 for r in np.unique(t["reason"])}
    return groups, matrix, by_reason
