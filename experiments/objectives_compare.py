"""Compare the policy objectives (``agents.objective``) and task samplers (``agents.tasks``) on one blocks economy.

    python -m experiments.objectives_compare --json         # every row, 12 seeds (about 5 min on 2 cores)
    python -m experiments.objectives_compare --readme       # the same run, its table as markdown
    python -m experiments.objectives_compare --quick --json # toy size, 1 seed, grpo, eapo, rods, scrl, focus+branches
    python -m experiments.objectives_compare --economy wordmath --workers 2 --readme   # LoRA on SmolLM2 (WORDMATH)
    python -m experiments.objectives_compare --economy procurement --objectives grpo,agentopsd,trial,cepo --listed
    python -m experiments.objectives_compare --economy multihop --objectives batch_c --listed   # every batch C method

The economy is ``blocks`` as shipped (scenarios/blocks.toml: value bids, bucket brigade, rent, action fees,
births, curriculum) with ``agents.actions = "grpo"``: every winner samples its move from its own action logits
(its rule's move ``rule_logit`` above the others), and after each round the configured objective
(agents/objectives) moves the logits on the round's sampled moves. Between objective rows only
``agents.objective`` changes; the seeds (0 .. seeds-1 unless ``--first-seed``), the budget and the initial
populations are the same for every row. The rows ``tasks=NAME`` (one per agents.tasks sampler: uniform, rods,
scrl) train with grpo and let the sampler draw the training instances (agents/tasks; scenarios/blocks: each
size's sampler over ``task_pool`` instances, the curriculum still choosing sizes), 2 tasks a round with G = 4
rollouts each (``agents.group = 4``: scrl normalises a reward among its sub-problem's rollouts, so it needs
groups; all three share G so they compare with each other; ``tasks=uniform`` is their baseline). Held-out
instances are the same for every row.

The rows ``NAME+branches`` train objective NAME on trees of rollouts (``agents.branches`` = 2 at
``market.batch`` = 12: each round plays M = 4 rollouts in full and N = 2 branches of each from states they
reached, tree_opsd's M and N; scenarios/blocks restores the states): focus's branches start where its gain
ranks a state highest, process_branching's where entropy plus the critic's value gain is highest, the others' at
a uniform prefix (tree_opsd's layout), and every step is credited by the rollouts below it (agents/credit/advantages.py
tree_advantage; process_branching: initial and branch rollouts normalised apart). Branches are episodes, so the budget is the same;
``grpo+branches`` is their baseline (the tree's credit without another objective).

The rows ``credit=NAME`` train grpo's surrogate on credit estimator NAME's per-step advantage
(``agents.credit``), and ``skills=NAME`` adds gated skill edit passes with skill credit NAME (``skills.credit``) to
grpo's run; they run only where asked for (``--objectives``). ``--objectives batch_c`` names the teacher, hindsight
and privileged-information family (:data:`BATCH_C`): its objectives, the credit estimators that read a world's own
signals, and the memory method; on each LLM world a row either runs or says which signal the world lacks.

Every name in ``agents.objectives.NAMES`` and every sampler gets a row. The rule-logit round gives an objective
the rule's probability of each move (the reference), a critic's logits of each (state, move) and state (tppo,
pact, focus: agents/learners/critic.py, on the same one-hot state features the value bids read), state ids (focus:
equal observations) and, blocks declaring an oracle,
the hand-written solver's move at each acted state (sero). An objective the config check refuses on blocks'
rule logits (it reads a signal a rule-logit round does not give: executed-effect ids, candidate scores) is
not run: its row says ``refused`` and why, in the ConfigError's own words, and carries no number. Per row that ran:

* ``heldout``: held-out success of the final population, frozen (scenarios/blocks: ``evaluate``),
  averaged over the held-out sizes, then over seeds (``per_seed`` and ``per_size`` beside it);
  ``sd``: its standard deviation over seeds (ddof = 1; 0 with one seed);
* ``updates``: rounds whose policy update ran the objective (a round with at least one sampled move),
  per run (``rounds``: the rounds per run, ``episodes / market.batch``);
* ``steps_per_s``: sampled action-steps learned per second of training wall time (rounds only, not the
  held-out evaluation), mean over seeds. Rule logits sample one action per step: there are no tokens.

The runs go one after another in this process, one torch thread, so the rates compare. The held-out
numbers are the same on every run (seeded); the rates are the machine's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agents import credit, tasks
from agents.objectives import NAMES
from experiments import harness, rows as results

SAMPLERS = tuple(f"tasks={name}" for name in tasks.NAMES)
BRANCHED = ("grpo+branches", "tree_opsd+branches", "focus+branches", "process_branching+branches", "contextpilot+branches")
ROWS = NAMES + SAMPLERS + BRANCHED
CREDITS = tuple(f"credit={name}" for name in credit.NAMES if name != "grpo")
EXTRA = CREDITS + ("skills=memory_shapley",)
"""Rows run only where asked for: grpo's surrogate on another credit estimator, or with Shapley-valued skill edits."""
BATCH_C = ("grpo", "agentopsd", "trial", "alignopsd", "cepo", "h2sd", "hint_sd", "distil", "rredcot", "stop_segment",
           "diamond_sd", "evidence_diagnosis", "process_branching+branches", "grpo+branches", "contextpilot+branches",
           "credit=graph_grpo", "credit=workrover_vtca", "credit=pacpo",
           "credit=self_credit", "credit=abseeker", "credit=sid_span", "credit=dars", "skills=memory_shapley")
