"""The library a recsys run starts from: a workable pipeline with flaws, and K planted harmful skills.

The initial skills cover every role but are not tuned: co-visitation and
embedding neighbours read too much of the history, the diversity cap is too
strict, recency is too weak. Editing them can only be judged on the data.

The planted harmful skills are business rules and ranking habits that cost
NDCG, each firing only for users whose requests are *easier* than average
(long or fresh histories), so they ride along with success: a critic that
credits a skill by the mean reward of the rollouts it appears in rates them
well; contrasting rollouts of the same question does not.
"""

from __future__ import annotations

from scenarios.recsys import rules

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


def planted(k: int) -> list[str]:
    return [name for name, *_ in HARMFUL[:k]]


def seed(library, plant_harmful: int = 0) -> None:
    """Write the initial library (plus the first ``plant_harmful`` harmful skills) as ungated adds."""
    for name, role, description, rule in INITIAL + HARMFUL[:plant_harmful]:
        library.add(name, description, rules.body(rules.parse(rule, role), role), rule=rule, role=role)
