"""Long lookup with compaction: a chain of more hops than the context holds, so the agents must choose what to keep.

The facts and the frozen retriever are multihop's (scenarios/multihop.py: 1,000 "<person> works with <person>." and
"<person> lives in <city>." lines). A problem asks "Where does the colleague of the colleague of the colleague of X
live?" (``hops`` = 4 facts: three colleague links, then the last one's city). Each ``search: <words>`` of the
``searcher`` is a numbered turn whose three best facts enter the context; the context holds ``window`` = 3 turns.
When it is full the searcher may not search until the ``compactor`` writes ``keep: 1, 3``: it cites 2 to
min(5, window - 1) of the context's turns, and only those turns' facts stay in the prompts of later turns (a
dropped turn shows its query, not its facts: the query log says how far the chain got, the kept facts name whom to
search next). The ``answerer`` writes ``answer: <city>`` at any turn; reward 1 for the right city. Four
hops in a context of three turns need at least one compaction, and dropping the turn that names the chain's latest
person strands the search; a query that finds nothing useful (a distractor) fills a slot all the same.

A world of its own rather than a multihop option: the compactor role, the turn-numbered context and the rule
that a full context blocks the searcher would be dead weight in every multihop run.

For the credit estimators each step gives the ids its search retrieved (``retrieved``; () for no search) and
whether a compaction cited it (``cited``: 1 kept by some compaction, 0 dropped, -1 no search or a turn after the
last compaction). A step's ``cited`` is decided by a later step, so the world writes :meth:`episode_signals`,
which sees the whole episode, rather than ``step_signals``.
"""

from __future__ import annotations

import re

from pydantic import Field
from pydantic.dataclasses import dataclass

from scenarios.text.scenario import TextWorldConfig
from scenarios.text import Role, TextWorld
from market.strict import STRICT
from scenarios.multihop import CITIES, CITY, COLLEAGUE, FACTS, PEOPLE, SHOWN, search

CITES = (2, 5)
"""A compaction cites this many turns (at most the window less one: it must free a slot)."""


@dataclass(config=STRICT)
class Config(TextWorldConfig):
    hops: int = Field(4, ge=2, le=8)
    """Facts in a problem's chain: hops - 1 colleague links, then the last colleague's city."""
    window: int = Field(3, ge=CITES[0] + 1)
    """Search turns whose facts the context holds; a full context must be compacted before the next search."""


class LongLookup(TextWorld):
    roles = (Role("searcher", "Follow the chain one fact at a time. Reply only: search: <words>.", max_tokens=16,
                  wake="Is there a fact to search for?"),
             Role("compactor", "The context is full. Keep the turns the next search or the answer needs. "
                  "Reply only: keep: <turn numbers>.", max_tokens=8, wake="Is the context full?"),
             Role("answerer", "Answer from the facts in the context. Reply only: answer: <city>.", max_tokens=8,
                  wake="Are there facts to answer from?"))
    pool = {"searcher": ["example: Where does the colleague of the colleague of Ada Moss live? Context: (empty) => "
                         "search: Ada Moss works with",
                         "example: [1] search: Ada Moss works with -> Ada Moss works with Lev Pike. => "
                         "search: Lev Pike works with"],
            "compactor": ["example: [1] search: Ada Moss works with -> Ada Moss works with Lev Pike. [2] search: "
                          "Kira -> Kira Vale lives in Juniper. [3] search: Lev Pike works with -> Lev Pike works with "
                          "Rosa Reed. => keep: 1, 3"],
            "answerer": ["example: [4] search: Rosa Reed lives in -> Rosa Reed lives in Quimby. => answer: Quimby"]}
    stages = ("A question waits for a search.", "The context is full: turns wait to be kept.",
              "Facts wait to be read for an answer.")
    horizon = 10
    credit_signals = ("cited", "retrieved")
    edit_roles = ("compactor",)

    def settings(self) -> Config:
        return self.config if self.config is not None else Config()

    def problem(self, rng):
        chain = [int(rng.integers(500))]
        while len(chain) < self.settings().hops:
            chain.append(int(COLLEAGUE[chain[-1]]))
        return {"person": chain[0], "clues": tuple(chain[:-1]) + (500 + chain[-1],), "city": CITIES[CITY[chain[-1]]]}

    def start(self, problem):
        return {"problem": problem, "turns": [], "context": [], "cited": {}, "answer": None}

    def full(self, state) -> bool:
        return len(state["context"]) >= self.settings().window

    def read(self, state, role):
        hops = "the colleague of " * (self.settings().hops - 1)
        shown = " ".join(f"[{n}] search: {query} -> " + (" ".join(FACTS[i] for i in ids) if n in state["context"]
                                                          else "(dropped)")
                         for n, (query, ids) in enumerate(state["turns"], 1))
        return f"Where does {hops}{PEOPLE[state['problem']['person']]} live? Context: {shown or '(empty)'}"

    def may_act(self, state, role):
        if state["answer"] is not None:
            return False
        return {"searcher": not self.full(state), "compactor": self.full(state)}.get(role, bool(state["turns"]))

    def stage(self, state):
        return 1 if self.full(state) else 2 if state["turns"] else 0

    def act(self, state, role, text):
        head, _, rest = text.partition(":")
        word = {"searcher": "search", "compactor": "keep", "answerer": "answer"}[role]
        if head.strip().lower() != word or not rest.strip():
            return f"expected '{word}: ...'"
        if role == "answerer":
            state["answer"] = rest.strip().rstrip(".")
        elif role == "searcher":
            state["turns"].append((rest.strip(), search(rest, SHOWN)))
            state["context"].append(len(state["turns"]))
        else:
            keep, most = {int(n) for n in re.findall(r"\d+", rest)}, min(CITES[1], self.settings().window - 1)
            if not keep <= set(state["context"]) or not CITES[0] <= len(keep) <= most:
                return f"illegal: keep cites {CITES[0]} to {most} of the context's turns ({state['context']})"
            for n in state["context"]:
                state["cited"][n] = max(state["cited"].get(n, 0), int(n in keep))
            state["context"] = sorted(keep)
        return None

    def done(self, state):
        return state["answer"] is not None

    def reward(self, state):
        return float(state["answer"] is not None and state["answer"].lower() == state["problem"]["city"].lower())

    def episode_signals(self, states, roles):
        cited, retrieved, last = [], [], states[-1]["cited"]
        for before, after in zip(states, states[1:]):
            searched = len(after["turns"]) > len(before["turns"])
            cited.append(last.get(len(after["turns"]), -1) if searched else -1)
            retrieved.append(tuple(after["turns"][-1][1]) if searched else ())
        return {"cited": cited, "retrieved": retrieved}
