"""The headline comparison on desk: every mechanism's learning curve against the complete agent, paired by seed.

    python -m experiments.desk_compare --workers 2       # 6 arms x 5 seeds (30 runs; see docs/results/desk.md)
    python -m experiments.desk_compare --arms holland learned+grpo --seeds 2
    python -m experiments.desk_compare --arms defaults defaults-no-grpo --workers 1   # desk.toml as shipped, with and without GRPO
    python -m experiments.desk_compare --quick           # toy sizes (what the test runs)
    python -m experiments.desk_compare --report          # run nothing: the tables of the runs in OUT.jsonl
    python -m experiments.desk_compare --report --out benchmarks/results/desk_runs.md --rows benchmarks/results/desk_arms.jsonl --figure docs/desk_curves.png

Each run is ``catallax run experiments/desk_comparison.toml --seed S`` with only the arm's keys set (the
``defaults`` arms: desk.toml as shipped), through the runner into a temporary SQLite file. Every run measures its
market's held-out success (64 fixed problems, greedy) before the first round, every ``run.eval_every`` rounds and
after the last: the arm's learning curve. On the same problems it measures the **complete agent**, fair (one agent
holding every role's whole initial pool, the planted wrong lines included, with the roles' summed token budget) and
curated (the same without the planted lines: a ceiling). Both play the untrained model greedily, so they score the
same in every run of one model precision (the GRPO arms hold it in float32, the others in bfloat16); each run is
compared with its own. They are the first two rows of the table.

The table: each arm's curve (mean over seeds), its final held-out success, and its paired difference from the fair
complete agent with a 95% t interval over seeds, and the smallest difference those seeds resolve with 80% power
(their own spread taken as the true one). A second table gives each mechanism's effect: the arm that adds it
against the arm without it, paired by seed (``EFFECTS``). A third lists, per run with skill edit passes, the planted lines
edits GRSE proposed on, and which of them the gate let through.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from experiments import harness, rows as results

COMPARISON = str(Path(__file__).with_name("desk_comparison.toml"))
"""The settings the comparison's arms run at: desk at 192 episodes in rounds of 16, the curve every 3 rounds, Holland's
bids and no learner unless an arm adds one, and wake-up scored but ignored (the agents pay for the scoring pass's
tokens). desk.toml's own defaults are learned bids + GRPO at their own size (``DEFAULTS``)."""
GRSE = ["skills.credit=grse", "skills.diagnoser=llm"]
LEARNED = ["market.bid_scheme=learned", "market.clearing=first_price"]
GRPO = ["agents.actions=grpo", "agents.lm.lr=1e-3"]
"""LoRA GRPO at lr 1e-3: the rate the TRL peer benchmark's one-role addition world learns at in 320 completions
(docs/performance.md), chosen there, not on desk."""
ARMS = {
    "fixed": ["market.bid_scheme=fixed"],
    "holland": [],
    "learned": LEARNED,
    "learned+grpo": [*LEARNED, *GRPO],
    "holland+grse": GRSE,
    "flagship": [*LEARNED, *GRPO, *GRSE],
}
"""The market arms: :data:`COMPARISON` with only these keys set. Learned bids keep first-price clearing, as the
flagship scenario does. ``flagship`` turns every mechanism on: learned bids, LoRA GRPO, births and GRSE edit passes."""
COMPARED = list(ARMS)
DEFAULTS = {"defaults": [], "defaults-no-grpo": ["agents.actions=rule"]}
"""desk.toml as shipped (learned bids and LoRA GRPO at temperature 1.0, 1024 episodes in rounds of 16), and the same
run without GRPO: what GRPO adds at desk's defaults, paired by seed."""
ARMS.update(DEFAULTS)


def config(arm: str, extra: list[str] = (), seed: int | None = None):
    """The arm's experiment: its keys (then ``extra``) over :data:`COMPARISON`, or over desk.toml (:data:`DEFAULTS`)."""
    from scenarios.run.config import load

    return load("desk" if arm in DEFAULTS else COMPARISON, [*ARMS[arm], *extra], seed=seed)


