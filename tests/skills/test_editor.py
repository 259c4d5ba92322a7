"""Diagnosis: the rule-based diagnoser reads the trace's checks; the LLM one parses JSON robustly."""

import numpy as np
import pytest

from skills import Case, CreditConfig, DiagnosisConfig, LLMDiagnoser, RuleDiagnoser, Trace, batch, cases, \
    group_relative_credit, to_edit
from skills.editor import FAILURE_TYPES
from tests.skills.team import SKILLS, groups, seed_library


def case(library, trace, skill="rank-strong", credit=-0.1, co_used=None):
    return Case(agent="k1", skill=library.get(skill), credit=credit, support=3, trace=trace, co_used=co_used or {})


def trace(recall="ok", recall_skills=("recall-broad",), rank="ok", rank_skills=("rank-strong",), extra_rank=None):
    t = Trace()
    a = t.invoke("recall", recall, agent="r1", skills=recall_skills)
    t.invoke("rank", rank, agent="k1", skills=rank_skills, after=[a])
    if extra_rank:
        t.invoke("rank", extra_rank, agent="k2", after=[a])
    return t


@pytest.mark.parametrize("kwargs, credit, co_used, expected", [
    (dict(rank="invalid_output"), -0.1, {}, ("invalid_output", 1, "revise", "rank-strong", None)),
    (dict(rank="constraint_violated"), -0.1, {}, ("constraint_violated", 1, "revise", "rank-strong", None)),
    (dict(recall="empty_output", rank="timeout"), -0.1, {}, ("upstream_failure", 0, "revise", "recall-broad", None)),
    (dict(recall="empty_output", recall_skills=(), rank="timeout"), -0.1, {},
     ("missing_skill", 0, "add", "recall", None)),
    (dict(extra_rank="empty_output"), -0.1, {}, ("missing_skill", 2, "add", "rank", None)),
    ({}, -0.5, {"rank-harmful": 1.0}, ("harmful_skill", 1, "prune", "rank-strong", None)),
    ({}, -0.1, {"rank-harmful": 1.0}, ("redundant_skill", 1, "merge", "rank-strong", "rank-harmful")),
    ({}, -0.1, {"rank-harmful": 0.5}, ("harmful_skill", 1, "revise", "rank-strong", None)),
])
def test_rule_diagnoser_reads_the_trace(library, kwargs, credit, co_used, expected):
    seed_library(library)
    (d,) = RuleDiagnoser().diagnose([case(library, trace(**kwargs), credit=credit, co_used=co_used)])
    assert (d.failure, d.step, d.action, d.target, d.partner) == expected
    assert d.agent == "k1" and d.skill == "rank-strong" and d.rationale == FAILURE_TYPES[d.failure][0]


def test_cases_pick_the_blamed_skills_and_their_worst_rollout(library):
    seed_library(library)
    cfg = CreditConfig()
    b = batch(groups(set(SKILLS), questions=200, seed=0), cfg)
    credit = group_relative_credit(b.rewards, b.usage, b.questions, cfg)
    found = cases(b, credit, library, DiagnosisConfig())
    assert [c.skill.name for c in found] == ["rank-harmful", "recall-sloppy"]  # negative credit, worst first
    harmful = found[0]
    assert harmful.agent == "rank-1" and harmful.co_used == {"rank-strong": 1.0}
    assert "rank-harmful" in harmful.trace.skills_used()["rank-1"]
    used = b.usage[:, :, b.keys.index(("rank-1", "rank-harmful"))] > 0
    q, g = np.argwhere(used)[credit.advantage[used].argmin()]  # its rollout with the lowest advantage
    assert harmful.trace is b.traces[q][g]
    assert cases(b, credit, library, DiagnosisConfig(min_support=10_000)) == []
    (d,) = RuleDiagnoser().diagnose(found[:1])
    assert (d.failure, d.action, d.target) == ("harmful_skill", "prune", "rank-harmful")


class ScriptedLM:
    """Named fake for a language model: replies with fixed texts, since malformed model output cannot be
    produced on demand by a real one. Keeps the prompts it was sent."""

    def __init__(self, replies):
        self.replies, self.prompts = replies, []

    def __call__(self, prompts):
        self.prompts += prompts
        return self.replies[: len(prompts)]


