"""Scenario ``procurement``: LLM agents haggle for a client against a scripted seller with a private floor price.

An economic-coordination world written on the text-world API (scenarios/text/world.py), in the shape a
user writes one. Each problem: a lot of goods, a list price (the client's budget) and the seller's
private floor (50-80% of it). The seller opens at the list price; every buyer offer at or above the
floor is a deal at that offer, and one below it gets a counter-offer (the seller comes down a third of
the gap, never below its floor). The state is the conversation so far; the agents' actions are its next
lines, parsed by the world. Reward: the share of the possible surplus won, (budget - price) / (budget -
floor), in [0, 1] (no deal within the horizon: 0).

The roles, on one frozen SmolLM2-135M by default:

* ``negotiator`` (LLM, 10 tokens): reads the talk so far, writes the next offer ("I offer $<n>."); an
  offer above the budget, or not above the buyer's last one, is illegal;
* ``closer`` (LLM, 10 tokens): accepts the seller's standing counter-offer ("I accept $<n>."); may act
  only once the seller has countered;
* ``splitter`` (a tool, no LLM): offers half the seller's price first, then halfway between the
  buyer's last offer and the seller's price.

Paired worlds (``pair``, ``check``: the ``paired`` credit signal of the ``pacpo`` estimator): a problem's pair is
the same lot with the seller's floor moved (drawn again from the same band, at least 5% of the budget away), and
the outcome checker pays a state's standing offer (the deal's price once there is one) as a deal would be paid
against either floor: the surplus share if it reaches that floor, else 0.

The oracle (``correct``) knows the floor: the best offer is the floor itself. The complete agent (the
framework's baseline) is one negotiator holding the whole pool (``WRONG`` included) with the summed token
budget, playing every turn (the first role that may act in every state); the curated one holds the pool
without ``WRONG``. The market must route between hagglers, closers and an exact splitter.
"""

from __future__ import annotations

import re

from scenarios.text import Role, TextWorld

ITEMS = ("office chairs", "laptops", "printer toner", "desk lamps", "monitors", "filing cabinets", "headsets")
STAGES = ("No offer has been made yet.", "The seller has made a counter-offer.")
WAKE = "Act?"
PRICE = re.compile(r"\$\s*(\d{1,7})")
STOP = ("\n", ".")
"""A reply is one sentence: SmolLM2 otherwise goes on to write the seller's answer too, past its token cap."""


def split(state) -> str:
    """The splitter tool: half the seller's price first, then halfway from the buyer's last offer."""
    low = state["offer"] if state["offer"] is not None else 0
    return f"I offer ${(low + state['ask']) // 2}."


WRONG = ("example: Budget $200. Seller: $200 for 4 monitors. => I offer $200.",  # overpays: no surplus
         "example: Budget $90. Seller: $90 for 2 headsets. => I accept.")  # no offer: refused
"""Worked examples wrong on purpose: the market should route around their holders."""


def floor(budget: int, rng) -> int:
    """The seller's private floor: 50-80% of the budget."""
    return int(budget * rng.uniform(0.5, 0.8))


def surplus(problem, price: int) -> float:
    """The share of the possible surplus a deal at ``price`` wins, in [0, 1]."""
    return max(0.0, min(1.0, (problem["budget"] - price) / max(problem["budget"] - problem["floor"], 1)))


def wake_examples() -> list[str]:
    return [f"example: {s} {WAKE} => {a}" for s in STAGES for a in ("yes", "no")]


class Procurement(TextWorld):
    roles = (
        Role("negotiator", "You buy for a client and want the lowest price. Make the next offer, below the "
             "seller's price. Reply only: I offer $<number>.", wake=WAKE, max_tokens=10, stop=STOP),
        Role("closer", "You buy for a client. Accept the seller's last price. Reply only: I accept $<price>.",
             wake=WAKE, max_tokens=10, stop=STOP),
        Role("splitter", "A tool: offers halfway between the buyer's last offer and the seller's price.", tool=split),
    )
    pool = {
        "negotiator": [
            (0.7, ["example: Budget $200. Seller: $200 for 4 monitors. => I offer $110.",
                   "example: Budget $150. Seller: $150 for 3 desk lamps. Buyer: I offer $70. Seller: Too low. "
                   "I can do $123. => I offer $96."]),
            (0.3, WRONG),
            (0.3, ["Open at about half the seller's price.", "Raise each offer a little; never pass the budget."]),
            (0.3, wake_examples()),
        ],
        "closer": [
            (0.5, ["example: Budget $150. Seller: $150 for 3 desk lamps. Buyer: I offer $70. Seller: Too low. "
                   "I can do $104. => I accept $104."]),
            (0.3, ["Accept only the price the seller named last."]),
            (0.3, wake_examples()),
        ],
    }
    stages = STAGES
    horizon = 6
    wrong = WRONG

    def problem(self, rng):
        budget = int(rng.integers(6, 40)) * 10
        return {"item": f"{int(rng.integers(2, 9))} {ITEMS[int(rng.integers(len(ITEMS)))]}", "budget": budget,
                "floor": floor(budget, rng)}

    def pair(self, problem, rng):
        moved = floor(problem["budget"], rng)
        while abs(moved - problem["floor"]) < problem["budget"] // 20:
            moved = floor(problem["budget"], rng)
        return {**problem, "floor": moved}

    def check(self, state, problem):
        standing = state["price"] if state["price"] is not None else state["offer"]
        if standing is None or standing < problem["floor"]:
            return 0.0
        return surplus(problem, standing)

    def start(self, problem):
        return {"problem": problem, "ask": problem["budget"], "offer": None, "price": None,
                "history": [f"Seller: ${problem['budget']} for {problem['item']}."]}

    def read(self, state, role):
        return f"Budget ${state['problem']['budget']}. " + " ".join(state["history"])

    def may_act(self, state, role):
        return state["price"] is None and (role != "closer" or state["offer"] is not None)

    def stage(self, state):
        return int(state["offer"] is not None)

    def act(self, state, role, text):
        found = PRICE.search(text)
        if role == "closer":
            if "accept" not in text.lower() or (found and int(found.group(1)) != state["ask"]):
                return "no acceptance of the seller's price"
            state["history"].append(f"Buyer: I accept ${state['ask']}.")
            state["price"] = state["ask"]
            return None
        if found is None:
            return "no offer in the reply"
        offer, p = int(found.group(1)), state["problem"]
        if offer > p["budget"]:
            return "illegal: the offer is above the client's budget"
        if state["offer"] is not None and offer <= state["offer"]:
            return "illegal: an offer must raise the buyer's last one"
        state["history"].append(f"Buyer: I offer ${offer}.")
        state["offer"] = offer
        if offer >= min(p["floor"], state["ask"]):
            state["price"] = min(offer, state["ask"])
            state["history"].append(f"Seller: Deal at ${state['price']}.")
        else:
            state["ask"] = max(p["floor"], state["ask"] - (state["ask"] - offer) // 3)
            state["history"].append(f"Seller: Too low. I can do ${state['ask']}.")
        return None

    def done(self, state):
        return state["price"] is not None

    def reward(self, state):
        return surplus(state["problem"], state["price"])

    def solved(self, state):
        return state["price"] is not None

    def correct(self, state, role):
        if role == "closer":
            return f"I accept ${state['ask']}."
        floor = state["problem"]["floor"]
        return f"A deal at ${floor}." if role is None else f"I offer ${floor}."
