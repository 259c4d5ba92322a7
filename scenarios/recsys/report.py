"""The run summary of a recsys run (``catallax run recsys --json``), team or market mode.

NDCG@k, Recall@50 and coverage are measured on the *test* users only: the
initial library, and each arm's final library (in market mode: the team the
market fields, each role's highest bidder). ``harmful_pruned_<arm>`` counts the
planted harmful skills whose last accepted version in that arm's library is a
prune. The baselines (baselines.py) are scored on the same test users and split: NDCG@k in ``baselines``,
Recall@50 in ``baselines_recall50``; ``baselines_tuned`` holds each tuned baseline's chosen hyper-parameters
and validation NDCG@k, ``baseline_best`` the one best on validation (the library ``start = "best_baseline"``
begins from). With several arms (``compare`` or planted harm), ``arms`` holds each arm's final NDCG@k, Recall@50
and coverage, ``baselines_coverage`` each baseline's coverage of its top k, and ``baseline_blend`` the tuned blend
the default start holds, scored alone: the comparison's columns, kept out of a single arm's summary. In team mode
each arm also carries its test users' paired differences (against the best tuned baseline, the blend alone and, beside
grse, GRSE minus the arm), the born skills it kept with the held-out gain each carries (births.carried), its mean edit
pass seconds, and how many of the planted skills the validation set can see (``planted_harm``: harm.py) it pruned. Without genre data, ``inactive`` lists the genre-based operators, feature and check.
"""

from __future__ import annotations

import numpy as np

from scenarios.recsys import baselines, births, ops, seeds
from scenarios.recsys.data import TEST, VALIDATION
from scenarios.recsys.pipeline import Compiled
from scenarios.recsys.ranking import coverage, ndcg, recall
from skills import SkillLibrary


def pruned(library: SkillLibrary, names: list[str]) -> list[str]:
    """Which of ``names`` ended pruned: their newest version that was not rejected has status pruned."""
    last = {}
    for v in library.versions():
        if v.status != "rejected":
            last[v.name] = v.status
    return [n for n in names if last.get(n) == "pruned"]


def _mean_se(d: np.ndarray) -> tuple[float, float]:
    return round(float(d.mean()), 6), round(float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0, 6)


def paired(model, k: int) -> dict[str, dict]:
    """Per arm, its test users' NDCG@k paired by user against: the best tuned baseline (``ndcg10_se_vs_best``: the
    noise of the test users the comparison's floor reads, experiments/recsys_compare.py), the tuned blend alone
    (``vs_blend``: mean and standard error) and, beside a grse arm, GRSE (``grse_minus``: GRSE minus the arm)."""
    world = model.world_data
    users = world.data.users(TEST)
    best = ndcg(baselines.recommend(world.signals.tuned.best, world.data, world.signals, users, k),
                world.data.targets[users], k)
    blend = world.pipeline.run(seeds.compiled(seeds.tuned_blend(world.signals.tuned.best, world.pipeline,
                                                                world.data.users(VALIDATION))), users).ndcg
    scores = {name: world.pipeline.run(Compiled.of(model.arms[name].library.current()), users).ndcg
              for name in model.arm_names}
    out = {}
    for name, mine in scores.items():
        out[name] = {f"ndcg{k}_se_vs_best": _mean_se(mine - best)[1], "vs_blend": _mean_se(mine - blend)}
        if "grse" in scores and name != "grse":
            out[name]["grse_minus"] = _mean_se(scores["grse"] - mine)
    return out


def pruned_detectable(library: SkillLibrary, harm: list[dict]) -> dict:
    """Of the planted skills whose harm the validation set can detect (harm.py), how many this library pruned."""
    seen = [h["skill"] for h in harm if h["detectable"]]
    return {"detectable": len(seen), "pruned": len(pruned(library, seen))}