def trains_model(arm: str) -> bool:
    """Whether the arm's runs train the shared model (LoRA GRPO): the learner holds it in float32, the others the
    shipped bfloat16."""
    return config(arm).agents.actions == "grpo"


QUICK = ["run.episodes=8", "run.eval_every=1", "market.batch=4", "desk.heldout=4", "desk.validation=4",
         "skills.probe=2", "skills.every=1"]


def planted_prunes(db: Path, gate: str = "accepted") -> list[str]:
    """The planted lines (scenarios.desk.WRONG) an edit the gate ``accepted`` pruned or revised (the first version of
    the line it targeted), from the run's library."""
    from scenarios.desk import WRONG

    with sqlite3.connect(db) as con:
        edits = con.execute("SELECT s.body FROM skill_edit e JOIN skill s ON s.library = e.library AND s.name = e.target "
                            "AND s.version = (SELECT MIN(version) FROM skill WHERE library = e.library AND name = e.target) "
                            "WHERE e.gate = ? AND e.operator IN ('prune', 'revise')", (gate,)).fetchall()
    return sorted({body for (body,) in edits if body in WRONG})


def run_arm(arm: str, seed: int, extra: list[str]) -> dict:
    """One desk run of one arm and seed -> its curve, its final and baseline success, and its edits."""
    from scenarios.run.runner import run_experiment

    exp = config(arm, extra, seed)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / f"{arm}-s{seed}.db"
        m = run_experiment(exp, f"sqlite:///{db}", progress=False)
        pruned, refused = (planted_prunes(db), planted_prunes(db, "rejected")) if m.get("edit_passes") else ([], [])
    return {"arm": arm, "seed": seed, "seconds": round(time.perf_counter() - start, 1),
            "curve": [[int(r), int(e), float(s)] for r, e, s in m["heldout_curve"]],
            "heldout_success": m["heldout_success"], "heldout_problems": m["heldout_problems"],
            "complete_agent_success": m["complete_agent_success"],
            "curated_agent_success": m["curated_agent_success"], "train_success_rate": m["train_success_rate"],
            "policy_updates": m.get("policy_updates", 0), "ledger_hash": m["ledger_hash"],
            "roles": m["roles"], "roles_never_woke": m["roles_never_woke"], "planted_pruned": pruned,
            "planted_refused": refused,
            **{k: m[k] for k in ("skill_edits_proposed", "skill_edits_accepted", "edit_passes") if k in m}}


def table(rows: list[dict]) -> list[dict]:
    """One row per arm, the two complete agents first. Each run's difference is from its own run's fair complete
    agent: the LoRA learner holds the model in float32 and the other arms in the shipped bfloat16, and the complete
    agent, played greedily on that untrained model, answers a few problems differently in each."""
    seeds = sorted({r["seed"] for r in rows})
    by = {(r["arm"], r["seed"]): r for r in rows}
    arms = [a for a in ARMS if any(r["arm"] == a for r in rows)]
    out = [baseline("complete agent, fair (whole pool, planted lines included)", rows, "complete_agent_success"),
           baseline("complete agent, curated (planted lines left out)", rows, "curated_agent_success")]
    gap = [{**r, "gap": r["curated_agent_success"] - r["complete_agent_success"]} for r in rows]
    out[1]["minus fair complete agent (95%)"] = baseline("", gap, "gap", sign=True)["final held-out"]  # no spread
    for arm in arms:
        runs = [by[arm, s] for s in seeds if (arm, s) in by]
        points = [p[:2] for p in runs[0]["curve"]]
        curve = [float(np.mean([r["curve"][i][2] for r in runs if len(r["curve"]) > i])) for i in range(len(points))]
        out.append({"arm": f"market, {arm}", "seeds": len(runs),
                    "curve (episodes: mean held-out success)": " ".join(f"{e}: {v:.3f}" for (_, e), v in zip(points, curve)),
                    "final held-out": harness.mean_sd([r["heldout_success"] for r in runs], 3, lone=True),
                    "held-out SE (one run)": f"{binomial_se(runs):.3f}",
                    **difference([r["heldout_success"] - r["complete_agent_success"] for r in runs]),
                    "gain over its first point": harness.pm(*harness.interval(
                        [r["curve"][-1][2] - r["curve"][0][2] for r in runs]), digits=3, sign=True),
                    "policy updates": " ".join(str(r["policy_updates"]) for r in runs) if any(
                        r["policy_updates"] for r in runs) else "",
                    "s per run": f"{np.mean([r['seconds'] for r in runs]):.0f}"})
    return out


