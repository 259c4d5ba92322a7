"""Skill evolution you can trust, measured: LLM verdict parse rates (free vs constrained decoding) and holland vs
holland + GRSE on wordmath, paired seeds; rows to benchmarks/results/skill_evolution.jsonl.

    python -m experiments.skill_evolution [--seeds 3] [--first-seed 0] [--what verdicts,grse,probe,planted] [--set KEY=VALUE ...]
    python -m experiments.skill_evolution --quick --what grse --rows /tmp/grse.jsonl   # toy size: a smoke run
    python -m experiments.skill_evolution --recsys SUMMARIES.json --recsys-command "..."

``--recsys`` reads the run summaries experiments/recsys_compare.py wrote beside its ``--out`` tables and writes one
row per (world, seed) to benchmarks/results/skill_evolution_recsys.jsonl: GRSE's test NDCG@10, the strongest tuned
baseline's, planted skills pruned by GRSE and by presence credit, edits accepted / gated, and the accepted edits'
validation gain against their test (held-out) gain.

Each row is one ``catallax run wordmath`` (or ``--scenario procurement``; real SmolLM2 on the hf backend) at the size
``SIZES`` gives (a small one: it fits the shared two-core machine; ``--set`` changes it), with the run's summary fields the docs table reads:

* ``verdicts``: ``skills.credit = grse``, ``skills.diagnoser = llm``, ``skills.constrained`` false then true on the
  same seed; the parse rate is the model's usable verdicts over all it gave (the rest: the rule fallback);
* ``grse``: ``skills.credit`` none (holland alone: births only) then grse (the gated edit passes, its evidence the
  training rounds) on the same seed;
  held-out accuracy before training and at the end, edits proposed / accepted / rejected, the accepted edits'
  validation gain against their held-out gain, seconds per pass (the grse arm diagnoses with the LLM: its verdicts
  give the parse rate of a real run);
* ``probe``: as ``grse``, the GRSE arm's evidence a frozen probe at each pass (``skills.evidence = "probe"``), so
  its training is holland alone's until an edit is accepted;
* ``planted``: GRSE and the gate on the planted-line world (tests/skills/planted_world.toml, its own size):
  the correct lines' and the planted line's fate, held-out success before and after the edit passes.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from experiments import harness, rows as results
from scenarios.run.config import load
from scenarios.run.runner import run_experiment

OUT = Path("benchmarks/results/skill_evolution.jsonl")
SIZES = {"wordmath": ("run.episodes=32", "market.batch=8", "wordmath.heldout=16", "wordmath.validation=16",
                      "population.initial_agents=6", "skills.min_support=1"),
         "procurement": ("run.episodes=24", "procurement.heldout=16", "procurement.validation=16",
                         "skills.min_support=1")}
"""Each scenario's size (``--scenario``): small ones that fit the shared two-core machine."""
QUICK = {"wordmath": ("run.episodes=8", "market.batch=4", "wordmath.heldout=4", "wordmath.validation=4",
                      "population.initial_agents=6", "skills.min_support=1"),
         "procurement": ("run.episodes=8", "procurement.heldout=4", "procurement.validation=4", "skills.min_support=1")}
"""``--quick``: each scenario's toy size (a smoke run)."""
KEEP = ("heldout_accuracy_initial", "heldout_accuracy", "skill_edits_proposed", "skill_edits_accepted",
        "skill_edits_rejected", "edit_passes", "skill_pass_seconds", "diagnoses_llm", "diagnoses_fallback",
        "diagnoses_malformed", "diagnoses_rule", "validation_gain_accepted", "heldout_gain_accepted",
        "births_passed", "births_failed", "births_unchecked", "skill_rewrites_malformed", "heldout_worse_accepted",
        "blame_moved_by_imitation", "blame_unread_by_imitation", "probe_episodes", "heldout_success",
        "heldout_reward")
