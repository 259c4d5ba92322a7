"""experiments/desk_market_harm.py: each planted line's harm in the frozen market, paired by validation problem, at
the edit passes' times. A scripted model (named as such: desk's real runs are in tests/scenarios/test_desk.py)
writes the bare number whenever its prompt carries a format-breaking example, so with every agent holding its
role's one, taking it out turns exactly that role's questions right."""

import json

from experiments import desk_market_harm
from scenarios import desk
from scenarios.text import scenario as text_scenario
from tests.scenarios.scripted_backend import ScriptedBackend


class BareNumberCopier(ScriptedBackend):
    def answer(self, prompt):
        if not prompt.user.startswith("What is "):  # a birth's line: one more correct worked example
            return "example: What is 1 + 1? => Answer: 2"
        a, sign, b = prompt.user.removeprefix("What is ").removesuffix("?").split()
        value = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[sign]
        return str(value) if any(line in (prompt.skills or "") for line in desk.HARMFUL) else f"Answer: {value}"


def test_a_line_every_agent_holds_costs_its_roles_questions_and_nothing_else(monkeypatch, tmp_path):
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: BareNumberCopier())
    out = tmp_path / "rows.jsonl"
    argv = ["--quick", "--workers", "1", "--rows", str(out), "--set", "desk.harmful=1", "--set", "desk.misleading=0"]
    assert desk_market_harm.main(argv) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["round"] for r in rows} == {1, 2} and {r["line"] for r in rows} <= set(desk.HARMFUL)
    for r in rows:
        assert r["with"] == 0.0 and r["lost"] == 0 and r["validation"] == 8  # everyone copies: nothing right
        assert r["harm"] == r["won"] / 8 and r["holders"] >= 1
        assert r["commit"] and r["command"].startswith("python -m experiments.desk_market_harm")
    assert sum(r["won"] for r in rows if r["round"] == 1) == 8  # each question is one role's: the lines split them
    lines = [json.loads(line) for line in (tmp_path / "rows_lines.jsonl").read_text().splitlines()]
    assert [r["line"] for r in lines] == [x for x in desk.WRONG if any(x == r["line"] for r in rows)]
    for summary in lines:
        mine = [r for r in rows if r["line"] == summary["line"]]
        assert summary["passes held"] == len(mine) == 2 and summary["largest"] == max(r["harm"] for r in mine)
        assert summary["passes with harm >= 0.1"] == 2  # 2 or 3 of 8 problems each
        # the gate's one-sided sign test at 0.9: 3 won of 3 (p = 1/8) and 2 of 2 (p = 1/4) fall short: 8 problems are
        # too few for a prune to pass on evidence (the report's test below has one that does)
        assert summary["passes where the gate accepts its prune"] == 0


def test_the_report_sums_up_stored_rows_and_keeps_their_commit(tmp_path):
    rows = tmp_path / "h.jsonl"
    made = [{"seed": s, "round": 4, "line": desk.HARMFUL[0], "harm": h, "won": w, "lost": 0, "commit": "abc"}
            for s, h, w in ((0, 0.2, 20), (1, 0.0, 0))]
    rows.write_text("".join(json.dumps(r) + "\n" for r in made))
    assert desk_market_harm.main(["--report", "--rows", str(rows)]) == 0
    [line] = [json.loads(x) for x in (tmp_path / "h_lines.jsonl").read_text().splitlines()]
    assert line["seeds held"] == 2 and line["mean market harm"] == 0.1 and line["smallest"] == 0.0
    assert line["passes with harm >= 0.1"] == 1 and line["passes where the gate accepts its prune"] == 1
    assert line["commit"] == "abc"
