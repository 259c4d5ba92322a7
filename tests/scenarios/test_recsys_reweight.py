"""The floor (scenarios/recsys/edits.py ``reweight``): the edit writer proposes moving a role's weight towards the
tuned baseline's skill, and the gate alone decides.

The evaluator here scores a library by the baseline's share of the rank role's weight (a known truth the gate must
read), so that in one case the reweights must pass the gate until the rank is the baseline's alone, and in the
other they must be refused and not proposed again; the writer, the loop and the gate are the real ones."""

import numpy as np
from sqlalchemy import create_engine

from scenarios.recsys import edits, rules
from scenarios.recsys.evolve import last_pass
from skills import Diagnosis, SkillLibrary, SkillsConfig
from skills.loop import EditLoop, World

BASELINE = frozenset({"recall-ease", "rank-ease"})
AGENTS = {"recall": "recall-agent", "rank": "rank-agent"}
START = (("recall-ease", "recall", "always -> ease(weight=1)"), ("recall-covis", "recall", "always -> covis(weight=1)"),
         ("rank-ease", "rank", "always -> ease(weight=1)"), ("rank-mf", "rank", "always -> mf(weight=1)"),
         ("rank-popularity", "rank", "always -> popularity(weight=1)"))
SURPRISE = ("rank-surprise", "rank", "novelty >= 30 -> noise(weight=6)")  # conditional: a rule for a segment


def library(*extra) -> SkillLibrary:
    lib = SkillLibrary(create_engine("sqlite://"), "floor")
    for name, role, rule in START + extra:
        lib.add(name, f"{name}.", rules.body(rules.parse(rule, role), role), rule=rule, role=role)
    return lib


def rank_share(skills) -> float:
    terms = [s for s in skills if s.role == "rank" and "always" in s.rule]
    return sum(edits.weight(s) for s in terms if s.name in BASELINE) / sum(edits.weight(s) for s in terms)


def loop(lib: SkillLibrary, slope: float) -> EditLoop:
    """The edit loop with no credit evidence: only the floor's diagnoses reach the gate (recsys's prune rule)."""
    n = 40
    jitter = np.linspace(-0.01, 0.01, n)  # per question, the same for both libraries (paired)

    def evaluate(skills, questions, seeds):
        return 0.2 + slope * rank_share(skills) + jitter

    world = World(evaluate, np.arange(n), np.zeros(n, dtype=np.int64),
                  write=lambda d, trace, rng: edits.propose(d, lib, rng, {}, BASELINE),
                  propose=lambda done: edits.floor(lib, BASELINE, AGENTS))
    return EditLoop(lib, SkillsConfig(credit="grse", prune_se=1.0, min_harm=0.012), world)


def test_the_share_steps_climb_the_ladder_keeping_the_role_total_and_stop_at_its_last_step():
    lib = library()
    step = Diagnosis("rank-agent", "rank", edits.REWEIGHT, None, "revise", "rank")
    shares = [rank_share(lib.current())]
    while (written := edits.propose(step, lib, np.random.default_rng(0), {}, BASELINE)) is not None:
        lib.apply(written)
        shares.append(rank_share(lib.current()))
    assert np.allclose(shares, (1 / 3, 0.5, 0.7, 0.85, 0.95, 0.99))
    rank = [s for s in lib.current() if s.role == "rank"]
    assert abs(sum(edits.weight(s) for s in rank) - 3) < 1e-3 and len(rank) == 3  # the role's total kept


def test_where_the_baseline_scores_better_the_reweights_pass_and_the_roles_become_the_baseline_alone():
    lib = library()
    edit_loop = loop(lib, slope=0.1)
    edit_loop.run(np.random.default_rng(0))
    # rank: its step improves, then its baseline alone improves; recall: its step is a tie (no evidence: refused),
    # its baseline alone a tie too, which the prune rule settles for the smaller library
    assert set(s.name for s in lib.current()) == {"recall-ease", "rank-ease"}
    assert edit_loop.counts["edits_accepted"] == 3 and edit_loop.counts["edits_rejected"] == 1
    assert not edits.floor(lib, BASELINE, AGENTS)  # nothing left to move

    lib = library(SURPRISE)  # a conditional skill in rank: every reweight waits, and the skill is never touched
    assert edits.floor(lib, BASELINE, AGENTS) == []
    step = Diagnosis("rank-agent", "rank", edits.REWEIGHT, None, "revise", "rank")
    assert edits.propose(step, lib, np.random.default_rng(0), {}, BASELINE) is None
    loop(lib, slope=0.1).run(np.random.default_rng(0))
    assert [(s.name, s.version) for s in lib.current()] == [(n, 1) for n, *_ in START + (SURPRISE,)]


def test_where_the_mix_scores_better_the_reweights_are_refused_once_and_not_proposed_again():
    lib = library()
    edit_loop = loop(lib, slope=-0.1)
    assert [(d.target, d.action) for d in edits.floor(lib, BASELINE, AGENTS)] == [
        ("recall", "revise"), ("recall", "prune"), ("rank", "revise"), ("rank", "prune")]
    edit_loop.run(np.random.default_rng(0))
    current = {s.name: s for s in lib.current()}
    assert {n: s.rule for n, s in current.items() if s.role == "rank"} == {n: r for n, ro, r in START if ro == "rank"}
    # recall's share does not move this evaluator: its step (a tie) fails the improvement test, its prune passes
    assert edit_loop.counts["edits_rejected"] == 3 and edit_loop.counts["edits_accepted"] == 1
    assert {v.name for v in lib.versions() if v.status == "rejected"} == {
        "recall-ease", "recall-covis", "rank-ease", "rank-mf", "rank-popularity"}
    assert edits.floor(lib, BASELINE, AGENTS) == []  # the refused candidates are remembered by the library itself
    edit_loop.run(np.random.default_rng(0))
    assert edit_loop.counts["edits_proposed"] == 4


def test_the_baseline_alone_waits_for_the_runs_last_edit_pass():
    lib = library()
    kinds = lambda **asked: [(d.target, d.action) for d in edits.floor(lib, BASELINE, AGENTS, **asked)]  # noqa: E731
    assert kinds(alone=False) == [("recall", "revise"), ("rank", "revise")]  # an earlier pass that settled
    assert kinds(step=False) == [("recall", "prune"), ("rank", "prune")]  # the last pass, after a credit accept
    assert kinds(step=False, alone=False) == []
    # the last edit pass: the last round where it is due, or the last due round before it
    assert [s for s in range(1, 11) if last_pass(s, 1, 10)] == [10]
    assert [s for s in range(1, 11) if last_pass(s, 3, 10)] == [9]
    assert [s for s in range(1, 13) if last_pass(s, 4, 12)] == [12]
