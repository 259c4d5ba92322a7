"""Plan, then render: a planner turns a request into a 4-field plan, a renderer draws the plan as a text grid.

A problem is a 4 x 4 grid of one ``fill`` character with one ``mark`` at (``row``, ``col``), asked for in words
("one X in row two, column three, on a field of dots"). The ``planner`` reads the request and writes ``plan: row=2
col=3 mark=X fill=.``; the ``renderer`` reads only the plan and writes ``grid: ..../..X./..../....`` (rows
separated by ``/``). The rendered grid is scored field by field against the target (the fill is its commonest
character, the mark its one other cell): reward the share of the 4 fields right, solved when all are.

The renderer never sees the request, so a wrong field is either the plan's or the render's: what the ``dars``
credit estimator splits. Each step says the plan it wrote (``plan``, its canonical text; "" for a step that wrote
none) and, for a planner's step, the plan's prefix-gated score (``prefix``: the share of its fields right before the
first wrong one, in the order row, col, mark, fill; 0 for a plan it could not write; -1 for a renderer's step).
"""

from __future__ import annotations

import re

from scenarios.text import Role, TextWorld

FIELDS = ("row", "col", "mark", "fill")
SIZE = 4
NUMBERS = ("one", "two", "three", "four")
MARKS = ("X", "O", "#", "@")
FILLS = {".": "dots", "-": "dashes", "+": "plus signs", "=": "equals signs"}
PLAN = re.compile(r"row=([1-4])\s+col=([1-4])\s+mark=(\S)\s+fill=(\S)")


def draw(plan: dict) -> str:
    """The grid a plan asks for, rows joined by ``/``."""
    rows = [[plan["fill"]] * SIZE for _ in range(SIZE)]
    rows[int(plan["row"]) - 1][int(plan["col"]) - 1] = plan["mark"]
    return "/".join("".join(r) for r in rows)


def fields(grid: str) -> dict:
    """A rendered grid read back as fields: the fill its commonest character, the mark its one other cell (no row,
    col or mark where it has none or several)."""
    cells = grid.replace("/", "")
    fill = max(dict.fromkeys(cells), key=cells.count)
    odd = [i for i, c in enumerate(cells) if c != fill]
    if len(odd) != 1:
        return {"fill": fill}
    return {"row": str(odd[0] // SIZE + 1), "col": str(odd[0] % SIZE + 1), "mark": cells[odd[0]], "fill": fill}


def prefix(plan: dict, target: dict) -> float:
    """The share of the plan's fields right before its first wrong one (row, col, mark, fill in order)."""
    k = 0
    while k < len(FIELDS) and plan[FIELDS[k]] == target[FIELDS[k]]:
        k += 1
    return k / len(FIELDS)


def canonical(plan: dict) -> str:
    return "plan: " + " ".join(f"{f}={plan[f]}" for f in FIELDS)


class PlanGrid(TextWorld):
    roles = (Role("planner", "Turn the request into a plan. Reply only: plan: row=<1-4> col=<1-4> mark=<c> fill=<c>.",
                  max_tokens=20, wake="Is there a request to plan?"),
             Role("renderer", "Draw the plan as 4 rows of 4 characters. Reply only: grid: <row>/<row>/<row>/<row>.",
                  max_tokens=20, wake="Is there a plan to draw?"))
    pool = {"planner": ["example: One X in row two, column three, on a field of dots. => "
                        "plan: row=2 col=3 mark=X fill=.",
                        "example: One # in row four, column one, on a field of dashes. => "
                        "plan: row=4 col=1 mark=# fill=-",
                        "example: One O in row one, column four, on a field of plus signs. => "
                        "plan: row=1 col=4 mark=O fill=+"],
            "renderer": ["example: plan: row=2 col=3 mark=X fill=. => grid: ..../..X./..../....",
                         "example: plan: row=4 col=1 mark=# fill=- => grid: ----/----/----/#---",
                         "example: plan: row=1 col=4 mark=O fill=+ => grid: +++O/++++/++++/++++"]}
    stages = ("A request waits for a plan.", "A plan waits to be drawn.")
    horizon = 4
    credit_signals = ("plan", "prefix")

    def problem(self, rng):
        return {"row": str(rng.integers(1, SIZE + 1)), "col": str(rng.integers(1, SIZE + 1)),
                "mark": MARKS[rng.integers(len(MARKS))], "fill": list(FILLS)[rng.integers(len(FILLS))]}

    def start(self, problem):
        return {"problem": problem, "plan": None, "grid": None}

    def request(self, p) -> str:
        return (f"One {p['mark']} in row {NUMBERS[int(p['row']) - 1]}, column {NUMBERS[int(p['col']) - 1]}, "
                f"on a field of {FILLS[p['fill']]}.")

    def read(self, state, role):
        return self.request(state["problem"]) if role == "planner" else canonical(state["plan"])

    def may_act(self, state, role):
        return (state["plan"] is None) if role == "planner" else (state["plan"] is not None and state["grid"] is None)

    def stage(self, state):
        return int(state["plan"] is not None)

    def act(self, state, role, text):
        head, _, rest = text.partition(":")
        if role == "planner":
            found = PLAN.search(rest) if head.strip().lower() == "plan" else None
            if found is None:
                return "expected 'plan: row=<1-4> col=<1-4> mark=<c> fill=<c>'"
            state["plan"] = dict(zip(FIELDS, found.groups()))
            return None
        grid = rest.strip().rstrip(".") if head.strip().lower() == "grid" else ""
        if [len(r) for r in grid.split("/")] != [SIZE] * SIZE:
            return f"expected 'grid: ' and {SIZE} rows of {SIZE} characters joined by '/'"
        state["grid"] = grid
        return None

    def done(self, state):
        return state["grid"] is not None

    def scores(self, state) -> list[bool]:
        """Each field of the rendered grid right or not."""
        got = fields(state["grid"])
        return [got.get(f) == state["problem"][f] for f in FIELDS]

    def reward(self, state):
        return sum(self.scores(state)) / len(FIELDS) if state["grid"] is not None else 0.0

    def solved(self, state):
        return state["grid"] is not None and all(self.scores(state))

    def correct(self, state, role):
        if role == "planner":
            return canonical(state["problem"])
        return f"grid: {draw(state['plan'])}" if role == "renderer" else draw(state["problem"])

    def step_signals(self, before, after, role):
        if before["plan"] is not None:  # only the renderer acts once there is a plan, only the planner before
            return {"plan": "", "prefix": -1.0}
        if after["plan"] is None:  # a plan it could not write (a forfeit): no field right
            return {"plan": "", "prefix": 0.0}
        return {"plan": canonical(after["plan"]), "prefix": prefix(after["plan"], after["problem"])}