ARMS = {"verdicts": (("free", ["skills.credit=grse", "skills.diagnoser=llm", "skills.constrained=false"]),
                     ("constrained", ["skills.credit=grse", "skills.diagnoser=llm", "skills.constrained=true"])),
        "grse": (("holland", ["skills.credit=none"]), ("holland+grse", ["skills.credit=grse", "skills.diagnoser=llm"])),
        "probe": (("holland", ["skills.credit=none"]),
                  ("holland+grse", ["skills.credit=grse", "skills.diagnoser=llm", "skills.evidence=probe"]))}


PATTERNS = (  # (blamed skill, steps: (role, status, output)) of a wordmath rollout; {e}: the right expression
    ("extractor-example-6", (("extractor", "ok", "{w}"), ("calculator", "ok", "{wv}"), ("answerer", "ok", "Answer: {wv}"))),
    ("extractor-example-2", (("extractor", "invalid_output", "The answer is"), ("calculator", "empty_output", ""))),
    ("answerer-example-1", (("extractor", "ok", "{e}"), ("calculator", "ok", "{v}"),
                            ("answerer", "invalid_output", "the answer maybe {v}"))),
    ("extractor-example-4", (("extractor", "timeout", "{e} and then"),)),
    ("extractor-rule-1", (("extractor", "ok", "{w}"), ("calculator", "ok", "{wv}"), ("answerer", "ok", "Answer: {wv}"))),
)


def verdict_cases(n: int, seed: int) -> list:
    """``n`` diagnoser cases in the shape of wordmath's (skills/editor.py Case): a problem of the wordmath stream
    ``seed``, one of PATTERNS' rollouts (wrong expressions, malformed and cut-off outputs), its blamed skill."""
    from agents.llm import parse
    from market.store import make_engine
    from scenarios.wordmath import problem
    from skills import Case, SkillLibrary, Trace

    library = SkillLibrary(make_engine("sqlite://"), "verdicts")
    for name, _ in PATTERNS:
        library.add(name, "a wordmath line", "Use every number once.", role=name.split("-")[0])
    out = []
    for i in range(n):
        p = problem(seed, i)
        wrong = p.expression.replace("-", "+", 1) if "-" in p.expression else p.expression.replace("+", "-", 1)
        fill = {"e": p.expression, "v": p.answer, "w": wrong, "wv": int(parse.evaluate(wrong))}
        name, steps = PATTERNS[i % len(PATTERNS)]
        trace, last = Trace(f"The answer is {p.answer}."), []
        for role, status, output in steps:
            skills = [name] if role == name.split("-")[0] else []
            last = [trace.invoke(role, status, agent=role[:3], skills=skills, after=last, output=output.format(**fill))]
        out.append(Case(name.split("-")[0][:3], library.get(name), -0.4, 3, trace, {}))
    return out


def verdict_rows(n: int, seed: int, meta: dict, backend: str = "hf", base_url: str = "") -> list[dict]:
    """Free against constrained verdicts of SmolLM2 (greedy, on ``backend``: hf, vllm's offline engine, or an
    OpenAI-compatible server at ``base_url``) on the same ``n`` cases, asked with wordmath's diagnoser prompts: the
    parse rate, and how often the verdict's failure type is the rule diagnoser's."""
    from agents.backends import BackendConfig
    from agents.backends.factory import make_backend
    from scenarios.wordmath import PROMPTS
    from skills import LLMDiagnoser, RuleDiagnoser

    served = {"base_url": base_url} if backend == "openai" else {}  # the model: whatever the server serves
    model = make_backend(BackendConfig(backend=backend, dtype="float32", max_batch=16, max_model_len=1024, **served))
    ask = lambda prompts: [PROMPTS.diagnosis(p) for p in prompts]
    cases = verdict_cases(n, seed)
    rule = [d.failure for d in RuleDiagnoser().diagnose(cases)]
    rows = []
    try:  # an engine (vllm's worker processes) is closed even when a diagnosis fails
        for arm, diagnoser in (("free", LLMDiagnoser(lambda ps: [c.text for c in model.generate(ask(ps))], short=True)),
                               ("constrained", LLMDiagnoser(None, short=True, choose=lambda ps, o: model.choose(ask(ps), o)))):
            start = time.perf_counter()
            got = diagnoser.diagnose(cases)
            rows.append({"experiment": "verdicts", "backend": backend, "arm": arm, "seed": seed, "cases": n,
                         "parse_rate": round(sum(d is not None for d in got) / n, 4),
                         "agrees_with_rule": round(sum(d is not None and d.failure == r for d, r in zip(got, rule)) / n, 4),
                         "seconds_per_verdict": round((time.perf_counter() - start) / n, 2),
                         "malformed_example": diagnoser.malformed[0].output[:80] if diagnoser.malformed else "", **meta})
    finally:
        model.close()
    return rows