def baseline_scores(world, k: int) -> dict[str, dict]:
    """The summary's baseline keys: test NDCG@k, Recall@50 and coverage of each, and what the tuned ones chose."""
    users, data, tuned = world.data.users(TEST), world.data, world.signals.tuned
    at_k, at_50, covered = {}, {}, {}
    for name in baselines.BASELINES:
        recs = baselines.recommend(name, data, world.signals, users, max(k, 50))
        at_k[name] = round(float(ndcg(recs, data.targets[users], k).mean()), 6)
        at_50[name] = round(float(recall(recs, data.targets[users], 50).mean()), 6)
        covered[name] = round(coverage(recs, data.n_items, k), 6)
    return {"baselines": at_k, "baselines_recall50": at_50, "baselines_coverage": covered, "baseline_best": tuned.best,
            "baselines_tuned": {n: {**tuned.params[n], "validation_ndcg": round(tuned.validation[n], 6)}
                                for n in tuned.params}}


def blend_scores(world, k: int) -> dict:
    """The tuned blend alone on the test users: seeds.tuned_blend, the best tuned baseline or a blend of it with a
    second one where validation shows a gain. Why a row of its own: the default start holds the blend and the floor
    reweights towards it, so what the edits added is the final library against the blend, not against the best
    single baseline (experiments/recsys_compare.py sets them side by side)."""
    skills = seeds.tuned_blend(world.signals.tuned.best, world.pipeline, world.data.users(VALIDATION))
    out = world.pipeline.run(seeds.compiled(skills), world.data.users(TEST))
    return {"skills": [s[3] for s in skills if s[1] == "rank"], f"ndcg{k}": round(float(out.ndcg.mean()), 6),
            "recall50": round(float(out.recall50.mean()), 6), "coverage": round(coverage(out.final, world.data.n_items), 6)}


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
        "edit_loop": model.arms[main].report(),  # counts; accepted edits' validation gain vs test (held-out) gain
        **baseline_scores(model.world_data, k),
    }
    covered = out.pop("baselines_coverage")  # a column of the comparison: a single arm's summary stays as it was
    if cfg.plant_harmful:
        planted = seeds.planted(cfg.plant_harmful, cfg.harm)
        out["harmful_planted"] = len(planted)
        for name in model.arm_names:
            out[f"harmful_pruned_{name.replace('-', '_')}"] = len(pruned(model.arms[name].library, planted))
    if len(model.arm_names) > 1:
        out["baselines_coverage"] = covered
        out["baseline_blend"] = blend_scores(model.world_data, k)
        out["arms"] = {name: {f"ndcg{k}_final": round(final[name]["ndcg"], 6),
                              "recall50_final": round(final[name]["recall50"], 6),
                              "coverage_final": round(final[name]["coverage"], 6),
                              "validation_ndcg_final": round(final[name]["validation_ndcg"], 6),
                              "edits_accepted": model.counts[name]["accepted"],
                              "edits_rejected": model.counts[name]["rejected"],
                              "edit_loop": model.arms[name].report()} for name in model.arm_names}
        if cfg.mode == "team":  # market mode's final team is not its library's current skills
            test = model.world_data.data.users(TEST)
            for name, columns in paired(model, k).items():
                arm = model.arms[name]
                out["arms"][name] |= columns
                out["arms"][name]["births"] = births.carried(arm.library, lambda skills: arm.evaluate(skills, test))
                out["arms"][name]["edit_pass_seconds"] = round(float(np.mean(arm.pass_seconds)), 4) \
                    if arm.pass_seconds else 0.0
                if "planted_harm" in model.initial:
                    out["arms"][name]["planted_detectable"] = pruned_detectable(arm.library, model.initial["planted_harm"])
            if "planted_harm" in model.initial:
                out["planted_harm"] = model.initial["planted_harm"]
    learned = model.world_data.pipeline.learned
    if learned is not None:  # agents.objective trained the recall's learned source: the same final library without it
        with learned.untrained():
            untrained = model.final(main)
        out["learned_recall"] = {"objective": learned.objective.name, "updates": learned.version,
                                 "test_hit_rate_initial": round(model.initial["learned_hit_rate"], 6),
                                 "test_hit_rate_final": round(final[main]["learned_hit_rate"], 6),
                                 f"ndcg{k}_final_untrained": round(untrained["ndcg"], 6),
                                 "recall50_final_untrained": round(untrained["recall50"], 6)}
    if model.world_data.data.n_genres < 2:  # no genre data: these ran on one genre and did nothing
        out["inactive"] = list(ops.GENRE_BASED)
    extra = getattr(model, "extra_metrics", None)
    if extra is not None:
        out.update(extra())
    return out
