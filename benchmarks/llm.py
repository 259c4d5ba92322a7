"""LLM agents: lockstep batching against per-agent sequential calls, measured in one run.

Usage::

    python benchmarks/llm.py             # B = 8 and 32 (a few minutes on 2 cores, most of it the sequential baseline)
    python benchmarks/llm.py --quick     # B = 4 and 16
    python benchmarks/llm.py --sizes 2 4 # any batch sizes (the test suite's smoke run)
    python benchmarks/llm.py --json      # ... and one final JSON line with the figures
    python benchmarks/llm.py --backend vllm

The work: the ``wordmath`` market (scenarios/wordmath.py) on its embedded SmolLM2, frozen
(no money moves), a fixed population (the scenario's 12 initial agents, seed 0) playing B
held-out problems until each is answered or the horizon ends. Each condition starts cold: a
fresh model with the same seed (same agents), no cached wake-up scores, no memo, so the
wake-up scoring pass and every action's generation are inside the measurement.

* lockstep: every LLM call of a market step is one batch over all B worlds and all agents
  that need it (agents/llm_policy.py, ``lockstep = true``);
* sequential: the same prompts, one backend call each (``lockstep = false``), the way a
  per-agent framework calls its model.

Reported per condition: wall seconds, world-steps per second (steps summed over the B
episodes / wall), generated tokens per second, prompts sent; for the lockstep runs, the share
of wall time spent outside the backend (the market, the parsers, the Python around the calls).
The speed-up is lockstep steps/s over sequential steps/s at the same B. Both conditions send
the same prompts as long as the engine decodes a batch exactly as it decodes one prompt;
``same_actions`` reports the share of (step, world) actions that came out identical
(action and text; bfloat16 decoding of a padded batch can flip a near-tie).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np

from agents.backends import BackendConfig
from agents.backends.factory import shared_backend
from agents.llm_policy import PolicyConfig
from market import MarketConfig, MarketModel, PopulationConfig
from scenarios import wordmath


def play(cfg: wordmath.Config, batch: int, lockstep: bool) -> dict:
    world, policy = wordmath.build(dataclasses.replace(cfg, policy=PolicyConfig(lockstep=lockstep, memo=0)))
    model = MarketModel(world, policy, MarketConfig(batch=batch, bid_scheme="holland", base_bid=0.02),
                        PopulationConfig(initial_agents=12, initial_wealth=0.2), seed=0)
    problems = wordmath.WordmathWorld(cfg, world.board, seed=cfg.heldout_seed, fixed=np.arange(batch))
    actions = []
    act = policy.act

    def recording(obs, winners):
        chosen = act(obs, winners)
        actions.extend(f"{a}:{p}" for a, p in zip(chosen.tolist(), policy.task.payloads))
        return chosen

    policy.act = recording
    policy.backend.stats = type(policy.backend.stats)()
    start = time.perf_counter()
    episodes = model.run_episodes(world=problems, batch=batch, settle=False)
    wall = time.perf_counter() - start
    stats = policy.backend.stats
    steps = sum(e["steps"] for e in episodes)
    return {"batch": batch, "mode": "lockstep" if lockstep else "sequential", "wall_s": round(wall, 2),
            "steps": steps, "steps_per_s": round(steps / wall, 2),
            "gen_tokens": stats.completion_tokens, "gen_tokens_per_s": round(stats.completion_tokens / wall, 1),
            "prompts": stats.prompts, "backend_calls": stats.calls, "solved": int(sum(e["success"] for e in episodes)),
            "outside_backend": round(1 - stats.seconds / wall, 4), "actions": actions}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="B = 4 and 16 instead of 8 and 32")
    ap.add_argument("--json", action="store_true", help="print one final JSON line with the figures")
    ap.add_argument("--backend", choices=("hf", "vllm"), default="hf")
    ap.add_argument("--sizes", type=int, nargs="+", help="batch sizes B to compare (overrides --quick)")
    args = ap.parse_args(argv)
    sizes = args.sizes or ((4, 16) if args.quick else (8, 32))
    cfg = wordmath.Config(llm=BackendConfig(backend=args.backend))
    backend = shared_backend(cfg.llm)  # load once, outside the timings
    play(cfg, 2, True)  # warm-up: first-call costs (kernels, allocator) stay out of the figures

    rows, summary = [], {"backend": args.backend, "speedup": {}, "outside_backend": {}, "same_actions": {}}
    print(f"{'B':>3} {'mode':>10} {'wall s':>8} {'steps/s':>8} {'gen tok/s':>10} {'prompts':>8} {'calls':>6} "
          f"{'outside':>8}")
    for batch in sizes:
        pair = [play(cfg, batch, True), play(cfg, batch, False)]
        for r in pair:
            print(f"{r['batch']:>3} {r['mode']:>10} {r['wall_s']:>8.2f} {r['steps_per_s']:>8.2f} "
                  f"{r['gen_tokens_per_s']:>10.1f} {r['prompts']:>8} {r['backend_calls']:>6} {r['outside_backend']:>8.1%}")
        lock, seq = pair
        same = [a == b for a, b in zip(lock["actions"], seq["actions"])]
        summary["same_actions"][batch] = round(float(np.mean(same)), 3) if same else 0.0
        summary["speedup"][batch] = round(lock["steps_per_s"] / seq["steps_per_s"], 2)
        summary["outside_backend"][batch] = lock["outside_backend"]
        rows += [{k: v for k, v in r.items() if k != "actions"} for r in pair]
    for batch in sizes:
        print(f"B = {batch}: lockstep is {summary['speedup'][batch]}x the sequential steps/s; "
              f"{summary['outside_backend'][batch]:.1%} of lockstep wall time outside the backend; "
              f"same actions in {summary['same_actions'][batch]:.0%} of steps")
    backend.close()
    if args.json:
        print(json.dumps(summary | {"rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
