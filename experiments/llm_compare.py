"""wordmath's market arms against the complete agent, paired by seed: the LLM-learning issue's table.

    python -m experiments.llm_compare                          # every arm, seeds 0-4 (40 runs of 8 arms: ~3.5 h on 2 cores)
    python -m experiments.llm_compare --arms holland learned --seeds 3 --workers 2
    python -m experiments.llm_compare --quick                  # toy sizes (what the test runs)

Each run is ``catallax run wordmath --seed S`` with only the arm's keys set (the shipped file
otherwise: 96 training episodes, 64 held-out problems), through the runner into a temporary SQLite
file (the run's skill library lives there). Every run also measures, on the same held-out problems,
the **complete agent** (one agent holding the calculator, every correct skill line of the pool and
the roles' summed token budgets, playing every step itself; greedy, so it scores the same in every
run) and the **best single agent** of its own trained population. The arms (``ARMS``) are the
issue's: the market under ``fixed``, ``fixed_with_eps``, ``holland`` and ``learned`` (value) bids,
learned or holland bids with LoRA GRPO on the policy (``agents.actions = "grpo"``), holland bids with
the skill-evolution issue's GRSE edit passes and LLM diagnoser, and ``flagship`` (scenarios/flagship.toml:
every mechanism at once), whose runs also fill a third table of their edit passes.

The table: held-out accuracy, mean ± sd over seeds and per seed, and each seed's difference from the
complete agent of the same run; training success (the last 20% of training episodes) and LoRA
updates. One worker runs one run on one core (the hf backend takes cores - 1 threads; with two
workers each is pinned to one), so ``--workers 2`` halves the wall time on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from experiments import harness, rows as results

ARMS = {
    "fixed": ["market.bid_scheme=fixed"],
    "fixed_with_eps": ["market.bid_scheme=fixed_with_eps"],
    "holland": ["market.bid_scheme=holland"],
    "learned": ["market.bid_scheme=learned", "market.clearing=first_price"],
    "holland+grpo": ["market.bid_scheme=holland", "agents.actions=grpo"],
    "learned+grpo": ["market.bid_scheme=learned", "agents.actions=grpo", "market.clearing=first_price"],
    "learned@softmax": ["market.bid_scheme=learned"],
    "holland+grse": ["market.bid_scheme=holland", "skills.credit=grse", "skills.diagnoser=llm"],
    "flagship": [],
}
"""The learned arms keep first-price clearing, as the flagship does (flagship.toml sets it): the README's rows were
measured under it. ``learned@softmax`` is ``--set market.bid_scheme=learned`` as a user runs it (learned bids bring
softmax clearing)."""
SCENARIO = {"flagship": "flagship"}  # an arm's scenario file, when it is not wordmath.toml
SKILL_COUNTS = ("heldout_accuracy_initial", "skill_edits_proposed", "skill_edits_accepted", "skill_edits_rejected",
                "diagnoses_llm", "diagnoses_fallback", "edit_passes", "skill_pass_seconds")
QUICK = ["run.episodes=8", "market.batch=4", "wordmath.heldout=4", "skills.probe=2"]


def run_arm(arm: str, seed: int, extra: list[str], keep: Path | None) -> dict:
    """One wordmath run of one arm and seed -> its summary's comparable numbers (and, with ``keep``, its
    database kept as KEEP/ARM-sSEED.db: the trace of every episode, for reading why a run failed)."""
    from scenarios.run.config import load
    from scenarios.run.runner import run_experiment

    exp = load(SCENARIO.get(arm, "wordmath"), [*ARMS[arm], *extra, "wordmath.llm.threads=1"], seed=seed)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(keep or folder) / f"{arm}-s{seed}.db"
        db.unlink(missing_ok=True)
        m = run_experiment(exp, f"sqlite:///{db}", progress=False)
    return {"arm": arm, "seed": seed, "seconds": round(time.perf_counter() - start, 1),
            "policy_updates": m.get("policy_updates", 0), **({"curve": m["heldout_curve"]} if "heldout_curve" in m else {}),
            **{k: m[k] for k in ("heldout_accuracy", "complete_agent_accuracy", "single_agent_accuracy",
                                 "train_success_rate", "ledger_hash", "invalid_actions", "actions", "roles",
                                 "run_id")},
            **{k: m[k] for k in SKILL_COUNTS if k in m}}


def read_trace(db: Path) -> dict:
    """What a kept run's training episodes did, from its ledger: each step's winner is the payer of that
    step's BID transfer, and the ``agent`` table holds every agent's role and skill lines at birth.

    ``expression``: share of training episodes in which the calculator acted (it wakes only once an
    extractor wrote a legal expression); ``solved_given_expression``: success among those (the rest of
    the failures are wrong expressions or answers); ``wrong_example_turns``: share of extractor turns won
    by an agent holding one of the pool's deliberately wrong worked examples."""
    from scenarios.wordmath import WRONG

    wrong = tuple(line.split("=>")[1].strip() for line in WRONG)
    with sqlite3.connect(db) as con:
        skill = dict(con.execute("SELECT agent_id, skill FROM agent"))
        turns = con.execute("SELECT episode, src FROM transfer WHERE reason_name = 'BID'").fetchall()
        solved = dict(con.execute("SELECT episode, success FROM episode"))
    role = {a: text.split(" ", 1)[0] for a, text in skill.items()}
    computed = {e for e, a in turns if role.get(a) == "calculator"}
    extracting = [a for _, a in turns if role.get(a) == "extractor"]
    held_wrong = [any(f"=> {w}" in skill[a] for w in wrong) for a in extracting]
    return {"expression": len(computed) / max(1, len(solved)),
            "solved_given_expression": float(np.mean([solved[e] for e in computed])) if computed else 0.0,
            "wrong_example_turns": float(np.mean(held_wrong)) if held_wrong else 0.0}


