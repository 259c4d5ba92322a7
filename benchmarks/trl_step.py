"""Catallax's LoRA GRPO step beside TRL's ``GRPOTrainer`` step, on one batch from the same weights.

Usage::

    python benchmarks/trl_step.py [--seed 0] [--rows benchmarks/results/trl_peer_gradient.jsonl]

The TRL peer benchmark (benchmarks/trl_peer.py) compares the two systems' held-out gains over whole runs; a gap
between them can come from the update each system takes or from the samples and problems each run happened to
draw. This script separates the two: both systems get the same batch of the peer world's prompts and replies, the
same LoRA weights and the same advantages, and their gradients are compared (:func:`one_batch_gradients`). Its row
says how close the steps are, and how close each system's training log-probabilities are to the model's own.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
for folder in (HERE.parent, HERE):  # the project's packages; the peer benchmark beside this script
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import torch  # noqa: E402

from trl_peer import GROUP, MAX_TOKENS, PROBLEMS_PER_STEP, addition, base_model, messages, problems  # noqa: E402

from experiments.rows import provenance  # noqa: E402

TEMPERATURE = 0.3  # the peer runs' sampling temperature (trl_peer.py), which both systems score completions at


def one_batch_gradients(seed: int = 0) -> dict:
    """Both systems' GRPO gradient on one batch, from the same LoRA weights: where the runs' gains differ, is it the
    update or the samples?

    The batch is 4 training problems x 4 written replies (two right, one wrong number, one off format), so every group
    has contrast; the weights are the base model with LoRA adapters drawn from ``seed``, their B matrices nonzero (at
    peft's init B is 0 and A gets no gradient), copied into both. Catallax's step is ``HFGRPO.update`` (lr 0, no
    clipping: the gradient stays in ``.grad``); TRL's is ``GRPOTrainer._compute_loss`` (its private method, as of the
    pinned 1.16.0) on the same token ids, backpropagated. Both get Catallax's advantages: TRL divides by the sample
    std where Catallax divides by the population std, so its advantages are sqrt(3/4) of Catallax's at 4 samples a
    group, a constant that clipping at norm 1 and Adam's scaling absorb. Returned: the gradients' cosine and norm
    ratio, and how far the completion tokens' log-probabilities each system trains on are from one plain, unpadded
    forward pass of the same model."""
    from agents.credit.advantages import outcome_advantage

    batch = problems(0, range(PROBLEMS_PER_STEP))
    sums = [p["a"] + p["b"] for p in batch]
    replies = [reply for s in sums for reply in (f"Answer: {s}", f"Answer: {s}", f"Answer: {s + 1}", f"{s}")]
    rewards = np.array([addition.reward(p, r) for p, r in zip(np.repeat(batch, GROUP), replies)])
    advantage = outcome_advantage(rewards, GROUP, normalize=True)
    catallax, pairs, ours, ours_logp, ours_mask, lora = catallax_gradient(seed, batch, replies, advantage)
    theirs, theirs_logp = trl_gradient(batch, pairs, advantage, lora)
    with torch.no_grad():  # one unpadded pass of the model per completion, position j predicting token j + 1
        logits = [catallax.model(input_ids=torch.tensor([p + c])).logits[0, len(p) - 1:-1].float() / TEMPERATURE
                  for p, c in pairs]
        plain = [torch.log_softmax(x, -1).gather(1, torch.tensor(c)[:, None])[:, 0] for x, (_, c) in zip(logits, pairs)]
    ours_gap = max(float((ours_logp[i, ours_mask[i]] - plain[i]).abs().max()) for i in range(len(pairs)))
    theirs_gap = max(float((theirs_logp[i, :len(c)] - plain[i]).abs().max()) for i, (_, c) in enumerate(pairs))
    contrast = int(np.count_nonzero(advantage.reshape(-1, GROUP).any(1)))
    return {"completions": len(pairs), "groups with contrast": contrast,
            "gradient cosine": round(float(torch.nn.functional.cosine_similarity(ours, theirs, dim=0)), 5),
            "norm ratio (Catallax / TRL)": round(float(ours.norm() / theirs.norm()), 4),
            "largest log-probability gap from a plain pass (Catallax)": round(ours_gap, 4),
            "largest log-probability gap from a plain pass (TRL)": round(theirs_gap, 4), "seed": seed}


def catallax_gradient(seed: int, batch: list[dict], replies: list[str], advantage: np.ndarray):
    """Catallax's learner on the batch, from adapters drawn from ``seed``: the learner, its (prompt, completion) token
    pairs, its flat gradient, the log-probabilities and mask it trained on, and the adapters' weights by name."""
    from agents.learners.hf_grpo import HFGRPO

    model, tokenizer = base_model()
    torch.manual_seed(seed)  # peft draws the A matrices from torch's global stream
    catallax = HFGRPO(model, tokenizer, lr=0.0, clip=0.2, kl=0.0, lora_rank=8, max_grad_norm=math.inf,
                      temperature=TEMPERATURE)
    generator = torch.Generator().manual_seed(seed)
    lora = {}
    with torch.no_grad():
        for name, p in catallax.model.named_parameters():
            if p.requires_grad:
                if "lora_B" in name:
                    p.copy_(torch.randn(p.shape, generator=generator) * 0.01)
                lora[name] = p.detach().clone()
    pairs = catallax.encode([messages(p) for p in np.repeat(batch, GROUP)], replies, [True] * len(replies))
    catallax.update(pairs, advantage)
    gradient = torch.cat([p.grad.flatten() for name, p in catallax.model.named_parameters() if name in lora])
    with torch.no_grad():
        logp, mask = catallax.token_logprobs(pairs, temperature=TEMPERATURE)
    return catallax, pairs, gradient, logp, mask, lora


