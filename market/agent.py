"""The Mesa face of a trader: a thin view over its row of the population arrays, made only when asked for.

Mesa users get ``model.agents``, ``select``, ``agg`` and DataCollector agent
reporters as usual; the engine itself never loops over these objects, so it
does not make them either. A model with a ``population`` mixes in
:class:`LazyTraders`: the facades of the live rows are built the first time
someone reads ``model.agents`` (or ``agents_by_type``) and brought up to date
on each later read, so an economy nobody inspects per agent holds none (at a
million agents, facades built eagerly would dominate the build time and memory).
"""

from __future__ import annotations

import mesa
import numpy as np

from market.money import to_credits


class Trader(mesa.Agent):
    def __init__(self, model, row: int, unique_id: int):
        super().__init__(model)
        self.unique_id = unique_id  # the model numbers its agents itself, so a resumed run keeps their ids
        self.row = row

    @property
    def wealth(self) -> int:
        """Balance in micro-credits."""
        return int(self.model.population.wealth[self.row])

    @property
    def credits(self) -> float:
        return to_credits(self.wealth)

    @property
    def bid(self) -> int:
        return int(self.model.population.bid[self.row])

    @property
    def parent_id(self) -> int:
        return int(self.model.population.parent[self.row])

    @property
    def born_episode(self) -> int:
        return int(self.model.population.born[self.row])

    @property
    def tokens(self) -> int:
        """LLM tokens this agent's calls have used (market.token_price charges them)."""
        return int(self.model.population.tokens[self.row])

    def __repr__(self) -> str:
        return f"Trader(id={self.unique_id}, row={self.row}, wealth={self.credits:.6f})"


class LazyTraders:
    """Mixin for a ``mesa.Model`` whose agents are the live rows of ``self.population`` (the house excluded).

    Reading ``agents`` or ``agents_by_type`` first syncs the facades with the arrays: one numpy comparison
    of the live rows' account ids when nothing changed; otherwise the dead leave Mesa's sets and each
    newborn gets a ``Trader``, in birth order (account ids count up), as facades made at birth would be.
    An account keeps its row for life, so its id alone names its facade.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._facades: dict[int, Trader] = {}  # account id -> facade
        self._facade_ids = np.empty(0, dtype=np.int64)  # the live rows' ids at the last sync, in row order

    @property
    def agents(self) -> mesa.agent.AgentSet:
        self._sync_traders()
        return self._all_agents

    @property
    def agents_by_type(self) -> dict[type[mesa.Agent], mesa.agent.AgentSet]:
        self._sync_traders()
        return self._agents_by_type

    def _sync_traders(self) -> None:
        pop = self.population
        rows = np.flatnonzero(pop.traders)
        ids = pop.ids[rows]
        if np.array_equal(ids, self._facade_ids):
            return
        for gone in self._facade_ids[~np.isin(self._facade_ids, ids, assume_unique=True)].tolist():
            self._facades.pop(gone).remove()
        new = np.flatnonzero(~np.isin(ids, self._facade_ids, assume_unique=True))
        for i in new[np.argsort(ids[new], kind="stable")].tolist():
            self._facades[int(ids[i])] = Trader(self, int(rows[i]), int(ids[i]))
        self._facade_ids = ids

    def _drop_traders(self) -> None:
        """Forget every facade (a restored checkpoint may hold other accounts in other rows)."""
        for trader in self._facades.values():
            trader.remove()
        self._facades, self._facade_ids = {}, np.empty(0, dtype=np.int64)
