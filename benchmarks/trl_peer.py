"""Catallax's LoRA GRPO learner beside TRL's ``GRPOTrainer``: held-out gain and completions per second.

Usage::

    python benchmarks/trl_peer.py run --system catallax --lr 1e-3 --seed 0 --rows benchmarks/results/trl_peer_runs.jsonl
    python benchmarks/trl_peer.py run --system trl --lr 1e-3 --seed 0 --rows benchmarks/results/trl_peer_runs.jsonl
    python benchmarks/trl_peer.py table --runs benchmarks/results/trl_peer_runs.jsonl [--seeds 0 1 2] --rows benchmarks/results/trl_peer_320.jsonl
    python benchmarks/trl_peer.py changes --runs benchmarks/results/trl_peer_learner_runs.jsonl --rows benchmarks/results/trl_peer_learner.jsonl

Both systems train SmolLM2-135M (float32, CPU unless CUDA is there) on the same one-role world,
benchmarks/peer/addition.py (reply ``Answer: N`` to "What is a + b?"), with the same budget and knobs: ``episodes``
sampled completions (16 a step: 4 problems x 4 samples, advantages within a problem's group), LoRA rank 8, alpha
16, no dropout, on q and v; Adam at a constant ``lr``, gradients clipped to norm 1, no KL term, one update per
batch (on-policy), sampling at temperature 0.3, 8 tokens at most, a reply ending at its first newline.

*Catallax* is the run ``catallax run benchmarks/peer/addition.toml --set agents.lm.lr=LR --seed S`` would make: the
config loaded from the world file, the model built and stepped round by round as the runner steps it (the rounds
are timed; the stored run's bookkeeping is not), its ledger hash recorded. *TRL* is ``GRPOTrainer`` with
``loss_type="grpo"``, the same prompts (chat messages built by Catallax's own ``Prompt``: the role's system line,
the skill line as a demonstration turn, the question), the same reward function, every token containing a
newline an end of sequence (as Catallax's stop string), and its training problems drawn from the same
generator (each seed its own problems). ``trainer.train()`` is timed.

Held-out success is measured on the trained model by one evaluator for both (:func:`heldout_success`): greedy,
the world's first 64 held-out problems (the ``heldout_seed`` stream a Catallax run's summary reads), a reply
that hits the token cap counts as wrong (Catallax refuses it). *Before* is the same evaluator on the base model.
Completions per second are the sampled completions over those timed seconds, for both: sampling, rewards and the
updates inside them, loading the model and the held-out evaluations outside. Every sampled completion enters both
losses (a mean over all of a step's); one whose group's rewards all agree has advantage 0 and so no gradient, which
TRL computes anyway and Catallax skips: a row's ``completions_trained`` are the completions each system ran through
its backward pass (TRL's all, Catallax's those with a nonzero advantage), and TRL's row also counts its completions
with a nonzero advantage (``completions_with_contrast``, from its log's ``frac_reward_zero_std``).

``table`` reads the per-run rows and writes one row per system and lr: the mean gain with its 95% interval over
seeds, and Catallax minus TRL paired by seed, with the difference that many seeds would detect at 80% power;
``changes`` one row per Catallax run with the learner change its
commit made (the runs of each change to the learner, on the code before and after it). Whether a gap between the
systems' gains is the update or the samples: benchmarks/trl_step.py, both systems' gradient on one batch.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from agents.backends.base import BackendConfig, Prompt  # noqa: E402
from experiments.harness import detectable, interval  # noqa: E402
from experiments.rows import provenance  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks" / "peer"))
import addition  # noqa: E402  (the world, a user's world file, not a package module)

WORLD = ROOT / "benchmarks" / "peer" / "addition.toml"
GROUP, PROBLEMS_PER_STEP = 4, 4  # the world file's agents.group and market.batch / group
MAX_TOKENS = addition.Addition.roles[0].max_tokens
HELDOUT_SEED = 10_000  # scenarios/text/scenario.py TextWorldConfig.heldout_seed: the stream a run's summary reads


def messages(problem: dict) -> list[dict]:
    """The chat messages a Catallax solver holding the world's one skill line is sent for ``problem``."""
    role = addition.Addition.roles[0]
    return Prompt(role.frozen, addition.EXAMPLE, addition.question(problem), max_tokens=role.max_tokens).messages()


