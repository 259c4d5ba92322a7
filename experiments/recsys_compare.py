"""The recsys comparison over worlds and seeds: GRSE, presence credit, random edits and the baselines.

    python -m experiments.recsys_compare [--worlds default,sparse,ml-100k,movielens:PATH] [--seeds 5] [--quick]
                                         [--zoo N] [--harm any_data] [--set KEY=VALUE ...] [--out tables.md] [--db URL]
                                         [--workers 2 | --ray]

Why several worlds: a gain measured in the world the pipeline was built in says little. The worlds
are the synthetic generator's named shapes (scenarios/recsys/synthetic.py ``SHAPES``: sparse/dense, strong/weak
drift, heavy/light popularity skew, no genre labels) at one size, the shipped MovieLens fixture with and
without its genre file, and any MovieLens file named ``movielens:PATH``. None of them chose a default of the
pipeline: every run uses the config's defaults, and the tuned baselines chose their hyper-parameters on the
validation users.

Each (world, seed) is one ``catallax run recsys`` with ``plant_harmful = 3`` and ``compare = true``; all arms of
a seed share the world, the questions, the rollout seeds, the validation gate and the per-iteration edit cap.
Scores are on the test users, which no arm ever saw. Per world the table gives each arm's mean and standard
deviation over seeds of NDCG@10, Recall@50 (the pipeline's: its 50 best candidates; a baseline's: its top 50)
and coverage; the paired difference per seed of GRSE minus the strongest tuned baseline, chosen on validation
in that seed; and how often each credit pruned all planted harmful skills. ``--zoo N`` also runs the first N
evaluation worlds of the zoo (scenarios/recsys/zoo.py, seeds fixed before measuring; ``--zoo-dev`` the development
ones instead; ``--zoo-from K`` skips the first K: the rest of a run cut short), one run each, and gives their
distribution (experiments/recsys_zoo.py); ``--worlds ''`` runs the zoo alone. ``--quick`` runs the suite at test size (the tests' world, 3 iterations, one seed) to check that it
works, not to measure. Each run goes into a private SQLite file in its worker, and its rows into the results
database (``--db``) once it has finished, as a sweep's do (scenarios/run/sweep.py).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from experiments import harness, recsys_gain, recsys_zoo, rows as results
from market.store import import_run, make_engine
from scenarios.recsys import zoo
from scenarios.recsys.synthetic import SHAPES
from scenarios.run.config import load
from scenarios.run.sweep import Task, run_task

FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "movielens" / "ml-100k"
SIZE = ("recsys.world.users=1500", "recsys.world.items=400")
"""The synthetic worlds' size: the shipped default (scenarios/recsys.toml), so that 300 validation and 400 test
users are dealt; one seed (five arms and the baselines) takes about 15 s on one core, the eight shapes x 5 seeds
about 10 minutes. A larger world is ``--set recsys.world.users=5000 --set recsys.world.items=1500`` (about 40 s a
seed)."""
QUICK = ("recsys.world.users=500", "recsys.world.items=150", "recsys.world.genres=6", "recsys.validation_users=120",
         "recsys.test_users=120", "recsys.rank=16", "market.batch=64", "run.episodes=192")
WORLDS = (*SHAPES, "ml-100k", "ml-100k-nogenres")
ARMS = (("grse", "GRSE"), ("presence", "presence"), ("random", "random (matched)"),
        ("random-capped", "random (capped)"))
BASELINES = (("popularity", "popularity"), ("itemknn", "item-kNN"), ("mf", "MF (PureSVD)"), ("ease", "EASE^R"),
             ("itemknn_tuned", "item-kNN (tuned)"), ("puresvd_tuned", "PureSVD (tuned)"), ("trending", "trending"),
             ("next", "next-item"))
METRICS = (("ndcg10", "NDCG@10"), ("recall50", "Recall@50"), ("coverage", "coverage"))


def world_overrides(name: str, scratch: Path, quick: bool) -> list[str]:
    """The ``--set`` overrides of a world; ``scratch`` holds the copy of a genre-less MovieLens file."""
    if name in SHAPES:
        size = QUICK if quick else SIZE
        return [*size, *(f"recsys.world.{k}={str(v).lower()}" for k, v in SHAPES[name].items())]
    quick_run = [o for o in QUICK if o.startswith(("market.", "run."))] if quick else []
    if name == "ml-100k":
        return ["recsys.data=movielens", f"recsys.path={FIXTURE / 'u.data'}", *quick_run]
    if name == "ml-100k-nogenres":  # u.data alone: the loader finds no u.item beside it
        folder = scratch / name
        folder.mkdir(exist_ok=True)
        shutil.copy(FIXTURE / "u.data", folder / "u.data")
        return ["recsys.data=movielens", f"recsys.path={folder / 'u.data'}", *quick_run]
    if name.startswith("movielens:"):
        return ["recsys.data=movielens", f"recsys.path={name.removeprefix('movielens:')}", *quick_run]
    raise SystemExit(f"--worlds: unknown world {name!r}; expected one of {', '.join(WORLDS)} or movielens:PATH")


def run(seed: int, overrides: list[str], harm: str, zoo_folder: Path | None = None) -> tuple[dict, dict, float]:
    """One run (in a worker) into a private SQLite file -> its summary, its rows (for the results database) and
    its seconds; ``zoo_folder``: the run is zoo world ``seed``, written there first."""
    start = time.time()
    if zoo_folder is not None:
        overrides = ["recsys.data=movielens", f"recsys.path={zoo.write(seed, zoo_folder / f'zoo-{seed}')}", *overrides]
    exp = load("recsys", [*overrides, f"recsys.harm={harm}", "recsys.plant_harmful=3", "recsys.compare=true"],
               seed=seed)
    summary, rows = run_task(Task({}, seed, exp.to_dict()), "experiments.recsys_compare", None)
    return summary, rows, time.time() - start


def columns(s: dict) -> dict[str, tuple[float, float, float]]:
    """Each arm's and baseline's (NDCG@10, Recall@50, coverage) in one seed's summary; ``best``: the strongest tuned
    baseline on validation; ``blend``: the tuned blend the start holds (seeds.tuned_blend), alone."""
    out = {"initial": tuple(s[f"{m}_initial"] for m, _ in METRICS)}
    out |= {a: tuple(s["arms"][a][f"{m}_final"] for m, _ in METRICS) for a, _ in ARMS}
    out |= {b: (s["baselines"][b], s["baselines_recall50"][b], s["baselines_coverage"][b]) for b, _ in BASELINES}
    out["best"] = out[s["baseline_best"]]
    blend = s["baseline_blend"]
    out["blend"] = (blend["ndcg10"], blend["recall50"], blend["coverage"])
    return out


def _ms(x: np.ndarray) -> str:
    return harness.mean_sd(x, 4)


def _spread(values: np.ndarray) -> list[str]:
    """Each metric's (column's) mean ± sd over seeds (rows)."""
    return [_ms(values[:, j]) for j in range(len(METRICS))]


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def verdict(results: dict[int, dict]) -> dict:
    """Does GRSE beat the strongest tuned baseline on mean test NDCG@10, and does it prune all planted harmful
    skills in at least 4 of 5 seeds (in proportion for other counts) where presence credit does not?"""
    n = len(results)
    diff = np.array([columns(s)["grse"][0] - columns(s)["best"][0] for s in results.values()])
    every = {a: sum(s[f"harmful_pruned_{a}"] == s["harmful_planted"] for s in results.values())
             for a in ("grse", "presence")}
    need = math.ceil(0.8 * n)
    return {"diff": diff, "wins": int((diff > 0).sum()), "beats": bool(diff.mean() > 0), "pruned": every,
            "prunes": every["grse"] >= need and every["presence"] < need}


def table(name: str, results: dict[int, dict]) -> str:
    """One world: arms and baselines (mean ± sd over seeds), the paired differences, the seeds, the verdict."""
    cols = {seed: columns(s) for seed, s in sorted(results.items())}
    rows = [("initial library", "initial"), *((n, a) for a, n in ARMS), *((n, b) for b, n in BASELINES),
            ("strongest tuned (on validation)", "best"), ("tuned blend (validated; the start holds it)", "blend")]
    arms = [[label, *_spread(np.array([c[key] for c in cols.values()]))] for label, key in rows]
    arms.append(["**GRSE − strongest tuned (paired)**",
                 *_spread(np.array([np.subtract(c["grse"], c["best"]) for c in cols.values()]))])
    arms.append(["GRSE − tuned blend (paired)", *_spread(np.array([np.subtract(c["grse"], c["blend"])
                                                                   for c in cols.values()]))])
    per_seed = []
    for seed, s in sorted(results.items()):
        c, g = cols[seed], s["arms"]["grse"]
        per_seed.append([seed, s["baseline_best"], f"{c['grse'][0]:.4f}", f"{c['best'][0]:.4f}",
                         f"{c['grse'][0] - c['best'][0]:+.4f}", f"{s['harmful_pruned_grse']} / "
                         f"{s['harmful_pruned_presence']} / {s['harmful_pruned_random']} of {s['harmful_planted']}",
                         f"{g['edits_accepted']} / {g['edits_accepted'] + g['edits_rejected']}"])
    lines = [f"### {name} ({len(results)} seeds)", "", harness.markdown(["arm", *(n for _, n in METRICS)], arms), "",
             harness.markdown(["seed", "strongest tuned", "GRSE NDCG@10", "its NDCG@10", "difference",
                               "pruned GRSE / presence / random", "edits GRSE (accepted / gated)"], per_seed)]
    v, n = verdict(results), len(results)
    lines += ["", f"GRSE beats the strongest tuned baseline on mean NDCG@10: **{_yes(v['beats'])}** "
                  f"({v['diff'].mean():+.4f}, ahead in {v['wins']} of {n} seeds). All planted harmful skills "
                  f"pruned: GRSE in {v['pruned']['grse']}, presence in {v['pruned']['presence']} of {n} "
                  f"seeds: **{_yes(v['prunes'])}**."]
    return "\n".join(lines)


def overview(worlds: dict[str, dict[int, dict]]) -> str:
    """One line per world: the paired NDCG@10 difference and the two verdicts."""
    body = []
    for name, results in worlds.items():
        v = verdict(results)
        blend = np.array([columns(s)["grse"][0] - columns(s)["blend"][0] for s in results.values()])
        body.append([name, _ms(v["diff"]), f"{v['wins']} of {len(results)}", _ms(blend),
                     f"{v['pruned']['grse']} / {v['pruned']['presence']}", _yes(v["beats"]), _yes(v["prunes"])])
    return "### all worlds\n\n" + harness.markdown(["world", "GRSE − strongest tuned NDCG@10", "seeds ahead",
                                                     "GRSE − tuned blend", "all pruned GRSE / presence", "beats",
                                                     "prunes"], body)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_flags(p, seeds=5, quick="test-sized worlds and 3 iterations: checks the suite runs",
                      out_help="also write the tables here, and the run summaries beside it (.json)",
                      rows_help="write the tables as JSON Lines rows with their provenance: the overview to ROWS, "
                                "each world's to ROWS-STEM_WORLD.jsonl beside it (docs/results pages)")
    p.add_argument("--worlds", default=",".join(WORLDS), help=f"comma-separated: {', '.join(WORLDS)}, movielens:PATH")
    p.add_argument("--harm", default="any_data", choices=("any_data", "business"),
                   help="the planted harmful skills (recsys.harm): any_data hurts on every world")
    p.add_argument("--zoo", type=int, default=0, metavar="N", help="also run the first N zoo evaluation worlds")
    p.add_argument("--zoo-from", type=int, default=0, metavar="K", help="skip the first K of those N worlds (the rest "
                   "of a zoo run cut short, tabulated with its rows by experiments.recsys_gain)")
    p.add_argument("--zoo-dev", action="store_true", help="--zoo runs the development worlds instead")
    p.add_argument("--zoo-part", default="0/1", metavar="I/N", help="run only the I-th of every N of those worlds "
                   "(N processes side by side; experiments.recsys_zoo tabulates their rows together)")
    p.add_argument("--db", help="results database (default: a temporary SQLite file)")
    args = harness.parse(p, argv)
    scratch = Path(tempfile.mkdtemp())
    engine = make_engine(args.db or f"sqlite:///{scratch / 'compare.db'}")
    names = [w for w in args.worlds.split(",") if w]
    overrides = {name: world_overrides(name, scratch, args.quick) for name in names}  # unknown names fail first
    pool = zoo.DEV_SEEDS if args.zoo_dev else zoo.EVAL_SEEDS
    if args.zoo > len(pool):
        p.error(f"--zoo {args.zoo}: the zoo has {len(pool)} such worlds")
    if not 0 <= args.zoo_from <= args.zoo:
        p.error(f"--zoo-from {args.zoo_from}: must be between 0 and --zoo ({args.zoo})")
    partial = {kind: args.rows.with_name(f"{args.rows.stem}_{kind}_partial.jsonl") if args.rows else None
               for kind in ("worlds", "zoo")}
    kept = {"worlds": [], "zoo": []}  # the rows so far, rewritten after every run: a run cut short keeps them

    def landed(index, result):
        summary, rows, seconds = result
        import_run(engine, rows)
        name, seed = labels[index]
        kind = "zoo" if name is None else "worlds"
        if kind == "worlds":
            kept[kind].append(recsys_gain.run_row(name if args.seeds == 1 else f"{name} {seed}", summary, seconds))
            print(f"{name} seed {seed}: {seconds:.0f} s, run {summary['run_id']}", file=sys.stderr)
        else:
            kept[kind].append(row := recsys_zoo.row(seed, summary, seconds))
            print(f"zoo {seed}: {row['seconds']} s, GRSE {row['grse']} vs {row['best tuned']} "
                  f"{row['best tuned NDCG@10']}, pruned {row['pruned grse']}/{row['pruned presence']}", file=sys.stderr)
        if partial[kind] is not None:
            partial[kind].write_text("".join(json.dumps(x) + "\n" for x in kept[kind]))

    quick = [o for o in QUICK if not o.startswith("recsys.world.")] if args.quick else []
    part, parts = (int(x) for x in args.zoo_part.split("/"))
    labels = [(name, seed) for name in names for seed in harness.seeds(args)]
    jobs = [(seed, overrides[name] + args.overrides, args.harm, None) for name, seed in labels]
    labels += [(None, seed) for seed in pool[args.zoo_from:args.zoo][part::parts]]  # None: a zoo world
    jobs += [(seed, quick + args.overrides, args.harm, scratch) for _, seed in labels[len(jobs):]]
    done = harness.run(run, jobs, args, on_result=landed)
    worlds = {name: {} for name in names}
    shipped, zoo_rows = [], []
    for (name, seed), (summary, _, seconds) in zip(labels, done):
        if name is not None:
            worlds[name][seed] = summary
            shipped.append(recsys_gain.run_row(name if args.seeds == 1 else f"{name} {seed}", summary, seconds))
        else:
            zoo_rows.append(recsys_zoo.row(seed, summary, seconds))
    engine.dispose()
    tables = {"overview": overview(worlds), **{name: table(name, r) for name, r in worlds.items()}} if worlds else {}
    tables |= recsys_gain.tables("worlds", shipped)
    if zoo_rows:
        tables |= {"zoo": recsys_zoo.distribution(zoo_rows), "zoo_worlds": recsys_zoo.worlds_table(zoo_rows),
                   **recsys_gain.tables("zoo", zoo_rows)}
    text = "\n\n".join([*(tables[name] for name in worlds), *(v for k, v in tables.items() if k not in worlds)])
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
        args.out.with_suffix(".json").write_text(json.dumps(worlds, indent=1) + "\n")
        if zoo_rows:
            args.out.with_name(f"{args.out.stem}-zoo.json").write_text(json.dumps(zoo_rows, indent=1) + "\n")
    if args.rows:
        results.write_tables(args.rows, tables, "experiments.recsys_compare", argv)
        for path in partial.values():
            path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