"""``--objectives batch_c``: grpo (the baseline) and the teacher, hindsight and privileged-information methods."""
TASK_GROUP = 4  # agents.group of the sampler rows: market.batch = 8 is 2 tasks of 4 rollouts
TREE = ["agents.branches=2", "market.batch=12"]  # the branched rows: 4 full rollouts a round, 2 branches of each
UNIT = "sampled action-steps learned per second of training wall time (rule logits: one action per step, no tokens)"
TOKENS = "completion and prompt tokens the LoRA update trained on per second of training wall time (rollouts included)"


@dataclass
class Setup:
    seeds: int = 12
    """Seeds 0 .. seeds-1, the same for every objective. Held-out success at one budget swings from seed to
    seed (grpo, 5 seeds: 0.66 to 1.00 at 800 episodes, 0.06 to 1.00 at 1000), hence a dozen."""
    episodes: int = 1000
    """Training episodes per run (``market.batch`` = 8 per round): where grpo reaches held-out 1.0 on some
    seeds but not all (at 1200 it is there on 5 of 5), so an objective has room to do better or worse."""
    heldout_sizes: tuple[int, ...] = (4, 8, 16, 32)
    heldout_count: int = 100
    objectives: tuple[str, ...] = ROWS
    """The rows to run (objectives, and ``tasks=NAME`` samplers); a name left out (and not refused) gets a
    ``skipped`` row."""
    overrides: list[str] = field(default_factory=list)
    """Extra ``--set`` overrides, the same for every run."""
    economy: str = "blocks"
    """``blocks`` (rule logits), or an LLM world of :data:`LM` (LoRA on SmolLM2: WORDMATH, PROCUREMENT, TEXT)."""
    batch: int | None = None
    """``market.batch``, episodes per round (None: the scenario's)."""
    listed: bool = False
    """Only the rows asked for (``objectives``), not a row per name."""
    first_seed: int = 0
    """Seeds ``first_seed`` .. ``first_seed + seeds - 1``."""


WORDMATH = dict(seeds=3, episodes=32, batch=8, heldout_sizes=(), heldout_count=64)
"""``--economy wordmath``: the LoRA learner on SmolLM2, small: 4 rounds of 8 (2 problems x G = 4), so an objective
steps up to 4 times; held-out = the frozen market's accuracy on wordmath's shipped 64 held-out problems. A round of
grpo took about 15 s of one core here and steps only when a group's rollouts differ; tppo, pact, focus and sero train
every completion of every round (a critic or an oracle has something to say about a group that scored alike), about
2 minutes of one core a round (some 4,500 prompt and completion tokens, 8 GB resident)."""


PROCUREMENT = dict(seeds=2, episodes=32, batch=8, heldout_sizes=(), heldout_count=32)
"""``--economy procurement``: the same learner on the haggling world (scenarios/procurement.py), 4 rounds of 8;
held-out = the frozen market's mean reward (share of the possible surplus won) on its 32 shipped held-out problems."""
TEXT = dict(seeds=1, episodes=24, batch=8, heldout_sizes=(), heldout_count=16)
"""``--economy longlookup`` (or multihop, plangrid, errands, review): the same learner on a small LLM world, 3 rounds
of 8 (2 problems x G = 4; a NAME+branches row: 2 rounds of TREE's 12); held-out = the frozen market's success rate on the
world's first 16 held-out problems."""
LM = {"wordmath": WORDMATH, "procurement": PROCUREMENT,
      **dict.fromkeys(("longlookup", "multihop", "plangrid", "errands", "review"), TEXT)}