def table(rows: list[dict]) -> str:
    """The README table: one row per arm, plus the complete and best-single agents measured in the same runs."""
    seeds = sorted({r["seed"] for r in rows})
    arms = [a for a in ARMS if any(r["arm"] == a for r in rows)]
    by = {(r["arm"], r["seed"]): r for r in rows}
    complete = {s: next(r["complete_agent_accuracy"] for r in rows if r["seed"] == s) for s in seeds}
    lines = ["| arm | held-out accuracy (mean ± sd) | per seed | minus complete agent (per seed) | "
             "train success | policy updates |", "|---|---|---|---|---|---|"]
    per_seed = [complete[s] for s in seeds]
    lines.append(f"| complete agent (every tool, correct skills, summed budget) | {harness.mean_sd(per_seed, 3, lone=True)} | "
                 f"{' '.join(f'{v:.3f}' for v in per_seed)} | | | |")
    for arm in arms:
        runs = [by[arm, s] for s in seeds if (arm, s) in by]
        held = [r["heldout_accuracy"] for r in runs]
        gap = " ".join(f"{r['heldout_accuracy'] - complete[r['seed']]:+.3f}" for r in runs)
        updates = " ".join(str(r["policy_updates"]) for r in runs) if any(r["policy_updates"] for r in runs) else ""
        lines.append(f"| market, {arm} | {harness.mean_sd(held, 3, lone=True)} | {' '.join(f'{v:.3f}' for v in held)} | {gap} | "
                     f"{np.mean([r['train_success_rate'] for r in runs]):.2f} | {updates} |")
    single = [max((by[a, s]["single_agent_accuracy"] for a in arms if (a, s) in by)) for s in seeds]
    lines.append(f"| best single agent (best of any arm's population) | {harness.mean_sd(single, 3, lone=True)} | "
                 f"{' '.join(f'{v:.3f}' for v in single)} | | | |")
    return "\n".join(lines)


def trace_table(rows: list[dict]) -> str:
    """Per arm, mean over the seeds whose databases were kept: what :func:`read_trace` reads."""
    lines = ["| arm | training episodes with an expression | solved given an expression | "
             "extractor turns by a holder of a wrong example | final roles (extractor/calculator/answerer/generalist) |",
             "|---|---|---|---|---|"]
    for arm in [a for a in ARMS if any(r["arm"] == a and "trace" in r for r in rows)]:
        runs = [r for r in rows if r["arm"] == arm and "trace" in r]
        mean = {k: np.mean([r["trace"][k] for r in runs]) for k in runs[0]["trace"]}
        roles = " ".join("/".join(str(r["roles"].get(k, 0)) for k in ("extractor", "calculator", "answerer", "generalist"))
                         for r in runs)
        lines.append(f"| {arm} | {mean['expression']:.2f} | {mean['solved_given_expression']:.2f} | "
                     f"{mean['wrong_example_turns']:.2f} | {roles} |")
    return "\n".join(lines)


def curve_table(rows: list[dict]) -> str:
    """Per run measured with ``run.eval_every``: its learning curve (training episodes: held-out accuracy) and its
    LoRA updates."""
    lines = ["| arm | seed | curve (episodes: held-out accuracy) | policy updates |", "|---|---|---|---|"]
    for r in sorted((r for r in rows if r.get("curve")), key=lambda r: (list(ARMS).index(r["arm"]), r["seed"])):
        curve = " ".join(f"{episode}: {value:.3f}" for _, episode, value in r["curve"])
        lines.append(f"| {r['arm']} | {r['seed']} | {curve} | {r['policy_updates']} |")
    return "\n".join(lines)


