"""The verdict experiment runs as its docs say: wordmath-shaped cases, asked with wordmath's diagnoser prompts, on
SmolLM2 through hf. Under the constraint every verdict is one of the case's well-formed verdicts; free, the same
model writes ones that do not parse (its answer to the "wrong expression" pattern names a failure type, ``error``,
that does not exist)."""

from experiments.skill_evolution import verdict_cases, verdict_rows
from skills.editor import verdicts


def test_cases_cover_the_five_patterns_with_their_blamed_lines():
    cases = verdict_cases(5, seed=0)
    assert [c.skill.name for c in cases] == ["extractor-example-6", "extractor-example-2", "answerer-example-1",
                                             "extractor-example-4", "extractor-rule-1"]
    assert all(len(verdicts(c)) > 10 for c in cases)  # failure types x actions x steps: a real choice


def test_constrained_verdicts_parse_where_free_ones_do_not():
    free, constrained = verdict_rows(5, seed=0, meta={})
    assert (free["arm"], constrained["arm"]) == ("free", "constrained") and free["backend"] == "hf"
    assert constrained["parse_rate"] == 1.0 and constrained["malformed_example"] == ""
    assert free["parse_rate"] < 1.0 and free["malformed_example"]
