"""LLM agents: lockstep batching against one call per prompt and against the bare engine, on the same prompts.

Usage::

    python benchmarks/llm.py             # B = 8 and 32, 3 repeats (several minutes on 2 cores)
    python benchmarks/llm.py --quick     # B = 4, one repeat (the smoke size, under a minute)
    python benchmarks/llm.py --sizes 2 4 --repeats 3
    python benchmarks/llm.py --json      # ... and one final JSON line with the figures
    python benchmarks/llm.py --backend vllm
    python benchmarks/llm.py --backend openai --base-url http://127.0.0.1:8000/v1   # + the mesa-llm peer

The work: the ``wordmath`` market (scenarios/wordmath.py) on its embedded SmolLM2, frozen
(no money moves), a fixed population (the scenario's 12 initial agents, seed 0) playing B
held-out problems until each is answered or the horizon ends.

First one lockstep run *records* every backend call it makes (the wake-up scoring batches
and the action generations, step by step). Then three modes run exactly those prompts,
interleaved (mode order rotates every repeat), each repeat starting cold (the hf prefix
cache emptied; no memo, no cached wake-up scores):

* ``sequential``: the recorded prompts, one backend call each, in order (a per-agent
  framework's pattern; with no market around it, so the speed-up below is conservative);
* ``lockstep``: the market itself again in lockstep (agents/llm/policy.py): every LLM call of
  a market step is one batch over all B worlds; its prompts are checked against the record;
* ``raw``: the recorded batches straight into the backend, nothing around them: the ceiling
  for the market (what the engine alone takes for the same work);
* ``mesa_llm`` and ``mesa_llm_parallel`` (``--backend openai`` only): the peer framework on the
  same server, mesa-llm's agents each asking for their action at every world-step of the
  record, one after another (its default schedule) or all of a step's agents at once (its
  parallel stepping): see benchmarks/_mesa_llm_peer.py.

Reported per (B, mode): median wall seconds with min and max, world-steps per second
(steps of the recorded run / wall), generated tokens per second, and where the backend
times its phases (hf) tokenisation, prefill and decoding seconds, plus ``market_s`` (wall
outside the backend). Summary: ``speedup`` = lockstep steps/s over sequential steps/s;
``share_of_ceiling`` = raw wall / lockstep wall (the market's throughput as a share of
the bare engine's on the same batches); ``vs_mesa_llm`` = lockstep steps/s over mesa-llm's
steps/s on the same world-steps, against its faster schedule (parallel; ``vs_mesa_llm_default``
against its default one); ``prefix_tokens_saved``: prompt tokens the lockstep
run did not prefill (prefix cache), with ``prefill_tokens``, the ones it did.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scenarios.text import scenario as text_scenario  # noqa: E402
from agents.backends import BackendConfig  # noqa: E402
from agents.backends.base import Stats  # noqa: E402
from agents.backends.factory import shared_backend  # noqa: E402
from agents.llm.policy import PolicyConfig  # noqa: E402
from scenarios.text.adapter import TextBatch  # noqa: E402
from market import MarketConfig, MarketModel, PopulationConfig  # noqa: E402
from scenarios import wordmath  # noqa: E402

PHASES = ("tokenize_s", "prefill_s", "decode_s")


class Recorder:
    """The backend, with every call written down: [(kind, prompts)]."""

    def __init__(self, backend):
        self.backend, self.calls = backend, []

    def __getattr__(self, attr):  # what the policy reads of its engine (name, cfg for the usage label ...)
        return getattr(self.backend, attr)

    @property
    def stats(self):
        return self.backend.stats

    @stats.setter
    def stats(self, value):
        self.backend.stats = value

    def generate(self, prompts):
        self.calls.append(("generate", list(prompts)))
        return self.backend.generate(prompts)

    def score(self, prompts):
        self.calls.append(("score", list(prompts)))
        return self.backend.score(prompts)

    @property
    def scored_tokens(self):
        return self.backend.scored_tokens


def cold(backend) -> None:
    """Each timed run starts with nothing cached in the engine (hf: the prefix cache)."""
    backend.stats = Stats()
    if getattr(backend, "prefixes", None) is not None:
        backend.prefixes.clear()


def market(cfg: wordmath.Config, batch: int, peer=None) -> tuple[float, int, list, Stats, list]:
    """One lockstep market run: (wall, world-steps, its backend calls, backend stats, and with ``peer``
    the prompts mesa-llm's agents would send at each step)."""
    world, policy = text_scenario.build(wordmath.Wordmath, dataclasses.replace(cfg, policy=PolicyConfig(lockstep=True, memo=0)))
    model = MarketModel(world, policy, MarketConfig(batch=batch, bid_scheme="holland", base_bid=0.02),
                        PopulationConfig(initial_agents=12, initial_wealth=0.2), seed=0)
    problems = TextBatch(world.board, cfg.heldout_seed, world.horizon, fixed=np.arange(batch))
    policy.backend = recorder = Recorder(policy.backend)
    asks = peer.record(problems, policy) if peer else []
    cold(recorder.backend)
    start = time.perf_counter()
    episodes = model.run_episodes(world=problems, batch=batch, settle=False)
    wall = time.perf_counter() - start
    return wall, sum(e["steps"] for e in episodes), recorder.calls, recorder.stats, asks


def mesa_llm(peer, backend, asks: list, parallel: bool) -> tuple[float, Stats]:
    wall, calls, tokens = peer.replay(backend.root, backend.model, asks, parallel)
    return wall, Stats(calls=calls, prompts=calls, completion_tokens=tokens, seconds=wall)


def replay(backend, calls: list, one_by_one: bool) -> tuple[float, Stats]:
    cold(backend)
    start = time.perf_counter()
    for kind, prompts in calls:
        fn = getattr(backend, kind)
        for chunk in ([[p] for p in prompts] if one_by_one else [prompts]):
            fn(chunk)
    return time.perf_counter() - start, backend.stats


def row(batch: int, mode: str, runs: list[tuple[float, Stats]], steps: int) -> dict:
    walls = [w for w, _ in runs]
    wall = statistics.median(walls)
    stats = runs[walls.index(min(walls, key=lambda w: abs(w - wall)))][1]  # the median run's stats
    out = {"batch": batch, "mode": mode, "wall_s": round(wall, 3), "wall_min_s": round(min(walls), 3),
           "wall_max_s": round(max(walls), 3), "steps": steps, "steps_per_s": round(steps / wall, 3),
           "gen_tokens": stats.completion_tokens, "gen_tokens_per_s": round(stats.completion_tokens / wall, 1),
           "prompts": stats.prompts, "backend_calls": stats.calls, "market_s": round(wall - stats.seconds, 3),
           "prefill_tokens": stats.prefill_tokens, "prefix_tokens_saved": stats.prefix_tokens_saved}
    return out | {k: round(getattr(stats, k), 3) for k in PHASES}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="B = 4, one repeat, instead of 8 and 32")
    ap.add_argument("--json", action="store_true", help="print one final JSON line with the figures")
    ap.add_argument("--backend", choices=("hf", "vllm", "openai"), default="hf")
    ap.add_argument("--base-url", default=BackendConfig.base_url,
                    help="--backend openai: the OpenAI-compatible server (e.g. a local vllm serve of SmolLM2)")
    ap.add_argument("--sizes", type=int, nargs="+", help="batch sizes B to compare (overrides --quick)")
    ap.add_argument("--repeats", type=int, help="timed runs per (B, mode), interleaved (default 3; --quick: 1)")
    args = ap.parse_args(argv)
    sizes = args.sizes or ((4,) if args.quick else (8, 32))
    args.repeats = args.repeats or (1 if args.quick else 3)
    peer = None
    if args.backend == "openai":
        try:  # imported only here: mesa-llm is a benchmark-only extra, and litellm takes seconds to import
            from benchmarks import _mesa_llm_peer as peer
        except ImportError as err:
            ap.exit(2, f"--backend openai also runs the mesa-llm peer: {err} (pip install -e '.[peer]')\n")
        try:  # a server that is not there is one line now, not the backend's retries until its deadline
            urllib.request.urlopen(args.base_url.rstrip("/") + "/models", timeout=10).close()
        except OSError as err:
            ap.exit(2, f"--base-url {args.base_url}: no OpenAI-compatible server answers ({err}); "
                       "start one first (README: Performance, against mesa-llm)\n")
    cfg = wordmath.Config(llm=BackendConfig(backend=args.backend, base_url=args.base_url))
    backend = shared_backend(cfg.llm)  # load once, outside the timings
    market(cfg, 2)  # warm-up: first-call costs (kernels, allocator, stop masks) stay out of the figures

    rows, summary = [], {"backend": args.backend, "repeats": args.repeats, "speedup": {}, "share_of_ceiling": {},
                         "prefix_tokens_saved": {}, "prefill_tokens": {}, "same_prompts": {}} | (
                             {"vs_mesa_llm": {}, "vs_mesa_llm_default": {}, "peer_asks_market_prompts": {},
                              "market_generations": {}, "peer_calls": {}} if peer else {})
    print(f"{'B':>3} {'mode':>17} {'wall s':>8} {'(min-max)':>15} {'steps/s':>8} {'gen tok/s':>10} {'calls':>6} "
          f"{'tok s':>6} {'prefill':>8} {'decode':>7} {'market':>7}")
    for batch in sizes:
        _, steps, calls, _, asks = market(cfg, batch, peer)  # the record: these prompts are what every mode runs
        modes = {"sequential": lambda: replay(backend, calls, True), "raw": lambda: replay(backend, calls, False),
                 "lockstep": lambda: market(cfg, batch)} | (
            {"mesa_llm": lambda: mesa_llm(peer, backend, asks, False),
             "mesa_llm_parallel": lambda: mesa_llm(peer, backend, asks, True)} if peer else {})
        runs = {m: [] for m in modes}
        same = []
        for r in range(args.repeats):
            names = list(modes)[r % len(modes) :] + list(modes)[: r % len(modes)]  # interleaved, the order rotating
            for m in names:
                done = modes[m]()
                if m == "lockstep":
                    same.append(done[2] == calls)
                    done = (done[0], done[3])
                runs[m].append(done)
        block = {m: row(batch, m, runs[m], steps) for m in modes}
        for r in block.values():
            print(f"{r['batch']:>3} {r['mode']:>17} {r['wall_s']:>8.2f} {r['wall_min_s']:>7.2f}-{r['wall_max_s']:<7.2f} "
                  f"{r['steps_per_s']:>8.2f} {r['gen_tokens_per_s']:>10.1f} {r['backend_calls']:>6} "
                  f"{r['tokenize_s']:>6.2f} {r['prefill_s']:>8.2f} {r['decode_s']:>7.2f} {r['market_s']:>7.2f}")
        lock, seq, raw = block["lockstep"], block["sequential"], block["raw"]
        summary["speedup"][batch] = round(lock["steps_per_s"] / seq["steps_per_s"], 2)
        summary["share_of_ceiling"][batch] = round(raw["wall_s"] / lock["wall_s"], 3)
        summary["prefix_tokens_saved"][batch] = lock["prefix_tokens_saved"]
        summary["prefill_tokens"][batch] = lock["prefill_tokens"]
        summary["same_prompts"][batch] = float(np.mean(same))
        if peer:  # the peer asks every prompt the market generated from (and the others' besides); greedy
            # decoding sends no seed, so the market's per-action seeds are not part of the request
            asked = {dataclasses.replace(p, seed=0) for prompts in asks for p in prompts.values()}
            generated = [dataclasses.replace(p, seed=0) for kind, prompts in calls if kind == "generate" for p in prompts]
            summary["peer_asks_market_prompts"][batch] = float(np.mean([p in asked for p in generated]))
            summary["market_generations"][batch] = len(generated)
            summary["peer_calls"][batch] = sum(map(len, asks))
            summary["vs_mesa_llm"][batch] = round(lock["steps_per_s"] / block["mesa_llm_parallel"]["steps_per_s"], 2)
            summary["vs_mesa_llm_default"][batch] = round(lock["steps_per_s"] / block["mesa_llm"]["steps_per_s"], 2)
        rows += block.values()
    for batch in sizes:
        prompt_tokens = summary['prefix_tokens_saved'][batch] + summary['prefill_tokens'][batch]
        print(f"B = {batch}: lockstep is {summary['speedup'][batch]}x the sequential steps/s and "
              f"{summary['share_of_ceiling'][batch]:.0%} of the bare engine's throughput on the same batches; "
              + (f"the prefix cache saved {summary['prefix_tokens_saved'][batch]} of {prompt_tokens} prompt tokens"
                 if prompt_tokens else "the engine does not report its prefill to this client"))
        if peer:
            print(f"B = {batch}: lockstep is {summary['vs_mesa_llm'][batch]}x mesa-llm's steps/s with its parallel "
                  f"stepping and {summary['vs_mesa_llm_default'][batch]}x on its default schedule")
    backend.close()
    if args.json:
        print(json.dumps(summary | {"rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
