"""The run summary of a recsys run (``catallax run recsys --json``), team or market mode.

NDCG@k, Recall@50 and coverage are measured on the *test* users only: the
initial library, and each arm's final library (in market mode: the team the
market fields, each role's highest bidder). ``harmful_pruned_<arm>`` counts the
planted harmful skills whose last accepted version in that arm's library is a
prune. The classic baselines are scored on the same test users and split.
"""

from __future__ import annotations

from scenarios.recsys import baselines, seeds
from scenarios.recsys.data import TEST
from scenarios.recsys.ranking import ndcg
from skills import SkillLibrary


def pruned(library: SkillLibrary, names: list[str]) -> list[str]:
    """Which of ``names`` ended pruned: their newest version that was not rejected has status pruned."""
    last = {}
    for v in library.versions():
        if v.status != "rejected":
            last[v.name] = v.status
    return [n for n in names if last.get(n) == "pruned"]


def baseline_scores(world, k: int) -> dict[str, float]:
    users = world.data.users(TEST)
    return {name: round(float(ndcg(baselines.recommend(name, world.data, world.signals, users, k),
                                   world.data.targets[users], k).mean()), 6) for name in baselines.BASELINES}


def summary(model, cfg) -> dict:
    k = cfg.k
    main = model.main
    final = {name: model.final(name) for name in model.arm_names}
    out = {
        f"ndcg{k}_initial": round(model.initial["ndcg"], 6),
        f"ndcg{k}_final": round(final[main]["ndcg"], 6),
        "recall50_initial": round(model.initial["recall50"], 6),
        "recall50_final": round(final[main]["recall50"], 6),
        "coverage_initial": round(model.initial["coverage"], 6),
        "coverage_final": round(final[main]["coverage"], 6),
        "validation_ndcg_initial": round(model.initial["validation_ndcg"], 6),
        "validation_ndcg_final": round(final[main]["validation_ndcg"], 6),
        "edits_accepted": model.counts[main]["accepted"],
        "edits_rejected": model.counts[main]["rejected"],
        "mode": cfg.mode,
        "credit": main,
        "skills_final": sorted(s.label for s in model.arms[main].library.current()),
        "baselines": baseline_scores(model.world_data, k),
    }
    if cfg.plant_harmful:
        planted = seeds.planted(cfg.plant_harmful)
        out["harmful_planted"] = len(planted)
        for name in model.arm_names:
            out[f"harmful_pruned_{name.replace('-', '_')}"] = len(pruned(model.arms[name].library, planted))
    if len(model.arm_names) > 1:
        out["arms"] = {name: {f"ndcg{k}_final": round(final[name]["ndcg"], 6),
                              "validation_ndcg_final": round(final[name]["validation_ndcg"], 6),
                              "edits_accepted": model.counts[name]["accepted"],
                              "edits_rejected": model.counts[name]["rejected"]} for name in model.arm_names}
    extra = getattr(model, "extra_metrics", None)
    if extra is not None:
        out.update(extra())
    return out