"""The economies whose actions are an LM's completions, with their presets: their rate is tokens, their rows add
privileged tokens."""


QUICK = Setup(seeds=1, episodes=160, heldout_sizes=(4,), heldout_count=20,
              objectives=("grpo", "eapo", "tasks=rods", "tasks=scrl", "focus+branches"))


def overrides(name: str, setup: Setup) -> list[str]:
    """A row's --set overrides: an objective's, or grpo with the sampler of ``tasks=NAME``."""
    if name in BRANCHED:
        learner = [f"agents.objective={name.removesuffix('+branches')}", *TREE]
    elif name in NAMES:
        learner = [f"agents.objective={name}"]
    elif name in EXTRA:
        section, _, value = name.partition("=")  # credit=NAME: agents.credit; skills=NAME: skills.credit
        learner = [f"{'agents' if section == 'credit' else 'skills'}.credit={value}"]
    else:
        learner = [f"agents.tasks={name.removeprefix('tasks=')}", f"agents.group={TASK_GROUP}"]
    if setup.economy in LM:  # the shipped economy; its LoRA learner's group of 4 is the shipped one
        size = [f"{setup.economy}.heldout={setup.heldout_count}"]
    else:
        size = [f"blocks.heldout_sizes={list(setup.heldout_sizes)}", f"blocks.heldout_count={setup.heldout_count}"]
    batch = [f"market.batch={setup.batch}"] if setup.batch and name not in BRANCHED else []  # a tree's is TREE's
    return ["agents.actions=grpo", *learner, f"run.episodes={setup.episodes}", *batch, *size, *setup.overrides]


def refusal(name: str, setup: Setup) -> str | None:
    """The ConfigError message that refuses ``name`` on blocks' rule logits, or None if it loads."""
    from scenarios.run.config import ConfigError, load

    try:
        load(setup.economy, overrides(name, setup), seed=0)
    except ConfigError as err:
        return str(err)
    return None


def train(name: str, seed: int, setup: Setup) -> dict:
    """One run: the rounds, timed, then the frozen held-out evaluation."""
    from scenarios import blocks
    from scenarios.run.config import load
    from scenarios.run.runner import build_model

    exp = load(setup.economy, overrides(name, setup), seed=seed)
    model = build_model(exp)
    rounds = steps = 0
    start = time.perf_counter()
    while model.episodes_done < exp.run.episodes:
        model.step()
        rounds += 1
        steps += int((model.trace.winner >= 0).sum())  # each winner's move was sampled from its logits
    report = model.policy.report()
    updates = report["policy_updates"]  # rounds whose update ran the objective (agents/learners/policy.py, lm_grpo.py)
    seconds = time.perf_counter() - start
    if setup.economy in LM:  # the LM learns tokens: its rate is trained tokens per second
        from scenarios.text.scenario import outcomes

        policy = model.policy.unwrapped
        with policy.evaluating():
            episodes = model.run_episodes(world=model.world.heldout, batch=exp.scenario.heldout, settle=False)
        heldout = (outcomes(model.world.heldout)[1] if setup.economy == "procurement"  # the surplus share won
                   else float(np.mean([e["success"] for e in episodes])))
        return {"seed": seed, "heldout": heldout, "per_size": {}, "rounds": rounds, "updates": updates,
                "seconds": seconds, "tokens_per_s": report["lm_train_tokens"] / seconds,
                "privileged_per_round": report["lm_privileged_tokens"] / rounds}
    heldout = blocks.evaluate(model, exp.scenario)
    return {"seed": seed, "heldout": float(np.mean(list(heldout.values()))), "per_size": heldout,
            "rounds": rounds, "updates": updates, "steps": steps, "seconds": seconds,
            "steps_per_s": steps / seconds}


def unrun(name: str, setup: Setup) -> dict | None:
    """The row of a name that does not run (refused by the config check, or not asked for), else None."""
    why = refusal(name, setup)
    if why is None and name in setup.objectives:
        return None
    status, why = ("refused", why) if why is not None else ("skipped", "not among the objectives asked for (--objectives)")
    rate = "tokens_per_s" if setup.economy in LM else "steps_per_s"
    return {"objective": name, "status": status, "why": why, "heldout": None, "sd": None, "updates": None, rate: None}


