"""Engine scaling: wall time per auction step of the relay economy versus N and B, and memory per agent.

Usage::

    python benchmarks/scaling.py                  # N = 1k, 10k, 100k, 1M x B = 1, 8, 32, 64 (~4 min on 2 cores)
    python benchmarks/scaling.py --json           # ... and one final JSON line
    python benchmarks/scaling.py --quick          # smoke run: N = 1k, 10k x B = 1, 4, one round each
    python benchmarks/scaling.py --out DIR        # where the plot goes (default runs/bench/scaling.png)

What is measured. :class:`market.MarketModel` on the ``relay`` scenario (K = 5 stages, so a
round is at most 10 auction steps), rule policy, Holland bids, first-price clearing, bucket
brigade; the population is held near N (no births and no rent, so no O(N) rent transfer is
mixed into the auction's cost; at B > 1 an agent that wins several worlds at once can still go
bankrupt, a handful per thousand, reported as ``alive_at_end``). One round is ``model.step()``: B lockstep
episodes, then settlement (ledger flush and hash, data collection). *Time per auction step*
is the round's wall time divided by the auction steps it ran (its longest episode), median
over the timed rounds, after one warm-up round at B = 1 that also flushes the N funding
transfers of construction and makes the N birth records (their skill text; deferred from the
build to the first round, see ``MarketModel._record_births``): its wall time is reported apart
as *first round*. The same model is reused across B (``cfg.batch`` is set
between rounds). *ns per agent-bid* is that time divided by N x B: flat means linear in N x B.
Beside the wall time, the same rounds are timed in CPU seconds of the process
(``time.process_time``): on a shared machine the wall time also counts the time other
processes held the cores, the CPU time does not, so the curve's shape is read from the CPU
time and the fit ``c + a N + b N B`` (least squares in relative error) is made on it.

Memory. Every N runs in a fresh subprocess. ``baseline`` is its resident set (VmRSS from
/proc) after the imports and after a throwaway economy of 2,048 agents has stepped once, which
loads the engine's compiled kernels (numba and their machine code: reported apart as
``compiled_code_mib``, a cost of the process whatever N is: since the ledger funds a large cohort
on its compiled path, a baseline taken before it counted numba's import in the build, 281 bytes per
agent at 1M instead of 153). *resident per agent* is (VmRSS after building the model -
baseline) / N: population arrays, rules and the ledger's pending funding transfers (no Mesa
``Trader`` facade exists until someone reads ``model.agents``, market/agent.py); *peak per agent*
is (``VmHWM`` after the B = 1 rounds - baseline) / N, the high-water mark reset at the baseline:
the most the process held while stepping at B = 1 (larger B adds [B, N] temporaries of the
auction, reported as ``peak_all``). *arrays per agent* is the bytes of the population's and the rules' numpy
columns alone. Last, ``model.agents`` is read once, as a Mesa user would: *facades* is the time
it takes to build the N facades and their resident bytes per agent, what asking costs.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._units import label  # noqa: E402

COMPILED_AGENTS = 2048
"""A throwaway economy this large, stepped once before the baseline, loads the engine's compiled kernels
(the ledger's, the auction's, the rule interpreter's): a fixed cost of the process, not of its agents."""


def vm_rss(field: str = "VmRSS") -> int:
    """Resident set size of this process (``VmHWM``: its high-water mark since :func:`reset_peak`), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak() -> None:
    """Set the high-water mark to the current resident set (Linux >= 4.0), so a peak read later is this
    model's, not the warm-up's."""
    Path("/proc/self/clear_refs").write_text("5")


def worker(n: int, batches: list[int], rounds: int) -> dict:
    """Build one model of N agents, time rounds at each B, measure memory; runs in its own process."""
    from agents.rules import FIELDS
    from market import MarketConfig, MarketModel, PopulationConfig
    from scenarios import relay

    def build(agents: int) -> MarketModel:
        world, policy = relay.build(relay.Config(stages=5))
        market = MarketConfig(batch=1, bid_scheme="holland", rent=0.0)
        population = PopulationConfig(initial_agents=agents, max_agents=agents, min_agents=0, p_exploit=0.0,
                                      p_explore=0.0, birth_interval=0)
        return MarketModel(world, policy, market, population, seed=0)

    before_code = vm_rss()
    build(COMPILED_AGENTS).step()  # loads the compiled kernels (numba and its machine code), once per process
    code = vm_rss() - before_code
    gc.collect()
    baseline = vm_rss()
    reset_peak()
    start = time.perf_counter()
    model = build(n)
    build_s = time.perf_counter() - start
    resident = vm_rss() - baseline
    rules = model.policy.rules
    arrays = sum(getattr(model.population, c).nbytes for c in ("ids", "alive", "wealth", "bid", "parent", "born"))
    arrays += sum(getattr(rules, c).nbytes for c in FIELDS)
    w0 = time.perf_counter()
    model.step()  # warm-up (B = 1)
    first_round_s = time.perf_counter() - w0

    wall, cpu, peak_b1 = {}, {}, 0
    for batch in batches:
        model.cfg.batch = batch
        walls, cpus = [], []
        for _ in range(rounds):
            w0, c0 = time.perf_counter(), time.process_time()
            model.step()
            steps = max(e["steps"] for e in model.last_round.episodes)
            walls.append((time.perf_counter() - w0) / steps)
            cpus.append((time.process_time() - c0) / steps)
        wall[str(batch)], cpu[str(batch)] = 1e3 * statistics.median(walls), 1e3 * statistics.median(cpus)
        if batch == 1:
            peak_b1 = vm_rss("VmHWM") - baseline
    peak_all = vm_rss("VmHWM") - baseline
    assert int(model.population.wealth.sum()) == 0  # money is conserved
    before, w0 = vm_rss(), time.perf_counter()
    assert len(model.agents) == model.population.size  # the Mesa face, built on first ask
    facades_s, facade_bytes = time.perf_counter() - w0, vm_rss() - before
    return {"N": n, "build_s": build_s, "first_round_s": first_round_s, "facades_s": facades_s,
            "facade_bytes_per_agent": facade_bytes / n, "compiled_code_bytes": code, "resident_per_agent": resident / n,
            "peak_per_agent": peak_b1 / n,
            "peak_all_per_agent": peak_all / n, "arrays_per_agent": arrays / n, "ms_per_step": wall,
            "cpu_ms_per_step": cpu, "alive_at_end": model.population.size}


def fit(rows: list[dict], batches: list[int], key: str = "cpu_ms_per_step") -> dict:
    """Least squares, in relative error, of time per step = c + a N + b N B over every (N, B) measured."""
    n = np.array([r["N"] for r in rows for _ in batches], dtype=np.float64)
    b = np.array([b for _ in rows for b in batches], dtype=np.float64)
    t = np.array([r[key][str(b)] for r in rows for b in batches]) * 1e6  # ns
    design = np.stack([np.ones_like(n), n, n * b], axis=1) / t[:, None]
    (c, a, per_bid), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    worst = float(np.abs(design @ np.array([c, a, per_bid]) - 1).max())
    return {"fixed_us": float(c) / 1e3, "per_agent_ns": float(a), "per_agent_bid_ns": float(per_bid), "max_rel_error": worst}


def plot(rows: list[dict], batches: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["N"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for i, b in enumerate(batches):
        ms, cpu = [r["ms_per_step"][str(b)] for r in rows], [r["cpu_ms_per_step"][str(b)] for r in rows]
        left.plot(ns, ms, "o-", color=f"C{i}", label=f"B = {b} (wall)")
        left.plot(ns, cpu, "x--", color=f"C{i}", alpha=0.6, label=f"B = {b} (CPU)")
        right.plot([n * b for n in ns], [1e6 * m / (n * b) for m, n in zip(ms, ns)], "o-", color=f"C{i}", label=f"B = {b} (wall)")
        right.plot([n * b for n in ns], [1e6 * m / (n * b) for m, n in zip(cpu, ns)], "x--", color=f"C{i}", alpha=0.6,
                   label=f"B = {b} (CPU)")
    b0 = batches[-1]
    ref = rows[-1]["ms_per_step"][str(b0)] / ns[-1]
    left.plot(ns, [ref * n for n in ns], "k:", lw=1, label="linear in N")
    left.set(xscale="log", yscale="log", xlabel="agents N", ylabel="ms per auction step",
             title="relay engine: time per auction step")
    right.set(xscale="log", yscale="log", xlabel="agent-bids per step (N x B)", ylabel="ns per agent-bid",
              title="cost per agent-bid (flat = linear in N x B)")
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)



def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: N = 1k, 10k x B = 1, 4, one round each")
    ap.add_argument("--json", action="store_true", help="print one final JSON line")
    ap.add_argument("--out", type=Path, default=Path("runs/bench"), help="folder for scaling.png (default runs/bench)")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # internal: measure one N in this process
    ap.add_argument("--batches", default="1,8,32,64", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, [int(b) for b in args.batches.split(",")], args.rounds)))
        return 0

    t0 = time.perf_counter()
    # N -> timed rounds per B
    plan, batches = ({1000: 1, 10_000: 1}, [1, 4]) if args.quick else \
        ({1000: 20, 10_000: 10, 100_000: 5, 1_000_000: 2}, [1, 8, 32, 64])
    print("relay engine, K=5; ms per auction step, wall / CPU (median over rounds; CPU = this process's time):")
    print(f"  {'N':>8}" + "".join(f" {'B=' + str(b) + ' wall':>11} {'CPU':>9}" for b in batches)
          + f" {'build s':>8} {'B/agent':>8} {'peak B/agent':>13}")
    rows = []
    for n, rounds in plan.items():
        proc = subprocess.run([sys.executable, __file__, "--worker", str(n), "--batches", ",".join(map(str, batches)),
                               "--rounds", str(rounds)], capture_output=True, text=True, check=True)
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(r)
        print(f"  {n:>8}" + "".join(f" {r['ms_per_step'][str(b)]:>11.3f} {r['cpu_ms_per_step'][str(b)]:>9.3f}" for b in batches)
              + f" {r['build_s']:>8.2f} {r['resident_per_agent']:>8.0f} {r['peak_per_agent']:>13.0f}", flush=True)
    f = fit(rows, batches)
    print(f"\nfit (CPU): time per auction step = {f['fixed_us']:.0f} us + {f['per_agent_ns']:.1f} ns x N + "
          f"{f['per_agent_bid_ns']:.1f} ns x N x B (worst relative error {100 * f['max_rel_error']:.0f}%)")
    big = rows[-1]
    print(f"memory at N = {label(big['N'])}: {big['resident_per_agent']:.0f} B resident per agent after building "
          f"({big['arrays_per_agent']:.0f} B of it numpy columns, the rest the ledger's pending funding and the "
          f"allocator; before it, loading the compiled kernels took {big['compiled_code_bytes'] / 2**20:.0f} MiB, whatever N), "
          f"peak {big['peak_per_agent']:.0f} B per agent stepping at B = 1, {big['peak_all_per_agent']:.0f} B with B up to {batches[-1]}")
    print(f"build {big['build_s']:.2f} s, first round {big['first_round_s']:.2f} s (the N birth records); "
          f"reading model.agents then builds the Mesa facades: {big['facades_s']:.2f} s, "
          f"{big['facade_bytes_per_agent']:.0f} B per agent")
    png = args.out / "scaling.png"
    plot(rows, batches, png)
    print(f"plot: {png}")
    print(f"wall time: {time.perf_counter() - t0:.1f} s")
    if args.json:
        out = {f"ms_{label(r['N'])}_B{b}": round(r["ms_per_step"][str(b)], 4) for r in rows for b in batches}
        out |= {f"cpu_ms_{label(r['N'])}_B{b}": round(r["cpu_ms_per_step"][str(b)], 4) for r in rows for b in batches}
        out |= {f"ns_per_bid_{label(r['N'])}_B{b}": round(1e6 * r["ms_per_step"][str(b)] / (r["N"] * b), 2)
                for r in rows for b in batches}
        out |= {f"build_s_{label(big['N'])}": round(big["build_s"], 3),
                f"first_round_s_{label(big['N'])}": round(big["first_round_s"], 3),
                f"facades_s_{label(big['N'])}": round(big["facades_s"], 3),
                f"facade_bytes_per_agent_{label(big['N'])}": round(big["facade_bytes_per_agent"]),
                f"bytes_per_agent_{label(big['N'])}": round(big["resident_per_agent"]),
                f"peak_bytes_per_agent_{label(big['N'])}": round(big["peak_per_agent"]),
                f"array_bytes_per_agent_{label(big['N'])}": round(big["arrays_per_agent"]),
                "compiled_code_mib": round(big["compiled_code_bytes"] / 2**20, 1), "plot": str(png)}
        out |= {f"fit_{k}": round(v, 3) for k, v in f.items()}
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
