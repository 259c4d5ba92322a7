"""Quotes: LLM agents price a job for a client who pays at most a private amount; reward: the share won."""
import re

from scenarios.text import Role, TextWorld

JOBS = ("a logo", "a website", "a translation", "a tax return", "a wedding video")
PRICE = re.compile(r"\$\s*(\d{1,6})")


def discount(state):
    """A tool: 15% below the last quote (the first time, below the usual rate)."""
    last = state["quotes"][-1] if state["quotes"] else state["problem"]["rate"]
    return f"My quote is ${int(last * 0.85)}."


class Quotes(TextWorld):
    roles = (Role("quoter", "You sell a service. Quote a price the client accepts, as high as you can. "
                  "Reply only: My quote is $<number>.", max_tokens=10, stop=("\n", ".")),
             Role("discounter", "A tool: quotes 15% below the last quote.", tool=discount))
    pool = {"quoter": [(0.6, ["example: Client wants a logo. Usual rate $300. => My quote is $280.",
                              "example: Client wants a website. Usual rate $900. Seller: $850. "
                              "Client: Too expensive. => My quote is $720."]),
                       (0.3, ["example: Client wants a logo. Usual rate $300. => My quote is $3000."]),
                       (0.3, ["Come down a little after each refusal."])]}
    wrong = ("example: Client wants a logo. Usual rate $300. => My quote is $3000.",)  # planted
    stages = ("No quote has been made.", "The client refused the last quote.")
    horizon = 5

    def problem(self, rng):
        rate = int(rng.integers(10, 100)) * 10
        return {"job": JOBS[int(rng.integers(len(JOBS)))], "rate": rate, "max": int(rate * rng.uniform(0.6, 1.1))}

    def start(self, problem):
        return {"problem": problem, "quotes": [], "deal": None,
                "history": [f"Client wants {problem['job']}. Usual rate ${problem['rate']}."]}

    def read(self, state, role):
        return " ".join(state["history"])

    def stage(self, state):
        return int(bool(state["quotes"]))

    def act(self, state, role, text):
        found = PRICE.search(text)
        if found is None:
            return "no quote in the reply"
        quote = int(found.group(1))
        if state["quotes"] and quote >= state["quotes"][-1]:
            return "illegal: a new quote must be below the last one"
        state["quotes"].append(quote)
        accepted = quote <= state["problem"]["max"]
        state["history"].append(f"Seller: ${quote}. Client: {'Deal.' if accepted else 'Too expensive.'}")
        state["deal"] = quote if accepted else None

    def done(self, state):
        return state["deal"] is not None

    def reward(self, state):
        return state["deal"] / state["problem"]["max"]

    def correct(self, state, role):
        return f"My quote is ${state['problem']['max']}."