def summary(name: str, runs: list[dict], setup: Setup) -> dict:
    """A row from its runs, one per seed."""
    rate = "tokens_per_s" if setup.economy in LM else "steps_per_s"
    heldout = np.array([r["heldout"] for r in runs])
    updates = sorted({r["updates"] for r in runs})
    return {"objective": name, "status": "ran", "why": None,
            "heldout": float(heldout.mean()), "sd": float(heldout.std(ddof=1)) if heldout.size > 1 else 0.0,
            "per_seed": [round(float(h), 4) for h in heldout],
            "per_size": {n: float(np.mean([r["per_size"][n] for r in runs])) for n in runs[0]["per_size"]},
            "updates": updates[0] if len(updates) == 1 else float(np.mean([r["updates"] for r in runs])),
            "rounds": runs[0]["rounds"],
            rate: float(np.mean([r[rate] for r in runs])), "unit": UNIT if rate == "steps_per_s" else TOKENS,
            "train_seconds": float(sum(r["seconds"] for r in runs)),
            **({"privileged_per_round": float(np.mean([r["privileged_per_round"] for r in runs]))}
               if setup.economy in LM else {})}


def one_thread_train(name: str, seed: int, setup: Setup) -> dict:
    """``train`` on one torch thread: the learner's ops are tiny, and equal threads keep the rates comparable."""
    import torch

    torch.set_num_threads(1)
    return train(name, seed, setup)


def compare(setup: Setup, args: argparse.Namespace | None = None) -> list[dict]:
    """Every row: each runnable name's runs over the seeds, as the flags say (``--workers``: spawned processes,
    ``--ray``; none: one after another here, and this process's torch threads put back after)."""
    import torch

    names = ROWS + tuple(name for name in EXTRA if name in setup.objectives)
    unrun_rows = {name: unrun(name, setup) for name in names}
    seeds = range(setup.first_seed, setup.first_seed + setup.seeds)
    jobs = [(name, seed, setup) for name in names if unrun_rows[name] is None for seed in seeds]
    threads = torch.get_num_threads()
    try:
        runs = harness.run(one_thread_train, jobs, args)
    finally:
        torch.set_num_threads(threads)
    by_name = {name: [run for (n, _, _), run in zip(jobs, runs) if n == name] for name in names}
    shown = [name for name in setup.objectives if name in names] if setup.listed else names  # listed: as asked
    return [unrun_rows[name] or summary(name, by_name[name], setup) for name in shown]


def short_reason(why: str) -> str:
    """'refused: needs token_logits' from the ConfigError message (the whole message if it says otherwise)."""
    head, sep, tail = why.partition("does not provide: ")
    return f"refused: needs {tail.split(' (provided')[0]}" if sep else f"refused: {why}"


