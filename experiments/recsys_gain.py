"""What the edits add over the tuned blend, per world and over worlds (experiments/recsys_compare.py's tables
``<set>_gain`` and ``<set>_gain_worlds``, for the zoo and for the shipped worlds).

Why beside the zoo's distribution: holding the best tuned baseline is the blend's doing (the start holds it, the
floor returns to it); the claim of the edits that add (births, scenarios/recsys/births.py) is a gain over the blend
alone. Every difference is paired by test user and carries its 95% interval; the planted skills count only where
the validation set could see their harm (scenarios/recsys/harm.py), the others are counted apart.
"""

from __future__ import annotations

import numpy as np

from experiments import harness


def measured(summary: dict) -> dict:
    """One run's columns: GRSE against the tuned blend alone, presence and random (paired by test user: mean and
    standard error), the born skills that carried a gain, each planted skill's harm and the gate's power to see it,
    and the pruning of the detectable ones."""
    arms, grse = summary["arms"], summary["arms"]["grse"]
    harm = summary.get("planted_harm", [])
    return {"blend gain": grse["vs_blend"][0], "blend se": grse["vs_blend"][1],
            **{f"over {arm}": arms[arm]["grse_minus"][0] for arm in ("presence", "random")},
            **{f"over {arm} se": arms[arm]["grse_minus"][1] for arm in ("presence", "random")},
            "births carried": "; ".join(f"{b['skill']} `{b['rule']}` ({b['born']}): {b['gain']:+.4f} ± "
                                        f"{1.96 * b['se']:.4f}" for b in grse["births"]) or "none",
            "births kept": len(grse["births"]),
            "births gain": round(sum(b["gain"] for b in grse["births"]), 6),
            "harm": " / ".join(f"{h['harm']:+.4f} [{h['low']:+.4f}, {h['high']:+.4f}]" for h in harm),
            "power": " / ".join(f"{h['power']:.2f}" for h in harm),
            "detectable": sum(h["detectable"] for h in harm),
            **{f"pruned detectable {arm}": arms[arm]["planted_detectable"]["pruned"]
               for arm in ("grse", "presence", "random")},
            "edit pass s": grse["edit_pass_seconds"]}


def run_row(world: str, summary: dict, seconds: float) -> dict:
    """A row of a shipped world's seed (the zoo's rows, experiments/recsys_zoo.py, carry the same columns)."""
    arms, best = summary["arms"], summary["baselines"][summary["baseline_best"]]
    return {"world": world, "best tuned": summary["baseline_best"], "best tuned NDCG@10": round(best, 4),
            "tuned blend NDCG@10": round(summary["baseline_blend"]["ndcg10"], 4),
            **{arm: round(arms[arm]["ndcg10_final"], 4) for arm in ("grse", "presence", "random")},
            "gap": round(arms["grse"]["ndcg10_final"] - best, 4), "se": arms["grse"]["ndcg10_se_vs_best"],
            **{f"pruned {arm}": summary[f"harmful_pruned_{arm}"] for arm in ("grse", "presence", "random")},
            "planted": summary["harmful_planted"], "seconds": round(seconds), **measured(summary)}


def _ci(mean: float, se: float) -> str:
    """The mean and its 95% interval's half-width."""
    return harness.pm(mean, 1.96 * se, 4, sign=True)