EFFECTS = (("learned value bids", "learned", "holland"), ("LoRA GRPO", "learned+grpo", "learned"),
           ("GRSE edit passes", "holland+grse", "holland"), ("GRSE on top of learned + GRPO", "flagship", "learned+grpo"),
           ("LoRA GRPO at desk's defaults", "defaults", "defaults-no-grpo"))
"""Each mechanism's effect: the arm that adds it against the arm without it, paired by seed."""


def effects_table(rows: list[dict]) -> list[dict]:
    """Per mechanism, the paired difference of final held-out success and of the curve's gain over its first point
    (the arm with it minus the arm without), with 95% intervals over the seeds both ran."""
    by = {(r["arm"], r["seed"]): r for r in rows}
    out = []
    for name, arm, base in EFFECTS:
        seeds = sorted(s for a, s in by if a == arm and (base, s) in by)
        if not seeds:
            continue
        final = [by[arm, s]["heldout_success"] - by[base, s]["heldout_success"] for s in seeds]
        gain = [(by[arm, s]["curve"][-1][2] - by[arm, s]["curve"][0][2])
                - (by[base, s]["curve"][-1][2] - by[base, s]["curve"][0][2]) for s in seeds]
        out.append({"mechanism": name, "arms": f"{arm} - {base}", "seeds": len(seeds),
                    "final held-out (95%)": harness.pm(*harness.interval(final), digits=3, sign=True),
                    "gain over the first point (95%)": harness.pm(*harness.interval(gain), digits=3, sign=True),
                    "resolvable (80% power)": f"{harness.detectable(final):.3f}" if len(seeds) > 2 else ""})
    return out


def binomial_se(runs: list[dict]) -> float:
    """The standard error one run's final held-out success has from its problems alone, sqrt(p (1 - p) / n): what
    more held-out problems would shrink, beside the spread between seeds, which only more seeds do."""
    p = float(np.mean([r["heldout_success"] for r in runs]))
    return math.sqrt(p * (1 - p) / runs[0]["heldout_problems"])


def baseline(name: str, rows: list[dict], key: str, sign: bool = False) -> dict:
    """A complete agent's success, per value it took with the arms that measured it (the model's precision sets it:
    table's docstring; greedy, it is the same in every seed)."""
    values = sorted({r[key] for r in rows})
    shown = "; ".join(f"{v:{'+' if sign else ''}.3f} ({', '.join(a for a in ARMS if any(r['arm'] == a and r[key] == v for r in rows))})"
                      for v in values)
    return {"arm": name, "seeds": len({r["seed"] for r in rows}), "final held-out": shown}


def difference(values: list[float]) -> dict:
    """The mean paired difference from the fair complete agent, its 95% interval, the difference these seeds resolve
    (80% power, 5% two-sided), and the seeds a 0.05 difference needs at this spread (normal approximation:
    ((z_0.975 + z_0.8) sd / 0.05)^2)."""
    values = np.asarray(values, dtype=float)
    mean, half = harness.interval(values)
    spread = values.std(ddof=1) if values.size > 1 else 0.0
    return {"minus fair complete agent (95%)": harness.pm(mean, half, digits=3, sign=True),
            "resolvable (80% power)": f"{harness.detectable(values):.3f}" if values.size > 2 else "",
            "seeds for 0.05": str(max(2, math.ceil((2.8016 * spread / 0.05) ** 2))) if values.size > 2 else ""}


def mean_curves(rows: list[dict]) -> list[tuple[str, list[dict]]]:
    """Each arm's learning curve, the mean over its seeds at each point, as ``catallax report`` draws curves
    (scenarios/report/curve.py ``curve_figure``: label, points of episode, success and problems)."""
    out = []
    for arm in [a for a in ARMS if any(r["arm"] == a for r in rows)]:
        runs = [r for r in rows if r["arm"] == arm]
        points = [{"episode": episode, "problems": runs[0]["heldout_problems"],
                   "success": float(np.mean([r["curve"][i][2] for r in runs]))}
                  for i, (_, episode, _) in enumerate(runs[0]["curve"])]
        out.append((f"{arm} ({len(runs)} seeds)", points))
    return out


