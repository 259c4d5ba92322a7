"""Policy review: quote a product record's evidence, then score it against the policy's rules.

A problem is a synthetic product record (five attributes: price, rating, stock, warranty, weight) and a policy of
three rules, each on one attribute (``price below 40``, ``rating at least 4``). The ``reader`` reads both and quotes
the evidence the rules need (``evidence: price=35, rating=3, stock=12``); the ``scorer`` reads the policy and the quoted
evidence alone, not the record, and writes ``score: <n>``, how many rules the evidence passes. Reward 1 where the score
is the gold one, the number of rules the record itself passes: a misquoted value misleads the scorer.

The world exists for the ``evidence_diagnosis`` objective: it knows the gold score (``correct``, the belief's answer)
and says what a good step of each role does (``rubric``): criteria, not the quote or the count. A reader that quotes
a value the record does not hold is ungrounded (agents/llm/privileged_pass.py ``grounding``); the scorer's frozen prompt
names its range, so its count claims nothing about its input.
"""

from __future__ import annotations

import re

from scenarios.text import Role, TextWorld

ATTRIBUTES = {"price": (10, 99), "rating": (1, 5), "stock": (0, 40), "warranty": (0, 3), "weight": (1, 20)}
"""Each attribute's range of integer values (inclusive)."""
RULES = 3
"""Rules in a policy: the gold score is 0 to 3."""


def passes(op: str, value: int, bound: int) -> bool:
    return value < bound if op == "below" else value >= bound if op == "at least" else value > bound


class Review(TextWorld):
    stages = ("A record waits to be read.", "Quoted evidence waits to be scored.")
    roles = (Role("reader", "Quote the record's value of each attribute the policy's rules name. "
                  "Reply only: evidence: <attribute>=<value>, ...", max_tokens=32, wake="Is there a record to read?",
                  stop=("\n", ";")),  # a ';' separates the policy's rules: a reply that reaches one is copying them
             Role("scorer", "Count the policy's rules the evidence passes. Reply only: score: <0, 1, 2 or 3>",
                  max_tokens=6, wake="Is there quoted evidence to score?"))
    pool = {"reader": ["example: Record: price=35, rating=4, stock=3, warranty=1, weight=9. Policy: price below 50; "
                       "stock above 10; weight below 12. => evidence: price=35, stock=3, weight=9",
                       *(f"example: {s} Is there a record to read? => {a}" for s, a in zip(stages, ("yes", "no")))],
            "scorer": ["example: Policy: price below 50; stock above 10; weight below 12. Evidence: price=35, stock=3, "
                       "weight=9 => score: 2",
                       *(f"example: {s} Is there quoted evidence to score? => {a}" for s, a in zip(stages, ("no", "yes")))]}
    horizon = 4

    def problem(self, rng):
        record = {a: int(rng.integers(lo, hi + 1)) for a, (lo, hi) in ATTRIBUTES.items()}
        rules = []
        for a in sorted(rng.choice(list(ATTRIBUTES), size=RULES, replace=False), key=list(ATTRIBUTES).index):
            lo, hi = ATTRIBUTES[a]
            rules.append((str(a), ("below", "at least", "above")[int(rng.integers(3))], int(rng.integers(lo + 1, hi + 1))))
        return {"record": record, "rules": tuple(rules)}

    def start(self, problem):
        return {"problem": problem, "evidence": None, "score": None}

    def policy(self, state) -> str:
        return "; ".join(f"{a} {op} {bound}" for a, op, bound in state["problem"]["rules"])

    def gold(self, state) -> int:
        record = state["problem"]["record"]
        return sum(passes(op, record[a], bound) for a, op, bound in state["problem"]["rules"])

    def read(self, state, role):
        if role == "reader":
            record = ", ".join(f"{a}={v}" for a, v in state["problem"]["record"].items())
            return f"Record: {record}. Policy: {self.policy(state)}."
        quoted = ", ".join(f"{a}={v}" for a, v in (state["evidence"] or {}).items())
        return f"Policy: {self.policy(state)}. Evidence: {quoted}"

    def may_act(self, state, role):
        return state["score"] is None and (state["evidence"] is None) == (role == "reader")

    def stage(self, state):
        return int(state["evidence"] is not None)

    def act(self, state, role, text):
        head, _, rest = text.partition(":")
        if role == "reader":
            pairs = re.findall(r"([a-z]+)\s*=\s*(-?\d+)", rest.lower())
            if head.strip().lower() != "evidence" or not pairs:
                return "expected 'evidence: <attribute>=<value>, ...'"
            state["evidence"] = {a: int(v) for a, v in pairs}
            return None
        score = re.fullmatch(r"\s*(\d)\s*\.?\s*", rest)
        if head.strip().lower() != "score" or not score or int(score[1]) > RULES:
            return f"expected 'score: <0 to {RULES}>'"
        state["score"] = int(score[1])
        return None

    def done(self, state):
        return state["score"] is not None

    def reward(self, state):
        return float(state["score"] == self.gold(state))

    def correct(self, state, role):
        if role == "reader":
            record = state["problem"]["record"]
            return "evidence: " + ", ".join(f"{a}={record[a]}" for a, _, _ in state["problem"]["rules"])
        return f"score: {self.gold(state)}"

    def rubric(self, state, role):
        if role == "reader":
            return ("name each attribute a rule of the policy mentions, once, with its value copied exactly as the "
                    "record gives it; quote nothing the rules do not mention")
        return ("take the rules one at a time, compare the quoted value with the rule's bound (below: smaller; at "
                "least: equal or larger; above: larger), and count the rules passed")