def problems(seed: int, ids) -> list[dict]:
    """Problems of one seed stream, as the text adapter draws them (scenarios/text/adapter.py TextBoard.problem)."""
    world = addition.Addition()
    return [world.problem(np.random.default_rng([seed, int(i)])) for i in ids]


def stop_ids(tokenizer) -> list[int]:
    """Token ids that end a reply: every token whose text holds a newline, and EOS (Catallax's stop mask)."""
    pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    out = [i for i, piece in enumerate(pieces) if "\n" in tokenizer.convert_tokens_to_string([piece])]
    return sorted({tokenizer.eos_token_id, *out})


@torch.no_grad()
def heldout_success(model, tokenizer, n: int = 64) -> float:
    """Greedy success on the first ``n`` held-out problems: one batch, left-padded; a reply is the text before its
    first newline, and one that reached the token cap without ending is wrong."""
    held = problems(HELDOUT_SEED, range(n))
    texts = [tokenizer.apply_chat_template(messages(p), tokenize=False, add_generation_prompt=True) for p in held]
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    try:
        batch = tokenizer(texts, add_special_tokens=False, return_tensors="pt", padding=True).to(model.device)
    finally:
        tokenizer.padding_side = side
    stops = stop_ids(tokenizer)
    out = model.generate(**batch, max_new_tokens=MAX_TOKENS, do_sample=False, eos_token_id=stops,
                         pad_token_id=tokenizer.pad_token_id)[:, batch["input_ids"].shape[1]:]
    solved = 0
    for p, row in zip(held, out.tolist()):
        ended = [j for j, t in enumerate(row) if t in stops]
        if not ended:
            continue  # the cap reached: Catallax refuses the reply
        text = tokenizer.decode(row[:ended[0] + 1], skip_special_tokens=True).split("\n", 1)[0]
        solved += addition.reward(p, text) > 0
    return solved / n


def base_model():
    """SmolLM2-135M as Catallax's LoRA learner holds it: float32, one fresh engine (agents/backends)."""
    from agents.backends.factory import make_backend

    backend = make_backend(BackendConfig(backend="hf", model="smollm2", dtype="float32", threads=1))
    return backend.model, backend.tokenizer


def catallax_run(lr: float, seed: int, episodes: int, heldout: int) -> dict:
    from scenarios.run.config import load
    from scenarios.run.runner import build_model

    exp = load(str(WORLD), {"agents.lm.lr": lr, "run.episodes": episodes}, seed=seed)
    model = build_model(exp)
    rounds = math.ceil(episodes / exp.market.batch)
    start = time.perf_counter()
    for _ in range(rounds):
        model.step()
    seconds = time.perf_counter() - start
    counts = model.policy.report()
    policy = model.policy.unwrapped
    after = heldout_success(policy.backend.model, policy.backend.tokenizer, heldout)
    with policy.base_weights():
        before = heldout_success(policy.backend.model, policy.backend.tokenizer, heldout)
    return {"before": before, "after": after, "completions": int(model.episodes_done), "train_s": seconds,
            "updates": counts["policy_updates"], "completions_trained": counts["lm_completions_trained"],
            "ledger_hash": model.ledger.hash[:12]}


