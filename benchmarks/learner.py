"""Learner throughput: bid-head updates per second at N = 1k / 10k agents (value and reinforce), and GRPO tokens/s.

Usage::

    python benchmarks/learner.py            # N = 1k, 10k; GRPO on SmolLM2 (batch 8)
    python benchmarks/learner.py --json     # ... and one final JSON line
    python benchmarks/learner.py --quick    # smoke run: fewer repeats, GRPO batch 2
    python benchmarks/learner.py --threads 1   # CPU: torch threads (on a busy shared machine 1 is much faster)

Device: ``cuda`` when available (bf16 autocast), else CPU, exactly as the learner picks it.

What is timed. *Bid-head update*: one :func:`agents.learners.reinforce_bids.bid_objective` step as
``LearnedPolicy.learn`` runs it after a round: M = T x B = 10 x 32 = 320 auctions, each over all N
agents' rows (about 20% eligible), bids = min(head bids, wealth cap), REINFORCE loss with the
entropy bonus, backward, gradient clipping, Adam step. Two feature sources: ``numeric`` (one-hot,
F = 16, rows of 16) and ``text`` (384-d MiniLM-sized embeddings through a shared projection to 32).
The features are precomputed (they are cached per distinct observation in a run). Reported: updates
per second (median over repeats after one warm-up) and agent-auction rows per second (M x N x
updates/s). *Value-head update* (the default objective): one :func:`agents.learners.value_bids.value_loss` and
:func:`~agents.learners.value_bids.value_step` as ``LearnedPolicy`` runs them: K = 320 turns of random agents among N,
Huber regression of each turn's predicted value on what it earned, one SGD step; it reads only the K turns'
rows, so its cost hardly grows with N. *GRPO*: one :meth:`agents.learners.hf_grpo.HFGRPO.update` of SmolLM2-135M (LoRA rank 8 on q/v)
on a batch of G = 2 completions for each of several prompts, prompt + completion tokens per second.
*GRPO through the market*: the same update on a wordmath round's own completions (:func:`market_grpo_tokens`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from agents.learners.bid_head import BidHead  # noqa: E402
from agents.config import AgentsConfig  # noqa: E402
from agents.learners.hf_grpo import HFGRPO  # noqa: E402
from agents.learners.base import AdamStep, autocast, pick_device  # noqa: E402
from agents.learners.reinforce_bids import bid_objective  # noqa: E402
from agents.learners.value_bids import value_loss, value_step  # noqa: E402


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bid_updates(n: int, in_dim: int, dim: int, repeats: int, device, M: int = 320) -> float:
    """Median updates/s of the bid head for N = n agents on M auctions."""
    g = torch.Generator().manual_seed(0)
    head = BidHead(in_dim, AgentsConfig(dim=dim), capacity=n).to(device)
    with torch.no_grad():
        head.row.normal_(0, 0.5, generator=g) if device.type == "cpu" else head.row.normal_(0, 0.5)
    learner = AdamStep(list(head.parameters()), lr=0.01, max_grad_norm=1.0)
    phi = torch.rand(M, in_dim, generator=g).to(device)
    eligible = (torch.rand(M, n, generator=g) < 0.2).to(device)
    eligible[:, 0] = True
    winner = eligible.float().multinomial(1, generator=None).squeeze(1) if device.type == "cuda" else \
        eligible.float().multinomial(1, generator=g).squeeze(1)
    cap = torch.full((M, n), 1.0, device=device)
    advantage = torch.randn(M, generator=g).to(device)

    def update():
        with autocast(device):
            bids = torch.minimum(head.bids(phi), cap)
            loss, _ = bid_objective(bids, eligible, winner, advantage, temperature=0.05, entropy=0.01)
        learner.step(loss)

    return rate(update, repeats, device)


def rate(update, repeats: int, device) -> float:
    """Median calls per second of ``update`` after one warm-up call."""
    update()
    sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        update()
        sync(device)
        times.append(time.perf_counter() - start)
    return 1.0 / statistics.median(times)


def value_updates(n: int, in_dim: int, dim: int, repeats: int, device, K: int = 320) -> float:
    """Median updates/s of a value head for N = n agents on K turns."""
    g = torch.Generator().manual_seed(0)
    head = BidHead(in_dim, AgentsConfig(dim=dim), capacity=n).to(device)
    if head.proj is not None:
        head.proj.requires_grad_(False)  # as LearnedPolicy holds it under value bids
    phi = torch.rand(K, in_dim, generator=g).to(device)
    agents = torch.randint(1, n, (K,), generator=g).to(device)
    target = torch.rand(K, generator=g).to(device)
    share = torch.full((K,), 0.2, device=device)

    def update():
        value_step(head, value_loss(head, phi, agents, target, share, delta=1.0)[0])

    return rate(update, repeats, device)


def grpo_tokens(batch: int, repeats: int, device) -> tuple[float, int]:
    """Tokens per second of one GRPO update of SmolLM2 with LoRA; returns (tokens/s, tokens per update)."""
    from agents.backends import BackendConfig
    from agents.backends.factory import make_backend

    backend = make_backend(BackendConfig(backend="hf", device=device.type))
    torch.manual_seed(0)
    grpo = HFGRPO(backend.model, backend.tokenizer, lr=1e-4, lora_rank=8)
    questions = [f"What is {a} + {b}? Answer with a number." for a, b in zip(range(3, 40, 3), range(5, 60, 4))]
    prompts, completions = [], []
    for q in questions[: max(batch // 2, 1)]:
        prompts += [[{"role": "user", "content": q}]] * 2
        completions += ["The answer is 12, because adding the two numbers gives twelve.", "I think it is 7."]
    pairs = grpo.encode(prompts, completions)
    advantage = np.tile([1.0, -1.0], len(pairs) // 2)  # one rewarded completion of two per question
    grpo.update(pairs, advantage)  # warm-up
    sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        stats = grpo.update(pairs, advantage)
        sync(device)
        times.append(time.perf_counter() - start)
    return stats["tokens"] / statistics.median(times), stats["tokens"]


def market_grpo_tokens(device) -> dict:
    """LoRA GRPO through the market: one wordmath round (B = 8, 2 problems x 4 rollouts, sampled), then the
    learner's update of that round (``LearnedPolicy.learn``: encoding, forward, backward, Adam), timed apart.
    ``agents.kl`` = 0.05 puts every completion of the round into the update (a zero advantage still carries
    the KL term), so the update's size does not depend on which rollouts happened to succeed."""
    from scenarios.registry import get_scenario
    from scenarios.run.config import load

    sets = ["agents.actions=grpo", "agents.kl=0.05", "market.batch=8", "agents.group=4", "wordmath.heldout=4",
            f"agents.device={device.type}", f"wordmath.llm.device={device.type}"]
    model = get_scenario("wordmath").make_model(load("wordmath", sets))
    start = time.perf_counter()
    model.run_episodes()
    rollout = time.perf_counter() - start
    before = model.policy.action_learner.counts["lm_train_tokens"]
    start = time.perf_counter()
    model.policy.learn(model)
    sync(device)
    update = time.perf_counter() - start
    tokens = model.policy.action_learner.counts["lm_train_tokens"] - before
    return {"market_grpo_tokens_per_s": round(tokens / update, 1), "market_grpo_tokens_per_update": tokens,
            "market_grpo_completions": model.policy.action_learner.counts["lm_completions_trained"],
            "market_grpo_update_s": round(update, 2), "market_grpo_rollout_s": round(rollout, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-grpo", action="store_true", help="skip the SmolLM2 GRPO measurement")
    parser.add_argument("--threads", type=int, default=0, help="CPU: torch threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device("auto")
    repeats = 3 if args.quick else 15
    name = torch.cuda.get_device_name(0) if device.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    print(f"device: {name}; bid head: M = 320 auctions per update")
    result = {"device": device.type}
    print(f"{'N':>8} {'features':>9} {'reinforce/s':>12} {'rows/s':>14} {'value/s':>10}")
    for n in (1_000, 10_000):
        for label, in_dim, dim in (("numeric", 16, 0), ("text", 384, 32)):
            ups = bid_updates(n, in_dim, dim, repeats, device)
            vps = value_updates(n, in_dim, dim, repeats, device)
            result[f"bid_updates_per_s_{n // 1000}k_{label}"] = round(ups, 2)
            result[f"value_updates_per_s_{n // 1000}k_{label}"] = round(vps, 2)
            print(f"{n:>8,} {label:>9} {ups:>12.1f} {ups * 320 * n:>14,.0f} {vps:>10.1f}")
    if not args.no_grpo:
        batch = 2 if args.quick else 8
        tps, tokens = grpo_tokens(batch, 1 if args.quick else 3, device)
        result["grpo_tokens_per_s"], result["grpo_batch"], result["grpo_tokens_per_update"] = round(tps, 1), batch, tokens
        print(f"GRPO SmolLM2-135M LoRA r=8: batch {batch} ({tokens} tokens/update): {tps:,.0f} tokens/s")
        market = market_grpo_tokens(device)
        result |= market
        print(f"LoRA GRPO through the market (wordmath, B = 8): {market['market_grpo_completions']} completions, "
              f"{market['market_grpo_tokens_per_update']} tokens in {market['market_grpo_update_s']} s: "
              f"{market['market_grpo_tokens_per_s']:,.0f} tokens/s (the round's rollouts took "
              f"{market['market_grpo_rollout_s']} s)")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