def figure(rows: list[dict], path: Path) -> None:
    """The arms' mean curves, with the fair and the curated complete agent as dashed and dotted lines, one of each
    per model precision (the GRPO arms' float32, the others' bfloat16)."""
    from scenarios.report import curve_figure

    fig = curve_figure(mean_curves(rows))
    ax = fig.axes[0]
    grpo = {arm for arm in ARMS if trains_model(arm)}
    for key, label, style in (("complete_agent_success", "complete agent, fair", "--"),
                              ("curated_agent_success", "complete agent, curated", ":")):
        for float32, shade in ((False, "0.25"), (True, "0.6")):  # the model's precision: table's docstring
            values = [r[key] for r in rows if (r["arm"] in grpo) == float32]
            if values:
                ax.axhline(float(np.mean(values)), color=shade, ls=style, lw=1.2,
                           label=f"{label} ({'float32: the GRPO arms' if float32 else 'bfloat16: the others'})")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("desk: mean learning curve per arm (held-out success, greedy)")
    fig.savefig(path, dpi=80)


def edits_table(rows: list[dict]) -> list[dict]:
    """Per run with skill edit passes: edits proposed / accepted, and the planted lines pruned."""
    return [{"arm": r["arm"], "seed": r["seed"], "edit passes": r["edit_passes"],
             "edits proposed / accepted": f"{r['skill_edits_proposed']} / {r['skill_edits_accepted']}",
             "planted lines pruned or revised": "; ".join(r["planted_pruned"]) or "none",
             "planted lines whose edit the gate refused": "; ".join(r["planted_refused"]) or "none"}
            for r in sorted(rows, key=lambda r: (list(ARMS).index(r["arm"]), r["seed"])) if r.get("edit_passes")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_flags(parser, seeds=5, workers=2, quick="8 episodes, 4 held-out problems, probes of 2, an edit pass every round",
                      out=Path("runs/desk_compare.md"),
                      out_help="the tables; each finished run is appended to OUT with suffix .jsonl as it lands",
                      rows_help="write the tables as JSON Lines rows with their provenance (docs/results/desk.md)")
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=COMPARED,
                        help=f"default: the comparison's {len(COMPARED)}; 'defaults' and 'defaults-no-grpo' run desk.toml as shipped")
    parser.add_argument("--report", action="store_true", help="run nothing: the tables of every run in the .jsonl")
    parser.add_argument("--figure", type=Path, help="draw each arm's mean learning curve to this PNG (docs/desk_curves.png)")
    args = harness.parse(parser, argv)
    log = args.out.with_suffix(".jsonl")
    landed = harness.logged(log, lambda r: f"{r['arm']} seed {r['seed']}: held-out {r['heldout_success']:.3f} "
                                           f"({r['seconds']:.0f} s)")
    if not args.report:
        parallel = ["desk.llm.threads=1"] if args.workers > 1 else []  # two runs side by side: a core each
        extra = [*(QUICK if args.quick else []), *parallel, *args.overrides]
        harness.run(run_arm, [(arm, seed, extra) for seed in harness.seeds(args) for arm in args.arms], args,
                    on_result=landed)
    rows = harness.read_log(log)
    effects = effects_table(rows)
    tables = {"arms": table(rows), **({"effects": effects} if effects else {}),
              **({"edits": edits_table(rows)} if any(r.get("edit_passes") for r in rows) else {})}
    columns = {name: list(dict.fromkeys(c for row in t[::-1] for c in row)) for name, t in tables.items()}
    made = {name: harness.markdown(columns[name], [[row.get(c, "") for c in columns[name]] for row in t])
            for name, t in tables.items()}
    report = "\n\n".join(made.values())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report + "\n")
    if args.rows:
        results.write_tables(args.rows, made, "experiments.desk_compare", argv)
    if args.figure:
        figure(rows, args.figure)
    print(report)
    print(json.dumps({"runs": len(rows)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