def trl_run(lr: float, seed: int, episodes: int, heldout: int) -> dict:
    import transformers
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    transformers.logging.set_verbosity_error()
    model, tokenizer = base_model()
    before = heldout_success(model, tokenizer, heldout)
    steps = episodes // (GROUP * PROBLEMS_PER_STEP)
    ids = np.random.default_rng(seed).integers(2**31, size=steps * PROBLEMS_PER_STEP)
    train = problems(0, ids)
    data = Dataset.from_list([{"prompt": messages(p), "a": p["a"], "b": p["b"]} for p in train])

    def reward(prompts, completions, a, b, **_):
        return [addition.reward({"a": x, "b": y}, c[0]["content"].split("\n", 1)[0]) for c, x, y in zip(completions, a, b)]

    model.generation_config.eos_token_id = stop_ids(tokenizer)
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(output_dir=out, learning_rate=lr, lr_scheduler_type="constant", warmup_steps=0,
                            weight_decay=0.0, max_grad_norm=1.0, per_device_train_batch_size=GROUP * PROBLEMS_PER_STEP,
                            gradient_accumulation_steps=1, num_generations=GROUP, max_completion_length=MAX_TOKENS,
                            temperature=0.3, top_p=1.0, top_k=0, beta=0.0, epsilon=0.2, loss_type="grpo",
                            num_iterations=1, max_steps=steps, shuffle_dataset=False, seed=seed, use_cpu=not torch.cuda.is_available(),
                            bf16=False, fp16=False, report_to="none", save_strategy="no", logging_steps=1,
                            disable_tqdm=True, gradient_checkpointing=False)
        trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config, train_dataset=data, processing_class=tokenizer,
                              peft_config=LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"]))
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    per_step = GROUP * PROBLEMS_PER_STEP  # a step's completions outside a group whose rewards all agree: the ones with
    contrast = round(sum((1 - log["frac_reward_zero_std"]) * per_step  # a gradient (advantage 0 otherwise)
                         for log in trainer.state.log_history if "frac_reward_zero_std" in log))
    trained = trainer.model.eval()  # the trainer leaves it in training mode, its KV cache off
    trained.config.use_cache = True
    after = heldout_success(trained, tokenizer, heldout)
    return {"before": before, "after": after, "completions": steps * GROUP * PROBLEMS_PER_STEP, "train_s": seconds,
            "updates": steps, "completions_trained": steps * GROUP * PROBLEMS_PER_STEP,
            "completions_with_contrast": contrast, "ledger_hash": ""}


def run(args) -> dict:
    torch.set_num_threads(args.threads)
    go = catallax_run if args.system == "catallax" else trl_run
    out = go(args.lr, args.seed, args.episodes, args.heldout)
    row = {"system": args.system, "lr": args.lr, "seed": args.seed, "episodes": args.episodes,
           "heldout_problems": args.heldout, **{k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()},
           "gain": round(out["after"] - out["before"], 4), "completions_per_s": round(out["completions"] / out["train_s"], 3),
           "threads": args.threads}
    return row


def contrast(row: dict):
    """The run's completions with a nonzero advantage (a group whose rewards differ), the only ones with a gradient:
    Catallax runs only those (its ``completions_trained``); TRL runs all and counts them in its log."""
    return row["completions_trained"] if row["system"] == "catallax" else row.get("completions_with_contrast", "")


def table(runs: list[dict], episodes: int, seeds=None) -> list[dict]:
    """One row per (system, lr) over its seeds (``seeds``: only these), and Catallax minus TRL paired by seed at each
    lr."""
    runs = [r for r in runs if r["episodes"] == episodes and (seeds is None or r["seed"] in seeds)]
    out = []
    for lr in sorted({r["lr"] for r in runs}):
        by = {s: {r["seed"]: r for r in runs if r["lr"] == lr and r["system"] == s} for s in ("catallax", "trl")}
        for system, rows in by.items():
            if not rows:
                continue
            seeds = sorted(rows)
            gain, half = interval([rows[s]["gain"] for s in seeds])
            spread = f" ± {half:.3f}" if len(seeds) > 1 else " (one seed: no interval)"
            out.append({"system": system, "lr": f"{lr:g}", "seeds": len(seeds),
                        "held-out before": f"{np.mean([rows[s]['before'] for s in seeds]):.3f}",
                        "held-out after": " ".join(f"{rows[s]['after']:.3f}" for s in seeds),
                        "gain by seed": " ".join(f"{rows[s]['gain']:+.3f}" for s in seeds),
                        "gain (95% CI)": f"{gain:+.3f}{spread}",
                        "updates": " ".join(str(rows[s]["updates"]) for s in seeds),
                        "completions trained": " ".join(str(rows[s]["completions_trained"]) for s in seeds),
                        "with contrast": " ".join(str(contrast(rows[s])) for s in seeds).strip(),
                        "completions/s by seed": " ".join(f"{rows[s]['completions_per_s']:.2f}" for s in seeds),
                        "completions/s": f"{np.mean([rows[s]['completions_per_s'] for s in seeds]):.2f}"})
        paired = sorted(set(by["catallax"]) & set(by["trl"]))
        if paired:
            differences = [by["catallax"][s]["gain"] - by["trl"][s]["gain"] for s in paired]
            diff, half = interval(differences)
            spread = f" ± {half:.3f}" if len(paired) > 1 else " (one seed: no interval)"
            ratios = [by["catallax"][s]["completions_per_s"] / by["trl"][s]["completions_per_s"] for s in paired]
            out.append({"system": "Catallax minus TRL (paired by seed)", "lr": f"{lr:g}", "seeds": len(paired),
                        "held-out before": "", "held-out after": "",
                        "gain by seed": " ".join(f"{d:+.3f}" for d in differences), "gain (95% CI)": f"{diff:+.3f}{spread}",
                        "detectable (80% power)": f"{detectable(differences):.3f}" if len(paired) > 1 else "",
                        "updates": "", "completions trained": "", "with contrast": "",
                        "completions/s by seed": " ".join(f"{r:.1f}x" for r in ratios),
                        "completions/s": f"{np.mean(ratios):.1f}x"})
    return out


