"""experiments/desk_context_harm.py: the planted adder line measured in every context that holds it, exactly on all
81 addition questions, and the validation size at which the gate sees its prune when a third of the problems are
additions. A scripted model (named as such: the real one plays desk in its own tests) copies the bare number of the
worked example it was shown last, so the line harms exactly where it is the last example."""

import json
import math

from agents.backends.base import Completion, Stats
from experiments import desk_context_harm
from scenarios import desk
from scenarios.text import scenario as text_scenario


class LastExampleCopier:
    name = "scripted"

    def __init__(self):
        self.stats = Stats()

    def generate(self, prompts):
        out = []
        for p in prompts:
            a, b = (int(x) for x in p.user.removeprefix("What is ").removesuffix("?").split(" + "))
            last = p.skills.splitlines()[-1] if p.skills else ""
            out.append(Completion(str(a + b) if last == desk.HARMFUL[0] else f"Answer: {a + b}", tokens=2))
        return out

    def close(self):
        pass


def test_the_line_harms_where_it_is_shown_last_and_the_gate_size_follows_from_a_third_of_the_problems(monkeypatch,
                                                                                                        tmp_path):
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: LastExampleCopier())
    out = tmp_path / "rows.jsonl"
    assert desk_context_harm.main(["--rows", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 8 and all(desk.HARMFUL[0] in r["context"] and r["questions"] == 81 for r in rows)
    last = [r for r in rows if desk.MISLEADING[0] not in r["context"]]  # the pool's order puts it after the line
    assert len(last) == 4 and all(r["harm"] == 1.0 and r["won"] == 81 and r["lost"] == 0 for r in last)
    z = 1.2815515655446004  # z_0.9: skills.confidence 0.9, power 0.9
    h, sd = 1 / 3, math.sqrt(1 / 3 - 1 / 9)
    assert all(r["required_validation"] == math.ceil((2 * z * sd / h) ** 2) for r in last)
    shadowed = [r for r in rows if r not in last]
    assert all(r["harm"] == 0 and r["required_validation"] is None and r["power_at_validation"] == 0 for r in shadowed)
    assert {r["validation"] for r in rows} == {256}