FILES = {"verdicts": "runs", "grse": "wordmath", "probe": "wordmath_probe", "planted": "planted"}
"""Each run experiment's rows beside OUT (OUT itself holds the verdict cases' rows, ``--cases``), unless ``--rows``
names the file."""
PLANTED = "tests/skills/planted_world.toml"
"""The planted-line world: a reader pool of two correct worked examples and one wrong (tests/skills/planted_world.py)."""


def fates(library, lines: dict[str, str]) -> dict[str, str]:
    """What became of each initial ``lines[body] = label`` line: kept (current, unchanged), revised (its name current
    with another body) or pruned."""
    first = {v.body: v.name for v in sorted(library.versions(), key=lambda v: v.id) if v.parent_id is None}
    current = {s.name: s.body for s in library.current()}
    out = {}
    for body, label in lines.items():
        name = first.get(body)
        out[label] = "kept" if current.get(name) == body else "revised" if name in current else "pruned"
    return out


def planted_row(seed: int, overrides: list[str], db: str, meta: dict) -> dict:
    """One seed of GRSE and the gate on the planted-line world: held-out success before the first edit pass and at
    the end (the same problems), each correct line's and the planted line's fate, the edit counts and each gated
    edit's verdict and validation scores, and how many accepted edits lowered held-out success by more than one
    standard error of their paired differences."""
    from market.database import make_engine
    from skills.library import SkillLibrary
    from tests.skills import planted_world as W

    start = time.perf_counter()
    summary = run_experiment(load(PLANTED, overrides, seed=seed), db, progress=False)
    library = SkillLibrary(make_engine(db), summary["run_id"])
    fate = fates(library, {W.CORRECT[0]: "correct_1", W.CORRECT[1]: "correct_2", W.WRONG: "planted"})
    gated = [f"{e.operator} {e.target}: {e.gate} {e.score_before:.3f} -> {e.score_after:.3f}"
             for _, e in sorted(library.edits().items()) if e.gate != "ungated"]
    return {"experiment": "planted", "seed": seed, "heldout_initial": summary["heldout_accuracy_initial"],
            "heldout_final": summary["heldout_success"], "curated_agent": summary.get("curated_agent_success"),
            **fate, **{k: summary[k] for k in KEEP if k in summary and not k.startswith("heldout_accuracy")},
            "gated": gated,
            "seconds": round(time.perf_counter() - start, 1), **meta}


def recsys_rows(path: Path, command: str, meta: dict) -> list[dict]:
    tuned = ("ease", "itemknn_tuned", "puresvd_tuned", "trending", "next")
    rows = []
    for world, summaries in json.loads(path.read_text()).items():
        for s in (summaries.values() if isinstance(summaries, dict) else summaries):
            strongest = s["baseline_best"]
            grse = s["arms"]["grse"]
            loop = grse.get("edit_loop", {})
            rows.append({"experiment": "recsys", "world": world, "seed": s["seed"],
                         "grse_ndcg10": grse["ndcg10_final"], "tuned_best": strongest,
                         "tuned_ndcg10": s["baselines"][strongest],
                         "tuned_max_ndcg10": max(s["baselines"][n] for n in tuned),
                         "grse_minus_tuned": round(grse["ndcg10_final"] - s["baselines"][strongest], 6),
                         "pruned_grse": s["harmful_pruned_grse"], "pruned_presence": s["harmful_pruned_presence"],
                         "edits_accepted": grse["edits_accepted"],
                         "edits_gated": grse["edits_accepted"] + grse["edits_rejected"],
                         "validation_gain_accepted": loop.get("validation_gain_accepted"),
                         "heldout_gain_accepted": loop.get("heldout_gain_accepted"),
                         **meta, "command": command})
    return rows