def trl_gradient(batch: list[dict], pairs, advantage: np.ndarray, lora: dict):
    """``GRPOTrainer``'s loss on the same token ids and advantages, from the adapters' weights ``lora``, backpropagated:
    its flat gradient and the log-probabilities it scored (completions right-padded, as TRL pads them)."""
    import transformers
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    transformers.logging.set_verbosity_error()
    model, tokenizer = base_model()
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(output_dir=out, per_device_train_batch_size=len(pairs), num_generations=GROUP,
                            max_completion_length=MAX_TOKENS, temperature=TEMPERATURE, beta=0.0, epsilon=0.2,
                            loss_type="grpo", use_cpu=not torch.cuda.is_available(), report_to="none", save_strategy="no")
        trainer = GRPOTrainer(model=model, reward_funcs=lambda **_: [0.0], args=config, processing_class=tokenizer,
                              train_dataset=Dataset.from_list([{"prompt": messages(p)} for p in batch]),
                              peft_config=LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0,
                                                     target_modules=["q_proj", "v_proj"]))
    params = {name: p for name, p in trainer.model.named_parameters() if p.requires_grad}
    assert params.keys() == lora.keys(), "the two systems' adapters differ"
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(lora[name])
    width, pad = max(len(c) for _, c in pairs), tokenizer.pad_token_id
    prompt_ids = torch.tensor([p for p, _ in pairs])  # the batch's prompts are one length: a, b are single digits
    completion_mask = torch.tensor([[1] * len(c) + [0] * (width - len(c)) for _, c in pairs])
    inputs = {"prompt_ids": prompt_ids, "prompt_mask": torch.ones_like(prompt_ids),
              "completion_ids": torch.tensor([c + [pad] * (width - len(c)) for _, c in pairs]),
              "completion_mask": completion_mask, "advantages": torch.tensor(advantage, dtype=torch.float32)}
    trainer.current_gradient_accumulation_steps = 1  # set by the training loop, which this step is taken outside of
    trainer.model.train()
    trainer._compute_loss(trainer.model, inputs).backward()
    with torch.no_grad():
        logp = trainer._get_per_token_logps_and_entropies(
            trainer.model, torch.cat([prompt_ids, inputs["completion_ids"]], 1),
            torch.cat([inputs["prompt_mask"], completion_mask], 1), width)[0]
    return torch.cat([p.grad.flatten() for p in params.values()]), logp


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0, help="draws the adapters' weights")
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--rows", type=Path, help="write the row to this JSON Lines file")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    row = one_batch_gradients(args.seed)
    stamp = provenance("benchmarks.trl_step", argv)
    stamp["command"] = stamp["command"].replace("python -m benchmarks.trl_step", "python benchmarks/trl_step.py")
    print(json.dumps(row))
    if args.rows:
        args.rows.write_text(json.dumps({**row, **stamp}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