def test_llm_diagnoser_parses_json_robustly_and_records_malformed_output(library):
    seed_library(library)
    t = trace(rank="invalid_output")
    replies = [
        'Sure! Here is my verdict:\n```json\n{"failure": "Invalid Output", "step": "1", "action": "revise",'
        ' "rationale": "ids unparsable"}\n```\nHope it helps.',
        '{"failure": "redundant-skill", "step": null, "action": "merge", "partner": "rank-harmful"} trailing {',
        "I think the ranking skill is fine.",
        '{"failure": "bad_vibes", "step": 1}',
        '{"failure": "timeout", "step": 7}',
        '{"failure": "redundant_skill", "action": "merge"}',
        '{"failure": "harmful_skill", "action": "delete"}',
    ]
    lm = ScriptedLM(replies)
    diagnoser = LLMDiagnoser(lm)
    out = diagnoser.diagnose([case(library, t) for _ in replies])
    assert (out[0].failure, out[0].step, out[0].action, out[0].target, out[0].rationale) == (
        "invalid_output", 1, "revise", "rank-strong", "ids unparsable")
    assert (out[1].failure, out[1].action, out[1].target, out[1].partner) == (
        "redundant_skill", "merge", "rank-strong", "rank-harmful")
    assert out[2:] == [None] * 5
    assert [m.error for m in diagnoser.malformed] == [
        "no JSON object in the output",
        f"failure 'bad_vibes' is not one of {', '.join(FAILURE_TYPES)}",
        "step 7 is not a step of the trace",
        "merge needs a partner skill other than the target, got None",
        "action 'delete' is not one of revise, add, prune, merge",
    ]
    assert diagnoser.malformed[0].output == replies[2] and diagnoser.malformed[0].skill == "rank-strong@1"
    prompt = lm.prompts[0]
    assert SKILLS["rank-strong"][3] in prompt and t.describe() in prompt
    assert all(f"- {name}:" in prompt for name in FAILURE_TYPES) and len(FAILURE_TYPES) == 8
    with pytest.raises(ValueError, match="generate returned 0 texts for 1 prompts"):
        LLMDiagnoser(ScriptedLM([])).diagnose([case(library, t)])


def test_diagnoses_become_library_edits(library):
    seed_library(library)
    rule = RuleDiagnoser()
    prune, missing = rule.diagnose([case(library, trace(), credit=-1.0),
                                    case(library, trace(extra_rank="empty_output"))])
    (pruned,) = library.apply([to_edit(prune)])
    assert pruned.status == "pruned" and pruned.name == "rank-strong"
    (added,) = library.apply([to_edit(missing, name="rank-fallback", description="Rank by popularity.",
                                      body="When nothing else applies, rank by popularity.\n")])
    assert (added.name, added.role, added.parent_id) == ("rank-fallback", "rank", None)
    edit = library.edits()[added.edit_id]
    assert edit.operator == "add" and '"failure": "missing_skill"' in edit.diagnosis


def test_the_short_form_shows_each_step_briefly_and_check_turns_an_unknown_target_into_a_malformed_verdict(library):
    """The short form (for a small model) is one line: the blamed skill, the correct answer, each step's role,
    status and first SHORT_OUTPUT characters; ``check`` refuses what one case cannot tell (an unknown skill),
    and the refusal is recorded like a parse failure."""
    from skills.editor import SHORT_OUTPUT

    seed_library(library)
    t = trace(rank="invalid_output")
    t.graph.nodes[1]["output"] = "x" * 50
    t.reference = "The answer is 8."
    lm = ScriptedLM(['{"failure": "invalid_output", "step": 1, "action": "revise", "target": "rank-strong"}',
                     '{"failure": "invalid_output", "step": 1, "action": "revise", "target": "rank-nonexistent"}'])
    known = {s.name for s in library.current()}
    diagnoser = LLMDiagnoser(lm, short=True, check=lambda d: "" if d.target in known else f"{d.target}: unknown")
    out = diagnoser.diagnose([case(library, t), case(library, t)])
    assert out[0].target == "rank-strong" and out[1] is None
    assert [m.error for m in diagnoser.malformed] == ["rank-nonexistent: unknown"]
    assert lm.prompts[0] == (f"Blamed rank-strong (correct: The answer is 8.). Step 0: recall -> ok ''. "
                             f"Step 1: rank -> invalid_output {'x' * SHORT_OUTPUT!r}.")


def test_every_constrained_verdict_parses_and_the_closed_set_holds_the_rule_diagnosers(library):
    """verdicts(case) is the closed set constrained decoding picks from: each option parses into a diagnosis of the
    case, and the rule diagnoser's own verdict is among them (so a model that agrees with it can say so)."""
    from skills.editor import first_json_object, read_diagnosis, verdicts

    seed_library(library)
    for kwargs, credit, co_used in [(dict(rank="invalid_output"), -0.1, {}), (dict(recall="empty_output", rank="timeout"),
                                    -0.1, {}), ({}, -0.5, {"rank-harmful": 1.0}), ({}, -0.1, {"rank-harmful": 1.0})]:
        c = case(library, trace(**kwargs), credit=credit, co_used=co_used)
        options = verdicts(c)
        parsed = [read_diagnosis(first_json_object(o), c) for o in options]
        assert len(set(options)) == len(options) > 10
        rule = RuleDiagnoser().diagnose([c])[0]
        assert (rule.failure, rule.step, rule.action, rule.target, rule.partner) in {
            (d.failure, d.step, d.action, d.target, d.partner) for d in parsed}


def test_a_constrained_diagnoser_takes_the_chosen_verdict_and_counts_a_refusal_as_malformed(library):
    from skills.editor import verdicts

    seed_library(library)
    cases_ = [case(library, trace(rank="invalid_output")), case(library, trace())]
    asked = []

    def choose(prompts, options):
        asked.append(options)
        return [next(i for i, o in enumerate(options[0]) if '"failure": "invalid_output", "step": 1' in o), -1]

    def generate(prompts):
        raise AssertionError("a constrained diagnoser does not generate freely")

    llm = LLMDiagnoser(generate, choose=choose)
    first, second = llm.diagnose(cases_)
    assert (first.failure, first.step, first.action, first.target) == ("invalid_output", 1, "revise", "rank-strong")
    assert second is None and len(llm.malformed) == 1
    assert asked == [[verdicts(c) for c in cases_]]
