"""Errands: fetch three items from the market's stalls in any order, with a purse that buys exactly three.

A problem lists ``items`` = 3 of the 10 stalls' goods; every good costs one coin and the purse holds as many coins
as the list has items. One LLM role, the ``shopper``, reads the stalls, the goods still to buy and the coins left,
and writes ``buy <good>`` once per step; a good already in the basket is refused (a forfeit: the step is spent,
nothing bought). The episode ends when the list is fetched (reward 1) or the purse is empty, or at the horizon (5
steps: two to spare). The fetched goods are order-free sub-goals: ``subgoals`` is the basket, so every order of the
same fetches meets in one canonical state. A good off the list is the move that leaves the success-reachable region:
its coin is gone, and the list can no longer be bought. (SmolLM2-135M shown the list and the basket buys a good the
basket holds again and again; shown only what is still to buy it nearly always succeeds; the stalls beside it draw
it to a good off the list often enough that a group of rollouts mixes successes and failures, the ones this world is
for.)

A world of the text-world API's public hooks alone, and the smallest one the ``diamond_sd`` objective runs on: it
defines no ``correct`` (the objective learns from the agents' own successes, not from an oracle).
"""

from __future__ import annotations

import re

from scenarios.text import Role, TextWorld

GOODS = ("apples", "bread", "candles", "eggs", "honey", "ink", "milk", "rope", "soap", "tea")
"""What the stalls sell, one coin each."""
ITEMS = 3
"""Goods on a problem's list, and coins in its purse."""


class Errands(TextWorld):
    roles = (Role("shopper", "Buy the goods on the list that are not in the basket yet, one per reply. "
                  "Reply only: buy <good>.", max_tokens=8, wake="Is there a good on the list to buy?"),)
    pool = {"shopper": ["example: Still to buy: eggs, ink, tea. Coins: 3. => buy eggs",
                        "example: Still to buy: bread, soap. Coins: 2. => buy soap",
                        "Never buy a good that is not on the list: every coin is needed."]}
    stages = ("Goods on the list wait to be bought.",)
    horizon = 5

    def problem(self, rng):
        return tuple(sorted(GOODS[int(i)] for i in rng.choice(len(GOODS), ITEMS, replace=False)))

    def start(self, problem):
        return {"problem": problem, "basket": [], "coins": ITEMS}

    def read(self, state, role):
        wanted = ", ".join(g for g in state["problem"] if g not in state["basket"])
        return f"Stalls: {', '.join(GOODS)}. Still to buy: {wanted}. Coins: {state['coins']}."

    def act(self, state, role, text):
        good = re.match(r"\s*buy\W+(\w+)", text.lower())
        if good is None or good[1] not in GOODS:
            return "expected 'buy <good>' with a good the stalls sell"
        if good[1] in state["basket"]:
            return f"illegal: {good[1]} is in the basket already"
        state["basket"].append(good[1])
        state["coins"] -= 1
        return None

    def done(self, state):
        return state["coins"] == 0 or self.reward(state) > 0

    def reward(self, state):
        return float(set(state["problem"]) <= set(state["basket"]))

    def subgoals(self, state):
        return frozenset(state["basket"])