def arm_row(what: str, scenario: str, arm: str, sized: list[str], seed: int) -> dict:
    """One run of one arm (in a worker, into a database of its own) -> its row: the summary fields the docs read."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        summary = run_experiment(load(scenario, sized, seed=seed), f"sqlite:///{Path(tmp) / 'run.db'}", progress=False)
    row = {"experiment": what, "scenario": scenario, "arm": arm, "seed": seed,
           **{k: summary[k] for k in KEEP if k in summary},
           "seconds": round(time.perf_counter() - start, 1)}
    if "diagnoses_llm" in row:
        given = row["diagnoses_llm"] + row["diagnoses_fallback"]
        row["parse_rate"] = round(row["diagnoses_llm"] / given, 4) if given else None
    return row


def planted_job(seed: int, overrides: list[str]) -> dict:
    """:func:`planted_row` in a worker, into a database of its own."""
    with tempfile.TemporaryDirectory() as tmp:
        return planted_row(seed, overrides, f"sqlite:///{Path(tmp) / 'run.db'}", {})


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_flags(p, seeds=3, quick="grse, probe: 8 training episodes, 4 held-out and 4 validation "
                      "problems; planted: its world's own size", rows=OUT,
                      rows_help=f"append the rows here (default: {OUT}, each experiment's beside it: "
                                "skill_evolution_EXPERIMENT.jsonl)")
    p.add_argument("--what", default="verdicts,grse")
    p.add_argument("--scenario", default="wordmath", choices=sorted(SIZES), help="the world of grse and probe")
    p.add_argument("--cases", type=int, default=0, help="verdicts on this many wordmath-shaped cases (no runs)")
    p.add_argument("--backend", choices=("hf", "vllm", "openai"), default="hf", help="the verdicts' engine (--cases)")
    p.add_argument("--base-url", default="", help="--backend openai: the server's OpenAI-compatible root")
    p.add_argument("--recsys", type=Path, help="run summaries of experiments/recsys_compare.py (its --out, .json)")
    p.add_argument("--recsys-command", default="python -m experiments.recsys_compare")
    args = harness.parse(p, argv)
    size = QUICK[args.scenario] if args.quick else SIZES[args.scenario]

    def written(path: Path, rows: list[dict], **extra) -> None:
        results.write(path, rows, "experiments.skill_evolution", argv, append=True, **extra)
        for row in rows:
            print(json.dumps(row), flush=True)

    if args.cases:
        jobs = [(args.cases, seed, {}, args.backend, args.base_url) for seed in harness.seeds(args)]
        harness.run(verdict_rows, jobs, args, on_result=lambda i, rows: written(args.rows, rows))
        return
    if args.recsys:
        out = args.rows if args.rows != OUT else OUT.with_name("skill_evolution_recsys.jsonl")
        written(out, recsys_rows(args.recsys, args.recsys_command, {}), command=args.recsys_command)
        return
    for what in args.what.split(","):  # one experiment's grid after another, each its rows' file
        name = FILES[what] if args.scenario == "wordmath" else f"{args.scenario}_{what}"
        out = args.rows if args.rows != OUT else OUT.with_name(f"skill_evolution_{name}.jsonl")
        if what == "planted":
            harness.run(planted_job, [(seed, args.overrides) for seed in harness.seeds(args)], args,
                        on_result=lambda i, row: written(out, [row], size=PLANTED))
            continue
        jobs = [(what, args.scenario, arm, [*size, *sets, *args.overrides], seed)
                for seed in harness.seeds(args) for arm, sets in ARMS[what]]
        harness.run(arm_row, jobs, args, on_result=lambda i, row: written(out, [row], size=" ".join(size)))


if __name__ == "__main__":
    main()
