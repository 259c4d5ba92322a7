"""Multi-hop lookup: a searcher queries a frozen retriever over 1,000 synthetic facts, an answerer names the city.

The facts are 500 "<person> works with <person>." and 500 "<person> lives in <city>." lines, drawn once from a
fixed seed. A problem asks "Where does the colleague of X live?": its gold clue chain is the fact naming X's
colleague Y, then the fact naming Y's city. The ``searcher`` writes ``search: <words>``; the frozen retriever
(:func:`search`: overlap of words and word pairs, ties by id) returns the ids of its ``cutoff`` best facts, of which the searcher and
the answerer are shown the first three. The ``answerer`` writes ``answer: <city>``; reward 1 for the right city.

For the credit estimators each step says whether its query hit (``hit``: 1 a gold clue within the cutoff, 0 none,
-1 no query): what ``sid_span`` routes a success's advantage by and ``abseeker``'s rubric scores.
"""

from __future__ import annotations

import re

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass

from scenarios.text.scenario import TextWorldConfig
from scenarios.text import Role, TextWorld
from market.strict import STRICT

FIRST = ("Ada", "Bram", "Cleo", "Dov", "Esme", "Finn", "Greta", "Hugo", "Iris", "Jonas", "Kira", "Lev", "Mina", "Nico",
         "Olga", "Pavel", "Quinn", "Rosa", "Soren", "Tala")
LAST = ("Moss", "Vale", "Stone", "Reed", "Frost", "Hale", "Lund", "Marsh", "Pike", "Quill", "Rowe", "Shaw", "Thorn",
        "Voss", "Wren", "Yates", "Zell", "Brook", "Cole", "Dune", "Ember", "Fenn", "Grove", "Holt", "Ives")
CITIES = ("Quimby", "Larkport", "Osterfeld", "Brightwater", "Castlemere", "Dunhollow", "Eastvale", "Fairhaven",
          "Glenmoor", "Harrowgate", "Ironbridge", "Juniper", "Kingsreach", "Lowmarsh", "Millbrook", "Northcliff")
SHOWN = 3
"""Facts of a search's result the agents are shown."""
WORDS = re.compile(r"\w+")


def facts(seed: int = 0) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(fact texts [1000], people [500], colleague [500], city [500]): fact i < 500 says person i works with
    colleague[i], fact 500 + i that person i lives in city[i]."""
    rng = np.random.default_rng(seed)
    people = [f"{a} {b}" for a in FIRST for b in LAST][:500]
    colleague = (np.arange(500) + rng.integers(1, 500, 500)) % 500  # never oneself
    city = rng.integers(len(CITIES), size=500)
    text = [f"{people[i]} works with {people[colleague[i]]}." for i in range(500)]
    text += [f"{people[i]} lives in {CITIES[city[i]]}." for i in range(500)]
    return text, people, colleague, city


def terms(text: str) -> set:
    """A text's words and adjacent word pairs (the pairs tell "A works with B" from "B works with A")."""
    words = WORDS.findall(text.lower())
    return set(words) | set(zip(words, words[1:]))


FACTS, PEOPLE, COLLEAGUE, CITY = facts()
FACT_TERMS = [terms(f) for f in FACTS]


def search(query: str, cutoff: int) -> list[int]:
    """The frozen retriever: the ids of the ``cutoff`` facts sharing the most words and word pairs with ``query``
    (ties: lower id)."""
    q = terms(query)
    overlap = np.array([len(q & f) for f in FACT_TERMS])
    return np.lexsort((np.arange(overlap.size), -overlap))[:cutoff].tolist()


@dataclass(config=STRICT)
class Config(TextWorldConfig):
    cutoff: int = Field(50, ge=1, le=1000)
    """Facts the retriever returns for a query: a query hits when a gold clue is among them."""
    searches: int = Field(2, ge=1)
    """Queries the searcher may issue before the answerer must answer."""


class MultiHop(TextWorld):
    roles = (Role("searcher", "Find facts that answer the question. Reply only: search: <words>.", max_tokens=16,
                  wake="Is there a question to search for?"),
             Role("answerer", "Answer from the facts found. Reply only: answer: <city>.", max_tokens=8,
                  wake="Are there facts to answer from?"))
    pool = {"searcher": ["example: Where does the colleague of Ada Moss live? => search: Ada Moss works with",
                         "example: Ada Moss works with Lev Pike. => search: Lev Pike lives in"],
            "answerer": ["example: Lev Pike lives in Quimby. => answer: Quimby"]}
    stages = ("A question waits for a search.", "Facts wait to be read for an answer.")
    horizon = 6
    credit_signals = ("hit",)

    def problem(self, rng):
        x = int(rng.integers(500))
        y = int(COLLEAGUE[x])
        return {"person": x, "chain": (x, 500 + y), "city": CITIES[CITY[y]]}

    def start(self, problem):
        return {"problem": problem, "queries": [], "shown": [], "answer": None}

    def question(self, state) -> str:
        return f"Where does the colleague of {PEOPLE[state['problem']['person']]} live?"

    def read(self, state, role):
        found = " ".join(FACTS[i] for i in state["shown"]) or "(no facts yet)"
        return f"{self.question(state)} Facts: {found}"

    def may_act(self, state, role):
        if state["answer"] is not None:
            return False
        cap = self.config.searches if self.config is not None else Config.searches
        return len(state["queries"]) < cap if role == "searcher" else bool(state["queries"])

    def stage(self, state):
        return int(bool(state["queries"]))

    def act(self, state, role, text):
        head, _, rest = text.partition(":")
        if head.strip().lower() != ("search" if role == "searcher" else "answer") or not rest.strip():
            return f"expected '{'search' if role == 'searcher' else 'answer'}: ...'"
        if role == "answerer":
            state["answer"] = rest.strip().rstrip(".")
            return None
        ids = search(rest, self.config.cutoff if self.config is not None else Config.cutoff)
        state["queries"].append((rest.strip(), ids))
        state["shown"] = list(dict.fromkeys(state["shown"] + ids[:SHOWN]))
        return None

    def done(self, state):
        return state["answer"] is not None

    def reward(self, state):
        return float(state["answer"] is not None and state["answer"].lower() == state["problem"]["city"].lower())

    def correct(self, state, role):
        p = state["problem"]
        if role == "answerer" or role is None:
            return f"answer: {p['city']}" if role else p["city"]
        first = p["chain"][0] in state["shown"]
        return f"search: {PEOPLE[COLLEAGUE[p['person']]]} lives in" if first else f"search: {PEOPLE[p['person']]} works with"

    def given(self, state, role):
        return self.question(state) if role == "searcher" and not state["shown"] else self.read(state, role)

    def step_signals(self, before, after, role):
        if len(after["queries"]) == len(before["queries"]):
            return {"hit": -1}
        ids = after["queries"][-1][1]
        return {"hit": int(any(clue in ids for clue in after["problem"]["chain"]))}
