"""Order desk: a planted-line world for skill evolution, written on the public text-world API as a user would.

A customer message names an order; a ``reader`` (SmolLM2) copies its order number out ("order <n>"), and a
``router`` tool files a ticket under the number read. Reward 1 when the ticket is filed under the message's
own order number.

The reader's pool is every newcomer's: two correct worked examples and, between them, one planted wrong
one (``WRONG``: it reads an order number one too high). Measured on SmolLM2-135M (greedy, 24 messages):
the two correct examples alone read every number right, with no example the model reads none (it answers
the customer instead), and ``WRONG`` between them costs about a third of the messages, a different third
for different numbers. So the correct lines are worth everything and the planted one is a partial,
problem-dependent harm: what an edit pass that can be trusted must tell apart (the issue's triage world,
where group-relative credit pruned the correct lines and kept the wrong one).
"""

from __future__ import annotations

import re

from scenarios.text import Role, TextWorld

NAMES = ("Ann", "Bob", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ines", "Omar")
ITEMS = ("kettle", "lamp", "printer", "chair", "phone", "desk", "charger", "blender")
ISSUES = ("arrived broken", "never arrived", "stopped working", "was charged twice")
ORDER = re.compile(r"order\s*#?\s*(\d{3,6})", re.IGNORECASE)

CORRECT = ("example: Ivy: my toaster arrived broken, order 3307. => order 3307",
           "example: Jon: my mug never arrived, order 8152. => order 8152")
WRONG = "example: Kim: my fan stopped working, order 4410. => order 4411"
"""Planted: the order number read one too high."""


def file(state) -> str:
    """The router tool: files the ticket under the number the reader wrote."""
    return f"Filed under order {state['read']}."


class OrderDesk(TextWorld):
    roles = (Role("reader", "Find the order number in the customer message. Reply only: order <number>.",
                  wake="Is there a message to read?", max_tokens=8),
             Role("router", "A tool: files the ticket under the order number read.", tool=file))
    pool = {"reader": [CORRECT[0], WRONG, CORRECT[1]]}
    stages = ("A customer message waits to be read.", "An order number waits to be filed.")
    horizon = 4
    wrong = (WRONG,)

    def problem(self, rng):
        return {"name": NAMES[int(rng.integers(len(NAMES)))], "order": int(rng.integers(1000, 10000)),
                "item": ITEMS[int(rng.integers(len(ITEMS)))], "issue": ISSUES[int(rng.integers(len(ISSUES)))]}

    def start(self, problem):
        return {"problem": problem, "read": None, "filed": None}

    def read(self, state, role):
        p = state["problem"]
        return f"{p['name']}: my {p['item']} {p['issue']}, order {p['order']}." if role == "reader" \
            else f"order {state['read']}"

    def may_act(self, state, role):
        return (state["read"] is None) == (role == "reader")

    def stage(self, state):
        return int(state["read"] is not None)

    def act(self, state, role, text):
        found = ORDER.search(text)
        if found is None:
            return "no order number in the reply"
        if role == "reader":
            state["read"] = int(found.group(1))
        else:
            state["filed"] = int(found.group(1))
        return None

    def done(self, state):
        return state["filed"] is not None

    def reward(self, state):
        return float(state["filed"] == state["problem"]["order"])

    def correct(self, state, role):
        n = state["problem"]["order"]
        return f"order {n}" if role == "reader" else f"Filed under order {state['read']}." if role else f"order {n} filed"