def changes(runs: list[dict], episodes: int) -> list[dict]:
    """One row per Catallax run, in the order given: the learner's commit and the changes to the learner
    (``LoRA GRPO:`` commits, read from git) it carries beyond the first row's commit, so each row's held-out effect
    stands beside the code before the changes."""
    runs = [r for r in runs if r["episodes"] == episodes and r["system"] == "catallax"]
    first = runs[0]["commit"].removesuffix("-dirty") if runs else ""
    out = []
    for r in runs:
        commit = r["commit"].removesuffix("-dirty")
        log = subprocess.run(["git", "log", "--reverse", "--format=%s", f"{first}..{commit}"], cwd=ROOT,
                             capture_output=True, text=True).stdout.splitlines()
        made = [line.removeprefix("LoRA GRPO: ").split(" (")[0] for line in log if line.startswith("LoRA GRPO: ")]
        out.append({"run at commit": r["commit"], "learner": "; ".join(made) or "as it was", "lr": f"{r['lr']:g}",
                    "seed": r["seed"], "held-out after": f"{r['after']:.3f}", "gain": f"{r['gain']:+.3f}",
                    "updates": r["updates"], "completions trained": r["completions_trained"],
                    "completions/s": f"{r['completions_per_s']:.2f}"})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run", help="train one system at one lr and seed; append its row")
    one.add_argument("--system", choices=("catallax", "trl"), required=True)
    one.add_argument("--lr", type=float, default=1e-4)
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--episodes", type=int, default=320, help="sampled completions (a multiple of 16)")
    one.add_argument("--heldout", type=int, default=64)
    one.add_argument("--threads", type=int, default=1, help="torch threads (1: fastest on a busy shared machine)")
    one.add_argument("--rows", type=Path, help="append the run's row to this JSON Lines file")
    summary = sub.add_parser("table", help="the per-run rows as the table's rows")
    summary.add_argument("--runs", type=Path, required=True)
    summary.add_argument("--episodes", type=int, default=320)
    summary.add_argument("--seeds", type=int, nargs="+", help="only these seeds (a set both systems finished)")
    summary.add_argument("--rows", type=Path, help="write the table's rows to this JSON Lines file")
    steps = sub.add_parser("changes", help="Catallax's runs, one row each, with the learner change their commit made")
    steps.add_argument("--runs", type=Path, required=True)
    steps.add_argument("--episodes", type=int, default=320)
    steps.add_argument("--rows", type=Path, help="write the table's rows to this JSON Lines file")
    args = ap.parse_args(argv)
    if args.command == "run":
        if args.episodes % (GROUP * PROBLEMS_PER_STEP):
            print(f"--episodes: {args.episodes} is not a multiple of {GROUP * PROBLEMS_PER_STEP}", file=sys.stderr)
            return 2
        rows = [run(args)]
    else:
        runs = [json.loads(line) for line in args.runs.read_text().splitlines() if line.strip()]
        rows = table(runs, args.episodes, args.seeds) if args.command == "table" else changes(runs, args.episodes)
    stamp = provenance("benchmarks.trl_peer", argv)
    stamp["command"] = stamp["command"].replace("python -m benchmarks.trl_peer", "python benchmarks/trl_peer.py")
    for row in rows:
        print(json.dumps(row))
    if args.rows:
        mode = "a" if args.command == "run" else "w"
        with args.rows.open(mode) as f:
            f.writelines(json.dumps({**row, **stamp}) + "\n" for row in rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