def targets(rows: list[dict]) -> str:
    """The shares over worlds the claim rests on, as a Markdown table (one row per statistic)."""
    n = len(rows)
    share = lambda flags: f"{int(np.sum(flags))} of {n} ({100 * np.mean(flags):.0f}%)"  # noqa: E731
    gain, se = np.array([r["blend gain"] for r in rows]), np.array([r["blend se"] for r in rows])
    gap, gap_se = np.array([r["gap"] for r in rows]), np.array([r["se"] for r in rows])
    seen = [r for r in rows if r["detectable"]]
    carried = [r for r in rows if r["births gain"] > 0]
    lines = ["| statistic | value |", "|---|---|", f"| worlds | {n} |",
             f"| GRSE > tuned blend alone | {share(gain > 0)} |",
             f"| GRSE − tuned blend: median; 10% / 90%; mean | {np.median(gain):+.4f}; "
             f"{np.quantile(gain, 0.1):+.4f} / {np.quantile(gain, 0.9):+.4f}; {gain.mean():+.4f} |",
             f"| GRSE − tuned blend, 95% interval above 0 / below 0 | {share(gain - 1.96 * se > 0)} / "
             f"{share(gain + 1.96 * se < 0)} |",
             f"| GRSE more than 1 SE below the best tuned | {int(np.sum(gap < -gap_se))} of {n} |",
             f"| a born skill in the final library | {share([r['births kept'] > 0 for r in rows])} |",
             f"| born skills' summed held-out gain > 0 | {share([r['births gain'] > 0 for r in rows])} |",
             f"| born skills' summed gain, median where > 0 | "
             f"{np.median([r['births gain'] for r in carried]) if carried else 0.0:+.4f} |",
             f"| planted skills the validation set can detect (power ≥ 0.8) | "
             f"{sum(r['detectable'] for r in rows)} of {sum(r['planted'] for r in rows)} |",
             f"| worlds with a detectable planted skill | {share([r['detectable'] > 0 for r in rows])} |",
             *(f"| all detectable planted pruned: {arm} | "
               + (f"{sum(r[f'pruned detectable {arm}'] == r['detectable'] for r in seen)} of {len(seen)} "
                  f"({100 * np.mean([r[f'pruned detectable {arm}'] == r['detectable'] for r in seen]):.0f}%)"
                  if seen else "no world") + " |" for arm in ("grse", "presence", "random")),
             f"| GRSE ≥ presence | {share([r['over presence'] >= 0 for r in rows])} |",
             f"| GRSE ≥ random (matched) | {share([r['over random'] >= 0 for r in rows])} |",
             f"| edit pass, seconds: median / max | {np.median([r['edit pass s'] for r in rows]):.2f} / "
             f"{max(r['edit pass s'] for r in rows):.2f} |",
             f"| a world's run (5 arms, baselines), seconds: median / sum | "
             f"{np.median([r['seconds'] for r in rows]):.0f} / {sum(r['seconds'] for r in rows)} |"]
    return "\n".join(lines)


COLUMNS = ("world", "grse", "GRSE − tuned blend", "GRSE − best tuned (SE)", "GRSE − presence", "GRSE − random",
           "born skills kept: held-out gain ± 95%", "planted harm [95%]", "gate power", "pruned detectable GRSE / presence")


def worlds(rows: list[dict]) -> str:
    """Every world's paired differences (95% intervals), the born skills it kept and the planted skills' harm."""
    return harness.markdown(list(COLUMNS), [
        [r["world"], r["grse"], _ci(r["blend gain"], r["blend se"]), f"{r['gap']:+.4f} ({r['se']:.4f})",
         _ci(r["over presence"], r["over presence se"]), _ci(r["over random"], r["over random se"]),
         r["births carried"], r["harm"], r["power"],
         f"{r['pruned detectable grse']} / {r['pruned detectable presence']} of {r['detectable']}"]
        for r in rows])


def tables(name: str, rows: list[dict]) -> dict[str, str]:
    return {f"{name}_gain": targets(rows), f"{name}_gain_worlds": worlds(rows)} if rows else {}


def main(argv=None) -> int:
    """Tabulate the rows a run kept so far (``*_worlds_partial.jsonl`` or ``*_zoo_partial.jsonl``, several files
    joined in the order given): a run stopped at a deadline, or the zoo run in parts (``--zoo-part``)."""
    import argparse
    import json
    import sys
    from pathlib import Path

    from experiments import rows as results

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("partial", type=Path, nargs="+", help="the rows files the runs rewrote after every world")
    p.add_argument("--name", default="worlds", help="the tables' prefix: worlds (the shipped ones) or zoo")
    harness.add_flags(p, grid=False, sets=False, rows_required=True,
                      rows_help="write the tables here (as recsys_compare --rows does)")
    args = harness.parse(p, argv)
    rows = [json.loads(line) for f in args.partial for line in f.read_text().splitlines() if line.strip()]
    out = tables(args.name, rows)
    print("\n\n".join(out.values()))
    results.write_tables(args.rows, out, "experiments.recsys_gain", argv if argv is not None else sys.argv[1:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
