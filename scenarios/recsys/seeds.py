"""The library a recsys run starts from: a workable pipeline with flaws (or the best tuned baseline, or both),
and K planted harmful skills.

The initial skills cover every role but are not tuned: co-visitation and
embedding neighbours read too much of the history, the diversity cap is too
strict, recency is too weak. Editing them can only be judged on the data.

The planted harmful skills are business rules and ranking habits that cost
NDCG, each firing only for users whose requests are *easier* than average
(long or fresh histories), so they ride along with success: a critic that
credits a skill by the mean reward of the rollouts it appears in rates them
well; contrasting rollouts of the same question does not.

These lean on the synthetic world (sponsored flags, release dates, genres); ``harm = "any_data"`` plants
:data:`HARMFUL_ANY_DATA` instead: cutting the list to 5 items, ranking by a draw no data informs, pinning
items the user already consumed (never a target). Each hurts by construction on any data, whatever
the others do, and fires for a segment cut at the data's own medians (:func:`harmful`), so that it meets
about half of the requests.

A library of the best baseline alone has nothing to blame: the diagnoser only edits skills with negative
credit, so without planted harm GRSE leaves it as it is; ``initial+best_baseline`` gives it material.
"""

from __future__ import annotations

import weakref

import numpy as np

from scenarios.recsys import edits, rules
from scenarios.recsys.data import VALIDATION
from skills import import_library

INITIAL = (  # name, role, description, rule
    ("recall-covis", "recall", "Candidates co-visited with the user's recent items.",
     "always -> covis(seeds=10, weight=1)"),
    ("recall-embed", "recall", "Candidates near the user's recent items in the latent space.",
     "always -> embed(seeds=20, weight=0.5)"),
    ("recall-knn", "recall", "Candidates similar to the user's items over all users.",
     "always -> knn(seeds=30, weight=0.5)"),
    ("recall-popular", "recall", "A few popular candidates for every user.", "always -> popular(weight=0.3)"),
    ("rank-mf", "rank", "Score candidates by the matrix-factorisation fit.", "always -> mf(weight=1)"),
    ("rank-recency", "rank", "Prefer recently released items.", "always -> recency(weight=0.3, days=240)"),
    ("rank-popularity", "rank", "Prefer popular items a little.", "always -> popularity(weight=0.5)"),
    ("rank-covis", "rank", "Prefer items co-visited with the history.", "always -> covis(seeds=20, weight=0.3)"),
    ("rank-genre", "rank", "Prefer the genres of the history.", "always -> genre(seeds=40, weight=0.3)"),
    ("rerank-diversify", "rerank", "Spread the top of the list over genres.", "always -> diversify(cap=2)"),
    ("rerank-fresh", "rerank", "Show fresh items to users who watch fresh items.",
     "novelty >= 30 -> boost_new(n=2, days=30)"),
)
HARMFUL = (
    ("rerank-sponsored", "rerank", "Business rule: pin sponsored titles for heavy users.",
     "history >= 25 -> pin_sponsored(n=2)"),
    ("rank-classics", "rank", "Recommend timeless catalogue classics to trend-followers.",
     "novelty >= 40 -> classics(weight=2, days=365)"),
    ("rank-blockbusters", "rank", "Users with broad taste want the blockbusters.",
     "genres >= 5 -> popularity(weight=5)"),
)


HARMFUL_ANY_DATA = (  # {feature}: that feature's median over the users
    ("rerank-short-list", "rerank", "Mainstream users decide fast: show them a short list.",
     "mainstream >= {mainstream} -> truncate(n=5)"),
    ("rank-surprise", "rank", "Trend-followers like surprises: shake their ranking up.",
     "novelty >= {novelty} -> noise(weight=6)"),
    ("rerank-pin-consumed", "rerank", "Remind heavy users of what they watched last.",
     "history >= {history} -> pin_consumed(n=2)"),
)
"""Each hurts whatever the rest of the library does, so that pruning any one of them helps on its own
(tests/scenarios/test_recsys_baselines.py checks every subset): a list cut to 5 items loses whatever the
rank put below them, a draw no data informs drowns the rank's terms, and consumed items (never a target)
take the top of the list. An earlier set (the MF fit inverted, the top 3 buried) failed that: burying
the top undid the pins and the inverted fit, and on sparse worlds the inverted fit helped, so the gate rightly
refused their prunes one at a time."""


