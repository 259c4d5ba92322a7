"""Which line a failed output imitates: a failure that needs two lines together gets both lines the same credit;
the reader of the failed outputs moves the blame from the correct line to the one they imitate."""

from skills import DiagnosisConfig, Edit, Rollout, RuleDiagnoser, SkillsConfig, Trace
from skills.evolve import blame
from skills.credit import batch, group_relative_credit
from skills.editor import cases
from skills.imitation import STEPS, reattribute

PULL = {"right": -2.0, "wrong": 5.0}
"""What the reader says each line, shown alone, does to a failed output (the planted-line world's signs)."""


def rollout(lines: tuple[str, ...]) -> Rollout:
    """The reader misreads only with both lines (the planted-line world's interaction), writes "order 8" for 7."""
    fails = {"right", "wrong"} <= set(lines)
    t = Trace(reference="order 7")
    t.invoke("reader", "ok", agent="1", skills=lines, output="order 8" if fails else "order 7")
    return Rollout(0.0 if fails else 1.0, t)


def groups(questions=12):
    """Each question's four rollouts carry both lines or one (the p_use contrast); in every third the draws left out
    only the correct line, so credit, linear in presence, blames it the more."""
    even = [("right", "wrong"), ("right",), ("wrong",), ("right", "wrong")]
    unlucky = [("right", "wrong"), ("wrong",), ("wrong",), ("right", "wrong")]
    return [(f"q{i}", [rollout(s) for s in (unlucky if i % 3 == 0 else even)]) for i in range(questions)]


def read(steps):
    """The failed steps' pulls by line (a step whose output was right reads as none)."""
    read.calls += len(steps)
    out = []
    for t, n in steps:
        node = t.graph.nodes[n]
        out.append({} if node["output"] == t.reference else {line: PULL[line] for line in node["skills"]})
    return out


def library_of(library):
    for name in ("right", "wrong"):
        library.add(name, f"The {name} example.", f"example: order 3 => order {3 if name == 'right' else 4}",
                    role="reader")
    return library


def test_credit_alone_blames_the_correct_line_the_failure_needs(library):
    library_of(library)
    cfg = SkillsConfig(min_support=2)
    b = batch(groups(), cfg.credit_config(group=4))
    gc = group_relative_credit(b.rewards, b.usage, b.questions, cfg.credit_config(group=4), b.acted)
    right, wrong = (gc.credit[b.keys.index(("1", name))] for name in ("right", "wrong"))
    assert right < wrong < 0  # linear credit cannot split the interaction: both blamed, the correct one more
    assert [c.skill.name for c in cases(b, gc, library, DiagnosisConfig(min_support=2))][0] == "right"
    read.calls = 0
    moved = reattribute(cases(b, gc, library, DiagnosisConfig(min_support=2)), b, gc, library, read)
    assert [c.skill.name for c in moved.cases] == ["wrong"] and moved.moved == 1 and moved.unread == 0
    assert moved.cases[0].credit == right and read.calls == 2 * STEPS


def test_blame_with_the_reader_diagnoses_the_imitated_line_and_never_the_correct_one(library):
    library_of(library)
    cfg = SkillsConfig(min_support=2, prune_below=-0.3)
    rule = RuleDiagnoser(cfg.diagnosis_config())
    plain = blame(groups(), "grse", library, cfg, rule)
    assert plain.diagnoses[0].target == "right"  # what seed 3 of the planted-line world did
    read.calls = 0
    found = blame(groups(), "grse", library, cfg, rule, read=read)
    assert [(d.target, d.action) for d in found.diagnoses] == [("wrong", "prune")] and found.moved == 1


def test_a_blame_the_failed_outputs_bear_out_stays_and_an_unread_one_too(library):
    library_of(library)
    cfg = SkillsConfig(min_support=2)
    b = batch(groups(), cfg.credit_config(group=4))
    gc = group_relative_credit(b.rewards, b.usage, b.questions, cfg.credit_config(group=4), b.acted)
    found = cases(b, gc, library, DiagnosisConfig(min_support=2))
    both_imitated = reattribute(found, b, gc, library, lambda steps: [{"right": 1.0, "wrong": 3.0} for _ in steps])
    assert [c.skill.name for c in both_imitated.cases] == ["right", "wrong"] and both_imitated.moved == 0
    unread = reattribute(found, b, gc, library, lambda steps: [{} for _ in steps])
    assert [c.skill.name for c in unread.cases] == ["right", "wrong"] and unread.unread == 2
    library.apply([Edit("prune", "wrong")])  # a pruned line takes no blame
    gone = reattribute(found, b, gc, library, read)
    assert gone.moved == 0 and "right" in [c.skill.name for c in gone.cases]
