"""The blocks ablation: which mechanisms of the economy does Blocks World need?

Runs the default ``blocks`` scenario and one ablation per row, each a single
``--set``, over several seeds, and writes the held-out success per size of
every final population (frozen) as a Markdown table, a JSON file and a plot
of success versus size::

    python -m experiments.blocks_ablation --seeds 3 --workers 2 --out runs/blocks_ablation
    python -m experiments.blocks_ablation --seeds 1 --set run.episodes=4000   # a quick look
    python -m experiments.blocks_ablation --quick                             # toy size: a smoke run

Rows (Baum's claims: property rights and conservation are what make the
economy work):

* ``full``: the default config;
* ``no auction`` (``market.clearing=random``): a random awake agent acts, bids mean nothing;
* ``no conservation`` (``market.conserve=false``): the house mints the winner's payment (Holland);
* ``no births`` (``population.births=false``): the initial random population only;
* ``final_only`` (``market.payment=final_only``): winners pay the house, never their predecessor;
* ``one value per agent`` (``agents.features=agent``, ``agents.value.child=0.5``: an earlier
  default): each agent's value is the same in every state it wakes in, and a child starts at half its
  parent's, so it never wins where its parent wakes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from experiments import harness, rows

ABLATIONS = {
    "full": [],
    "no auction": ["market.clearing=random"],
    "no conservation": ["market.conserve=false"],
    "no births": ["population.births=false"],
    "final_only": ["market.payment=final_only"],
    "one value per agent": ["agents.features=agent", "agents.value.child=0.5"],
}
QUICK = ["run.episodes=160", "blocks.heldout_count=5"]


def run_one(name: str, overrides: list[str], seed: int) -> dict:
    """One run of the blocks scenario (in a worker process); its summary plus wall time."""
    from scenarios.run.config import load
    from scenarios.run.runner import run_experiment

    start = time.perf_counter()
    summary = run_experiment(load("blocks", overrides, seed=seed), "sqlite://", progress=False)
    return {"ablation": name, "seed": seed, "seconds": round(time.perf_counter() - start, 1),
            "heldout_success": summary["heldout_success"], "population": summary["population"],
            "episodes": summary["episodes"], "ledger_hash": summary["ledger_hash"]}


def table(results: list[dict], seeds: list[int]) -> str:
    sizes = list(results[0]["heldout_success"])
    lines = ["| ablation | " + " | ".join(f"n={n}" for n in sizes) + " | per seed (n=" + sizes[0] + ") |",
             "|---|" + "---|" * (len(sizes) + 1)]
    for name in ABLATIONS:
        rows = sorted((r for r in results if r["ablation"] == name), key=lambda r: r["seed"])
        if not rows:
            continue
        cells = [harness.mean_sd([r["heldout_success"][n] for r in rows], 2, ddof=0) for n in sizes]
        per_seed = " ".join(f"{r['heldout_success'][sizes[0]]:.2f}" for r in rows)
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {per_seed} |")
    return "\n".join(lines) + f"\n\nMean ± standard deviation over seeds {seeds}; held-out success of the final population, frozen.\n"


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = list(results[0]["heldout_success"])
    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    for name in ABLATIONS:
        rows = [r for r in results if r["ablation"] == name]
        if rows:
            v = np.array([[r["heldout_success"][n] for n in sizes] for r in rows])
            ax.errorbar([int(n) for n in sizes], v.mean(0), yerr=v.std(0), marker="o", capsize=3, label=name)
    ax.set(xscale="log", xlabel="goal size n (held-out)", ylabel="success", ylim=(-0.05, 1.05),
           title="Blocks World: held-out success")
    ax.set_xticks([int(n) for n in sizes], sizes)
    ax.minorticks_off()  # log-axis minor labels (2 x 10^1, ...) would collide with the sizes
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1))  # outside: the curves span the whole axes
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    harness.add_flags(p, seeds=3, workers=2, quick="160 episodes, 5 held-out instances a size",
                      out=Path("runs/blocks_ablation"), out_help="the folder of the table, the JSON and the plot")
    p.add_argument("--only", nargs="+", choices=list(ABLATIONS), help="run only these rows")
    args = harness.parse(p, argv)
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = list(harness.seeds(args))
    sets = [*(QUICK if args.quick else []), *args.overrides]
    jobs = [(name, sets + ablation, seed) for name, ablation in ABLATIONS.items()
            if not args.only or name in args.only for seed in seeds]
    results = harness.run(run_one, jobs, args, on_result=lambda i, r: print(json.dumps(r), flush=True))
    (args.out / "ablation.json").write_text(json.dumps(results, indent=1))
    (args.out / "ablation.md").write_text(table(results, seeds))
    plot(results, args.out / "success_vs_size.png")
    print(table(results, seeds))
    if args.rows:
        rows.write(args.rows, rows.from_markdown(table(results, seeds)), "experiments.blocks_ablation", argv)


if __name__ == "__main__":
    main()