def harmful(harm: str, features, easy=None) -> tuple:
    """The planted harmful skills of ``recsys.harm``; ``features``: [U, F] request features (rules.FEATURES).

    ``easy``: (users, score) of some users, higher where a request is easier: each any_data skill then fires on
    the side of its feature's median whose users score higher (``>=`` or ``<``), so that it rides along with
    success on every world (a heavy user is the easy one in one world and the hard one in another; planted on
    the hard side, a skill is blamed by presence credit too, and the comparison would show nothing)."""
    if harm == "business":
        return HARMFUL
    medians = {f: median(features[:, j]) for j, f in enumerate(rules.FEATURES)}
    out = []
    for name, role, description, rule in HARMFUL_ANY_DATA:
        if easy is not None:
            feature = rule.split()[0]
            users, score = easy
            above = features[users, rules.FEATURES.index(feature)] >= medians[feature]
            if 0 < above.sum() < above.size and score[above].mean() < score[~above].mean():
                rule = rule.replace(">=", "<", 1)
        out.append((name, role, description, rule.format(**medians)))
    return tuple(out)


def median(values) -> int:
    """The threshold t >= 1 at which ``values >= t`` holds for the share of users nearest one half: the median where
    the feature spreads, and not a cut that meets almost no one where most users share one value (a feature 0 for
    most users has median 0, and ``>= 1`` would meet only the rest)."""
    values = np.asarray(values)
    cuts = np.unique(np.maximum(values, 1))
    share = (values[None, :] >= cuts[:, None]).mean(1)
    return int(cuts[int(np.argmin(np.abs(share - 0.5)))])


def easiness(world, users) -> tuple:
    """(users, each one's NDCG@k under the best tuned baseline): how easy each request is (:func:`harmful`)."""
    from scenarios.recsys.baselines import recommend
    from scenarios.recsys.ranking import ndcg

    data, k = world.data, world.pipeline.cfg.k
    recs = recommend(world.signals.tuned.best, data, world.signals, users, k)
    return users, ndcg(recs, data.targets[users], k)


def best_baseline(name: str) -> tuple:
    """The library of one tuned baseline (tuned.py): it proposes and ranks the candidates, nothing reranks, so
    the pipeline recommends the baseline's own top k (a recall capped at ``candidates`` items aside)."""
    return ((f"recall-{name.replace('_', '-')}", "recall", f"Candidates from the tuned {name} baseline.",
             f"always -> {name}(weight=1)"),
            (f"rank-{name.replace('_', '-')}", "rank", f"Rank by the tuned {name} baseline.",
             f"always -> {name}(weight=1)"))


BLEND_P = 0.1
"""The p-value at which a blend of two tuned baselines replaces the best one alone (:func:`tuned_blend`): the gate's
test at its default confidence (skills/gate.py)."""


def tuned_blend(best: str, pipeline, users) -> tuple:
    """The recall and rank skills of the best tuned baseline alone, or beside one other tuned baseline (the best
    holding a share of :data:`edits.SHARES` of each role's weight), whichever scores best on ``users`` (validation)
    among the blends whose gain over the best alone passes the gate's paired test (p <= :data:`BLEND_P`).

    Why: the zoo's worlds mix structures (next-item chains, popularity draws, latent taste), and each tuned
    baseline models one; on the development worlds a validated blend of two was above the best alone on the test
    users in most worlds, where the hand-made terms beside one baseline rarely were. The floor (edits.floor) then
    reweights towards the blend, and the baseline alone it offers at the end is the blend."""
    chosen = _BLENDS.setdefault(pipeline, {})  # the arms of a run choose once
    key = (best, np.asarray(users).tobytes())
    if key not in chosen:
        chosen[key] = _choose_blend(best, pipeline, users)
    return chosen[key]


_BLENDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _choose_blend(best: str, pipeline, users) -> tuple:
    from scenarios.recsys.tuned import TUNED
    from skills.gate import p_improves

    alone = best_baseline(best)
    score = lambda skills: pipeline.evaluate(compiled(skills), users)  # noqa: E731
    base = score(alone)
    chosen, top = alone, 0.0
    for other in (n for n in TUNED if n != best):
        for share in edits.SHARES[:-1]:
            blend = _weighted(alone, share) + _weighted(best_baseline(other), 1 - share)
            d = score(blend) - base
            if d.mean() > top and p_improves(d) <= BLEND_P:
                chosen, top = blend, float(d.mean())
    return chosen


def _weighted(skills: tuple, weight: float) -> tuple:
    """Tuned-baseline skills (``always -> name(weight=1)``) at ``weight``."""
    return tuple((name, role, description, rule.replace("weight=1)", f"weight={weight:g})"))
                 for name, role, description, rule in skills)


