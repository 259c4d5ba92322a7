"""The zoo part of the recsys comparison (``python -m experiments.recsys_compare --zoo N``): one run per zoo world
(scenarios/recsys/zoo.py), one row per world, and the distribution over worlds.

Why a distribution: a table of hand-picked worlds shows where a method works; the share of worlds nobody chose
on which it holds is the claim. Each world is written by its seed and run once, at that seed, with
the config's defaults (``recsys.data = movielens`` on the written file, three planted harmful skills that hurt on
any data, ``compare = true``). GRSE "holds" on a world where its final test NDCG@10 is at least the best tuned
baseline's (chosen on validation) minus one standard error of the paired per-user difference on the test
users, and is "above" where it is strictly higher. The tuned blend the start holds (seeds.tuned_blend) is set
beside it, scored alone: what the edits added over the start's tuned part.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from experiments import harness, recsys_gain
from scenarios.recsys import zoo


def row(seed: int, summary: dict, seconds: float) -> dict:
    """One world's row: what it was drawn as, and each arm against the best tuned baseline."""
    r, arms = zoo.recipe(seed), summary["arms"]
    best = summary["baselines"][summary["baseline_best"]]
    grse = arms["grse"]
    return {"world": seed, "layout": r.layout, "feedback": r.feedback, "genres": r.genres_written,
            "users": r.world["users"], "items": r.world["items"], "mean history": round(r.world["mean_history"], 1),
            "sequential": round(r.sequential, 2), "popular": round(r.popular, 2), "drift": round(r.world["drift"], 2),
            "best tuned": summary["baseline_best"], "best tuned NDCG@10": round(best, 4),
            "tuned blend": " + ".join(summary["baseline_blend"]["skills"]),
            "tuned blend NDCG@10": round(summary["baseline_blend"]["ndcg10"], 4),
            "initial": round(summary["ndcg10_initial"], 4),
            **{arm: round(arms[arm]["ndcg10_final"], 4) for arm in ("grse", "presence", "random")},
            "gap": round(grse["ndcg10_final"] - best, 4), "se": grse["ndcg10_se_vs_best"],
            **{f"pruned {arm}": summary[f"harmful_pruned_{arm}"] for arm in ("grse", "presence", "random")},
            "planted": summary["harmful_planted"], "seconds": round(seconds), **recsys_gain.measured(summary)}


def distribution(rows: list[dict]) -> str:
    """The shares and quantiles over worlds, as a Markdown table (one row per statistic)."""
    n = len(rows)
    gap = np.array([r["gap"] for r in rows])
    se = np.array([r["se"] for r in rows])
    grse, blend, best = (np.array([r[c] for r in rows]) for c in ("grse", "tuned blend NDCG@10", "best tuned NDCG@10"))
    share = lambda flags: f"{int(np.sum(flags))} of {n} ({100 * np.mean(flags):.0f}%)"  # noqa: E731
    q = np.quantile(gap, [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    every = {arm: [r[f"pruned {arm}"] == r["planted"] for r in rows] for arm in ("grse", "presence", "random")}
    lines = ["| statistic | value |", "|---|---|",
             f"| worlds | {n} |",
             f"| GRSE ≥ best tuned − 1 SE | {share(gap >= -se)} |",
             f"| GRSE > best tuned | {share(gap > 0)} |",
             f"| GRSE − best tuned NDCG@10: min / 10% / 25% / median / 75% / 90% / max | "
             + " / ".join(f"{x:+.4f}" for x in q) + " |",
             f"| GRSE − best tuned, mean ± sd | {harness.mean_sd(gap, 4, sign=True)} |",
             *(f"| all planted pruned: {arm} | {share(every[arm])} |" for arm in ("grse", "presence", "random")),
             f"| GRSE ≥ presence | {share([r['grse'] >= r['presence'] for r in rows])} |",
             f"| GRSE ≥ random (matched) | {share([r['grse'] >= r['random'] for r in rows])} |",
             f"| tuned blend of two chosen (validation gain, p ≤ 0.1) | {share(['+' in r['tuned blend'] for r in rows])} |",
             f"| tuned blend > best tuned | {share(blend > best)} |",
             f"| GRSE > tuned blend | {share(grse > blend)} |",
             f"| GRSE − tuned blend NDCG@10: 10% / median / 90%; mean | "
             + " / ".join(f"{x:+.4f}" for x in np.quantile(grse - blend, [0.1, 0.5, 0.9]))
             + f"; {(grse - blend).mean():+.4f} |"]
    return "\n".join(lines)


WORLD_COLUMNS = ("world", "layout", "feedback", "genres", "mean history", "sequential", "popular", "best tuned",
                 "best tuned NDCG@10", "tuned blend NDCG@10", "grse", "presence", "gap", "se", "pruned grse", "pruned presence")


def worlds_table(rows: list[dict]) -> str:
    """Every world's row (the distribution's material), as a Markdown table."""
    return harness.markdown(list(WORLD_COLUMNS), [[r[c] for c in WORLD_COLUMNS] for r in rows])


def main(argv=None) -> int:
    """Tabulate the rows a ``--zoo`` run kept so far (its ``*_zoo_partial.jsonl``: a run stopped at a deadline)."""
    import argparse

    from experiments import rows as results

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("partial", type=Path, help="the rows file a --zoo run rewrites after every world")
    harness.add_flags(p, grid=False, sets=False, rows_required=True,
                      rows_help="write the tables here (as recsys_compare --rows does)")
    args = harness.parse(p, argv)
    rows = [json.loads(line) for line in args.partial.read_text().splitlines() if line.strip()]
    tables = {"zoo": distribution(rows), "zoo_worlds": worlds_table(rows), **recsys_gain.tables("zoo", rows)}
    print("\n\n".join(tables.values()))
    results.write_tables(args.rows, tables, "experiments.recsys_zoo", argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
