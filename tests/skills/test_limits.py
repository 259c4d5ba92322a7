"""Size limits and the one edit loop: a candidate that breaks a limit is refused before any validation run; the
loop gates one edit at a time, clears its evidence on an accept, and reports validation against held-out gain."""

import numpy as np

from skills import Edit, SkillsConfig
from skills.limits import Limits, emptied, tokens
from skills.loop import EditLoop, World
from tests.skills.team import evaluate, groups, seed_library


def test_tokens_are_words_and_punctuation():
    assert tokens("Take the top 50 by popularity, too.") == 9 and tokens("") == tokens(None) == 0


def test_a_body_past_its_limit_a_role_grown_past_its_limit_and_an_empty_library_are_refused(library):
    seed_library(library)
    limits = Limits(skill_tokens=20, role_tokens=40)
    current = library.current()

    def candidate(edit):
        return library.plan([edit])[1]

    assert limits.problem(current, candidate(Edit("revise", "rank-strong", body="Score by overlap."))) == ""
    assert limits.problem(current, candidate(Edit("revise", "rank-strong", body="word " * 21))) == "skill_tokens"
    grown = candidate(Edit("add", "rank-more", description="More.", body="word " * 19 + "\n", role="rank"))
    assert limits.problem(current, grown) == ""  # 13 + 19 tokens of rank
    grown = library.plan([Edit("add", "rank-more", description="More.", body="word " * 19, role="rank"),
                          Edit("add", "rank-most", description="Most.", body="word " * 19, role="rank")])[1]
    assert limits.problem(current, grown) == "role_tokens"
    no_recall = library.plan([Edit("prune", "recall-broad"), Edit("prune", "recall-sloppy")])[1]
    assert limits.problem(current, no_recall) == "" and emptied(current, no_recall) == ["recall"]  # counted, allowed
    nothing = library.plan([Edit("prune", s.name) for s in current])[1]
    assert limits.problem(current, nothing) == "collapse"
    assert limits.problem(current, candidate(Edit("prune", "recall-broad"))) == ""


def loop_of(library, cfg, write, heldout=True):
    questions = np.arange(60)
    world = World(evaluate, questions, np.full(60, 7), write=write,
                  heldout=(lambda skills: float(evaluate(skills, questions + 1000, np.full(60, 3)).mean()))
                  if heldout else None)
    return EditLoop(library, cfg, world)


def test_the_loop_prunes_the_planted_skill_clears_its_window_and_reports_both_gains(library):
    seed_library(library)
    cfg = SkillsConfig(max_edits=3, window=2)
    loop = loop_of(library, cfg, lambda d, trace, rng: Edit("prune", d.target, diagnosis={"failure": d.failure})
                   if d.action == "prune" else None)
    available = {s.name for s in library.current()}
    for seed in range(3):
        loop.observe(groups(available, questions=70, seed=seed))
    assert len(loop.window) == 2  # at most skills.window rounds
    done = loop.run(np.random.default_rng(0))
    assert done.accepted == 1 and "rank-harmful" not in {s.name for s in library.current()}
    assert loop.window == []  # the evidence was about the library before the edit
    report = loop.report()
    assert report["edits_accepted"] == 1 and report["validation_gain_accepted"] > 0
    assert report["heldout_gain_accepted"] > 0  # the planted harm is real on problems the gate never saw
    again = EditLoop(library, cfg, loop.world)
    again.load_state_dict(loop.state_dict())
    assert again.report() == report


def test_per_problem_heldout_scores_pair_an_accepted_edits_gain_and_count_one_beyond_its_noise(library):
    """With per-problem held-out scores the gain is the mean paired difference, with its standard error; an
    accepted edit that lowers held-out scores by more than one standard error is counted (here a held-out set
    scored against the validation one: the prune that helps validation hurts it)."""
    questions = np.arange(60)
    for sign, worse in ((1, 0), (-1, 1)):
        lib = type(library)(library.engine, f"per-problem-{sign}")
        seed_library(lib)
        world = World(evaluate, questions, np.full(60, 7), write=lambda d, trace, rng: Edit("prune", d.target)
                      if d.action == "prune" else None,
                      heldout=lambda skills, s=sign: s * evaluate(skills, questions + 1000, np.full(60, 3)))
        loop = EditLoop(lib, SkillsConfig(max_edits=3), world)
        loop.observe(groups({x.name for x in lib.current()}, questions=70, seed=0))
        assert loop.run(np.random.default_rng(0)).accepted == 1
        gain = loop.gains[0]
        assert gain["heldout_se"] > 0 and np.sign(gain["heldout_gain"]) == sign
        assert loop.report()["heldout_worse_accepted"] == worse


def test_an_oversized_rewrite_is_refused_before_the_gate(library):
    seed_library(library)
    cfg = SkillsConfig(max_edits=3, skill_tokens=10)
    gated = []
    loop = loop_of(library, cfg, lambda d, trace, rng: Edit("revise", d.target, body="word " * 11), heldout=False)
    loop.world.gated = lambda d, result, candidate: gated.append(d)
    loop.observe(groups({s.name for s in library.current()}, questions=70, seed=0))
    done = loop.run(np.random.default_rng(0))
    assert done.accepted == done.rejected == 0 and gated == []
    assert loop.report()["edits_refused_skill_tokens"] >= 1
    assert all(v.version == 1 for v in library.versions())  # nothing written
