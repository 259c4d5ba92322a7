"""Addition: the one-role text world the TRL peer benchmark trains both learners on (benchmarks/trl_peer.py).

A solver reads "What is a + b?" (a, b in 1..9) and must reply exactly ``Answer: N``. Its only skill line is a
worked example from another domain: it shows the reply's format, not the arithmetic, so a small model starts
well below what it can learn (SmolLM2-135M answers about a quarter of the problems greedily) and sampled replies
differ within a problem's group, which is what group-relative learning needs. One reply ends the episode, so an
episode is one sampled completion, as each of TRL's generations is one completion of a prompt.

Written with the public text-world API only, as a user would write a world (docs/tutorials/llm_world.md).
"""

from __future__ import annotations

from scenarios.text import Role, TextWorld

SYSTEM = "You add two numbers. Reply only with: Answer: <number>"
EXAMPLE = "example: How many legs does a spider have? => Answer: 8"


def question(problem: dict) -> str:
    return f"What is {problem['a']} + {problem['b']}?"


def reward(problem: dict, reply: str | None) -> float:
    """1 for exactly ``Answer: <a + b>`` (surrounding spaces aside), else 0: the one reward both learners train on."""
    return float(reply is not None and reply.strip() == f"Answer: {problem['a'] + problem['b']}")


class Addition(TextWorld):
    roles = (Role("solver", SYSTEM, wake="Is there a question to answer?", max_tokens=8),)
    pool = {"solver": [EXAMPLE]}
    stages = ("A question waits for its answer.",)
    horizon = 1

    def problem(self, rng):
        return {"a": int(rng.integers(1, 10)), "b": int(rng.integers(1, 10))}

    def start(self, problem):
        return {"problem": problem, "reply": None}

    def read(self, state, role):
        return question(state["problem"])

    def act(self, state, role, text):
        state["reply"] = text
        return None

    def done(self, state):
        return state["reply"] is not None

    def reward(self, state):
        return reward(state["problem"], state["reply"])

    def correct(self, state, role):
        p = state["problem"]
        return f"Answer: {p['a'] + p['b']}"
