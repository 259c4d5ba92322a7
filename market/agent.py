"""The Mesa face of a trader: a thin view over its row of the population arrays.

Mesa users get ``model.agents``, ``select``, ``agg`` and DataCollector agent
reporters as usual; the engine itself never loops over these objects.
"""

from __future__ import annotations

import mesa

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

    def __repr__(self) -> str:
        return f"Trader(id={self.unique_id}, row={self.row}, wealth={self.credits:.6f})"