def table(rows: list[dict], setup: Setup) -> str:
    sizes = [str(n) for n in setup.heldout_sizes]
    seeds = f"{setup.seeds} seed{'s' * (setup.seeds > 1)}"
    lm = setup.economy in LM
    if lm:
        score = {"wordmath": "accuracy", "procurement": "reward (share of the possible surplus won)"}.get(setup.economy,
                                                                                                       "success rate")
        head = (f"{setup.economy} (shipped economy, agents.actions = grpo: LoRA on SmolLM2), {seeds} x {setup.episodes} "
                f"episodes, market.batch = {setup.batch}; held-out {score} of the frozen market on {setup.heldout_count} problems; tokens/s = "
                "tokens the LoRA update trained on per second of training wall time (rollouts included); privileged "
                "tokens/round = prompt and completion tokens of the privileged passes per training round")
    else:
        head = (f"blocks (shipped economy, agents.actions = grpo), {seeds} x {setup.episodes} episodes; held-out "
                f"success, mean over sizes {', '.join(sizes)} ({setup.heldout_count} instances each); steps/s = "
                "sampled action-steps learned per second of training wall time; tasks=NAME: grpo with the sampler "
                f"agents.tasks = NAME drawing the training instances, agents.group = {TASK_GROUP}; NAME+branches: "
                "NAME on trees of rollouts, agents.branches = 2, market.batch = 12 (4 full rollouts, 8 branches)")
    rate = "tokens_per_s" if lm else "steps_per_s"
    lines = [head, "",
             "| objective | held-out (mean ± sd) | per seed | " + "".join(f"n={n} | " for n in sizes)
             + f"updates / rounds | {'tokens/s' if lm else 'steps/s'} |" + (" privileged tokens/round |" if lm else ""),
             "|---|---|---|" + "---|" * len(sizes) + "---|---|" + ("---|" if lm else "")]
    for r in rows:
        if r["status"] == "ran":
            cells = [harness.pm(r["heldout"], r["sd"], 3), " ".join(f"{h:.2f}" for h in r["per_seed"])]
            cells += [f"{r['per_size'][n]:.2f}" for n in sizes]
            updates = r["updates"] if isinstance(r["updates"], int) else f"{r['updates']:.1f}"  # a mean over seeds
            cells += [f"{updates} / {r['rounds']}", f"{r[rate]:.0f}"] + ([f"{r['privileged_per_round']:.0f}"] if lm else [])
        else:
            cells = [short_reason(r["why"]) if r["status"] == "refused" else "skipped"] + ["-"] * (len(sizes) + 3 + lm)
        lines.append(f"| {r['objective']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_flags(ap, seeds=None, quick="160 episodes, grpo, eapo, rods, scrl, focus+branches",
                      out_help="also write the markdown table to this file")
    ap.add_argument("--episodes", type=int, default=None,
                    help=f"training episodes per run; default: {Setup.episodes} (wordmath: {WORDMATH['episodes']})")
    ap.add_argument("--heldout", type=int, default=None, help="held-out problems (the LLM worlds; default: the preset's)")
    ap.add_argument("--objectives", default=None,
                    help="comma-separated rows to run: objectives, tasks=SAMPLER, NAME+branches, credit=ESTIMATOR, "
                         "skills=memory_shapley, or batch_c (default: all objectives and samplers; --quick: "
                         "grpo,eapo,tasks=rods,tasks=scrl,focus+branches); every objective and sampler still gets a row")
    ap.add_argument("--economy", choices=("blocks", *LM), default="blocks",
                    help="blocks: rule logits (default); the LLM worlds: LoRA on SmolLM2, small (WORDMATH, PROCUREMENT, TEXT)")
    ap.add_argument("--listed", action="store_true", help="rows only for the names asked for (--objectives)")
    ap.add_argument("--json", action="store_true", help='last stdout line: {"rows": [...]}')
    ap.add_argument("--readme", action="store_true", help="print the markdown table (the README's)")
    args = harness.parse(ap, argv)
    chosen = tuple(args.objectives.split(",")) if args.objectives else (QUICK if args.quick else Setup).objectives
    chosen = tuple(dict.fromkeys(n for name in chosen for n in (BATCH_C if name == "batch_c" else (name,))))
    unknown = sorted(set(chosen) - set(ROWS + EXTRA))
    if unknown:
        ap.error(f"unknown rows {', '.join(unknown)} (known: batch_c, {', '.join(ROWS + EXTRA)})")
    if args.economy in LM:
        setup = Setup(**LM[args.economy], objectives=chosen, overrides=args.overrides, economy=args.economy)
    elif args.quick:
        setup = dataclasses.replace(QUICK, objectives=chosen, overrides=args.overrides)
    else:
        setup = Setup(objectives=chosen, overrides=args.overrides)
    sized = {k: v for k, v in (("seeds", args.seeds), ("episodes", args.episodes), ("heldout_count", args.heldout))
             if v is not None}
    setup = dataclasses.replace(setup, **sized, listed=args.listed, first_seed=args.first_seed)
    start = time.perf_counter()
    rows = compare(setup, args)
    seconds = time.perf_counter() - start
    text = table(rows, setup)
    if args.out:
        args.out.write_text(text + "\n")
    if args.readme or not args.json:
        print(text)
    print(f"objectives_compare: {seconds:.0f} s wall", file=sys.stderr)
    if args.rows:
        results.write(args.rows, results.from_markdown(text), "experiments.objectives_compare", argv)
    if args.json:
        print(json.dumps({"rows": rows, "seconds": round(seconds, 1), "seeds": setup.seeds,
                          "episodes": setup.episodes, "economy": setup.economy,
                          "unit": TOKENS if setup.economy in LM else UNIT}))
    return rows


if __name__ == "__main__":
    main()