def edits_table(rows: list[dict]) -> str:
    """Per arm with skill edit passes, each seed's numbers (``;`` between seeds): held-out accuracy before
    the first pass, edits proposed / accepted / rejected by the gate, the LLM diagnoser's verdicts used and
    its fallbacks to the rule diagnoser, and the wall seconds of one edit pass."""
    lines = ["| arm | held-out before training | edits proposed / accepted / rejected | LLM verdicts used / fallbacks | "
             "s per edit pass |", "|---|---|---|---|---|"]
    for arm in [a for a in ARMS if any(r["arm"] == a and r.get("edit_passes") for r in rows)]:
        runs = sorted((r for r in rows if r["arm"] == arm and r.get("edit_passes")), key=lambda r: r["seed"])
        before = "; ".join(f"{r['heldout_accuracy_initial']:.3f}" if "heldout_accuracy_initial" in r else "-" for r in runs)
        edits = "; ".join(f"{r['skill_edits_proposed']} / {r['skill_edits_accepted']} / {r['skill_edits_rejected']}"
                          for r in runs)
        verdicts = "; ".join(f"{r.get('diagnoses_llm', 0)} / {r.get('diagnoses_fallback', 0)}" for r in runs)
        seconds = "; ".join(f"{r['skill_pass_seconds'] / r['edit_passes']:.0f}" for r in runs)
        lines.append(f"| {arm} | {before} | {edits} | {verdicts} | {seconds} |")
    return "\n".join(lines)


def best_arm(rows: list[dict]) -> dict:
    """The best market arm on mean held-out accuracy, and its mean paired difference from the complete agent."""
    arms = sorted({r["arm"] for r in rows}, key=list(ARMS).index)
    means = {a: float(np.mean([r["heldout_accuracy"] for r in rows if r["arm"] == a])) for a in arms}
    best = max(arms, key=means.get)
    gaps = [r["heldout_accuracy"] - r["complete_agent_accuracy"] for r in rows if r["arm"] == best]
    return {"best_arm": best, "best_heldout": means[best], "best_minus_complete": float(np.mean(gaps)),
            "beats_complete": bool(np.mean(gaps) > 0)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_flags(parser, seeds=5, workers=2, quick="8 episodes, 4 held-out problems, probes of 2",
                      out=Path("runs/llm_compare.md"),
                      out_help="the table; each finished run is appended to OUT with suffix .jsonl as it lands",
                      rows_help="write the tables as JSON Lines rows with their provenance: the arms' to ROWS, the "
                                "trace and edit tables to ROWS-STEM_trace/_edits.jsonl (docs/results pages)")
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--keep", type=Path, help="keep each run's database in this folder")
    parser.add_argument("--report", action="store_true", help="run nothing: the table of every run in the .jsonl")
    args = harness.parse(parser, argv)
    log = args.out.with_suffix(".jsonl")
    start = time.perf_counter()
    landed = harness.logged(log, lambda r: f"{r['arm']} seed {r['seed']}: held-out {r['heldout_accuracy']:.3f} "
                                           f"({r['seconds']:.0f} s)")
    if not args.report:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
        extra = [*(QUICK if args.quick else []), *args.overrides]
        harness.run(run_arm, [(arm, seed, extra, args.keep) for seed in harness.seeds(args) for arm in args.arms],
                    args, on_result=landed)
    rows = harness.read_log(log)
    for r in rows:
        db = args.keep and args.keep / f"{r['arm']}-s{r['seed']}.db"
        if db and db.exists():
            r["trace"] = read_trace(db)
    report = "\n\n".join([table(rows), *([trace_table(rows)] if any("trace" in r for r in rows) else []),
                            *([edits_table(rows)] if any(r.get("edit_passes") for r in rows) else []),
                            *([curve_table(rows)] if any(r.get("curve") for r in rows) else [])])
    args.out.write_text(report + "\n")
    if args.rows:
        made = {"arms": table(rows), **({"trace": trace_table(rows)} if any("trace" in r for r in rows) else {}),
                **({"edits": edits_table(rows)} if any(r.get("edit_passes") for r in rows) else {}),
                **({"curves": curve_table(rows)} if any(r.get("curve") for r in rows) else {})}
        results.write_tables(args.rows, made, "experiments.llm_compare", argv)
    print(report)
    print(f"wrote {args.out} ({len(rows)} runs) in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print(json.dumps({"rows": rows, **best_arm(rows)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