def combined(best: str, pipeline, users) -> tuple:
    """The initial skills beside the tuned baselines' (:func:`tuned_blend`), the baselines holding the share of each
    role's weight (recall: of the sources, rank: of the terms) that scores best on ``users`` (validation; on ties the
    weights as written, then the smaller share).

    Why: summed beside the hand-made terms on equal weights, a strong baseline is diluted (a rank that sums the
    z-scores of eight terms lets the seven weak ones outvote it), so the start could sit far below the baseline it
    contains, and edits that double or halve one weight at a time must climb back first. The role's total weight is
    kept, so a planted skill weighs as much against the library whatever share is chosen. The initial rerank steps
    are kept or left out the same way (a diversity cap of 2 per genre costs much where the genres are many and
    narrow), so that the start is never below the baseline alone on validation by more than a 5% share of the
    hand-made terms."""
    tuned = tuned_blend(best, pipeline, users)
    mine = {s[0] for s in tuned}
    options = []
    for skills in (INITIAL + tuned, tuple(s for s in INITIAL if s[1] != "rerank") + tuned):
        options += [skills, *(_shared(skills, mine, share) for share in edits.SHARES)]
    scores = [pipeline.evaluate(compiled(o), users).mean() for o in options]
    return options[int(np.argmax(scores))]


def compiled(skills: tuple):
    """Start skills ((name, role, description, rule) tuples) as the pipeline runs them, before any library holds
    them."""
    from scenarios.recsys.pipeline import Compiled

    return Compiled.of([_Written(*s) for s in skills])


class _Written:
    """A start skill as Compiled.of reads it (name, role, rule), before it is in a library."""

    def __init__(self, name, role, description, rule):
        self.name, self.role, self.rule, self.body = name, role, rule, ""


def _shared(skills: tuple, baseline: set[str], share: float) -> tuple:
    """``skills`` with the weights of recall and rank each rescaled so that the baseline's skills hold ``share`` of
    their role's total (edits.reshare; rerank's steps run in order and carry no weight)."""
    written = {}
    for role in edits.WEIGHTED:
        written |= edits.reshare([_Written(*s) for s in skills if s[1] == role], baseline, share)
    return tuple((name, role, description, written.get(name, rule)) for name, role, description, rule in skills)


def start(name: str, best: str, pipeline=None, users=None) -> tuple:
    """The library ``recsys.start = name`` names; ``best``: the tuned baseline best on validation; ``pipeline`` and
    the validation ``users`` choose the baseline's share of ``initial+best_baseline`` (:func:`combined`)."""
    if name == "initial+best_baseline":
        return combined(best, pipeline, users)
    return {"initial": INITIAL, "best_baseline": best_baseline(best)}[name]


def planted(k: int, harm: str = "business") -> list[str]:
    return [name for name, *_ in (HARMFUL if harm == "business" else HARMFUL_ANY_DATA)[:k]]


def seed(library, plant_harmful: int = 0, skills: tuple = INITIAL, harm: tuple = HARMFUL) -> None:
    """Write ``skills`` (plus the first ``plant_harmful`` of the ``harm`` skills) as ungated adds."""
    for name, role, description, rule in skills + harm[:plant_harmful]:
        library.add(name, description, rules.body(rules.parse(rule, role), role), rule=rule, role=role)


def write_start(library, cfg, world, trained: tuple = ()) -> None:
    """The library a run starts from, team and market mode alike: ``recsys.start``, where a
    ``recsys.seed_library`` folder stands for the initial skills, then ``trained`` (the learned recall's skill) and
    the planted harmful skills. A skill the folder already holds (an exported run's best baseline or planted
    skill) is not added twice."""
    harm = harmful(cfg.harm, world.pipeline.features, easiness(world, world.data.users(VALIDATION)))
    if cfg.seed_library:
        import_library(library, cfg.seed_library)
        held = {s.name for s in library.versions()}  # a skill the exported run pruned stays pruned
        baseline = best_baseline(world.signals.tuned.best) if cfg.start == "initial+best_baseline" else ()
        seed(library, 0, tuple(s for s in baseline + trained + harm[: cfg.plant_harmful] if s[0] not in held))
    else:
        seed(library, cfg.plant_harmful, start(cfg.start, world.signals.tuned.best, world.pipeline,
                                               world.data.users(VALIDATION)) + trained, harm)
