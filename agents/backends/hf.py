"""The ``hf`` backend: a transformers causal LM, batched left-padded decoding.

The decode loop is written out (prefill once, then one token per forward pass
with the KV cache) rather than hidden in ``generate``, because the market needs
per-row things ``generate`` does not give cheaply in one batch: each row's own
token cap and stop strings, the summed log-probability of what it emitted, a
per-row sampling seed (reproducible births), and a wall-clock timeout after which
unfinished rows end as ``timeout`` instead of stalling the run.

Prompts of one agent across worlds share their frozen part and skills (often hundreds
of tokens of worked examples): that prefix is prefilled once per batch and its KV
cache repeated across the agent's rows; the groups' caches are then merged (left
padding, masked) so every row of the batch decodes in one loop, and rows that have
finished are dropped from the loop once they are the majority. On two CPU cores
prefill dominates this workload (long few-shot prompts, answers of a few tokens),
so sharing prefixes is where batching pays most. Results come back in the caller's
order.
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from agents.backends import smollm2
from agents.backends.base import NO, YES, BackendConfig, Completion, Prompt, Stats


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AMX or AVX512-BF16): there bfloat16 runs SmolLM2
    about 2.7x faster than float32 (measured: 60 extractions 29 s vs 79 s on two cores), elsewhere slower."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


MIN_SHARED = 32
"""Shortest prefix worth prefilling once for a group of prompts."""


def _common_prefix(rows: list[list[int]]) -> int:
    """Length of the longest common token prefix, leaving every row at least one token of its own."""
    n = min(len(r) for r in rows) - 1
    first = rows[0]
    for k in range(n):
        if any(r[k] != first[k] for r in rows[1:]):
            return k
    return max(n, 0)


class HFBackend:
    name = "hf"

    def __init__(self, cfg: BackendConfig = BackendConfig()):
        self.cfg = cfg
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if cfg.device == "auto" else cfg.device
        dtype = cfg.dtype if cfg.dtype != "auto" else ("bfloat16" if self.device != "cpu" or cpu_has_bf16() else "float32")
        if self.device == "cpu":  # auto: leave one core to the rest (on 2 cores a second thread spin-waits
            # whenever anything else runs: measured 3-5x slower under load, at most ~1.6x faster idle)
            torch.set_num_threads(cfg.threads or max(1, min(torch.get_num_threads(), (os.cpu_count() or 2) - 1)))
        folder = smollm2.resolve(cfg.model)
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype)).to(self.device).eval()
        self.eos = self.tokenizer.eos_token_id
        self.yes_ids, self.no_ids = self._first_tokens(YES), self._first_tokens(NO)
        self._pieces = None  # token id -> decoded text, built on first use of stop strings
        self._stop_masks: dict[tuple[str, ...], torch.Tensor] = {}
        self.stats = Stats()

    def _first_tokens(self, spellings) -> list[int]:
        return sorted({self.tokenizer.encode(s, add_special_tokens=False)[0] for s in spellings})

    def _stop_mask(self, stop: tuple[str, ...]) -> torch.Tensor:
        """[V] bool: tokens whose text contains a stop string (they end the row), plus EOS."""
        if stop not in self._stop_masks:
            if self._pieces is None:
                self._pieces = self.tokenizer.batch_decode([[i] for i in range(len(self.tokenizer))])
            mask = torch.tensor([any(s in piece for s in stop) for piece in self._pieces], device=self.device)
            mask[self.eos] = True
            self._stop_masks[stop] = mask
        return self._stop_masks[stop]

    def _encode(self, prompts: list[Prompt]) -> list[list[int]]:
        texts = [self.tokenizer.apply_chat_template(p.messages(), tokenize=False, add_generation_prompt=True)
                 for p in prompts]
        return self.tokenizer(texts, add_special_tokens=False)["input_ids"]

    def _pad(self, rows: list[list[int]]):
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(r) :] = torch.tensor(r)
            mask[i, width - len(r) :] = 1
        return ids.to(self.device), mask.to(self.device)

    # ------------------------------------------------------------ generate
    @torch.inference_mode()
    def generate(self, prompts: list[Prompt]) -> list[Completion]:
        self.stats.start()
        encoded = self._encode(prompts)
        out: list[Completion | None] = [None] * len(prompts)
        deadline = time.monotonic() + self.cfg.timeout
        for batch in self._batches(prompts, encoded):
            if time.monotonic() > deadline:  # the call's time is spent: the rest end unstarted
                for i in batch:
                    out[i] = Completion("", None, 0, "timeout", "backend timeout before decoding")
                continue
            for i, completion in zip(batch, self._decode([prompts[i] for i in batch], [encoded[i] for i in batch], deadline)):
                out[i] = completion
        self.stats.prompts += len(prompts)
        self.stats.prompt_tokens += sum(len(e) for e in encoded)
        self.stats.completion_tokens += sum(c.tokens for c in out)
        self.stats.stop()
        return out

    def _batches(self, prompts: list[Prompt], encoded: list[list[int]]):
        """Index batches of at most max_batch prompts, each agent's prompts kept together (they
        share a prefix), then by length (less padding)."""
        key = {k: i for i, k in enumerate(dict.fromkeys((p.system, p.skills) for p in prompts))}
        order = sorted(range(len(prompts)), key=lambda i: (key[(prompts[i].system, prompts[i].skills)], len(encoded[i])))
        for i in range(0, len(order), self.cfg.max_batch):
            yield order[i : i + self.cfg.max_batch]

    def _groups(self, prompts: list[Prompt], encoded: list[list[int]]):
        """(rows, shared prefix length) within one batch. An agent's prompts (same frozen part and
        skills) share everything up to the observation: that prefix is prefilled once; the other
        prompts (shared = 0) are prefilled together, left-padded."""
        groups: dict[tuple[str, str], list[int]] = {}
        for i, p in enumerate(prompts):
            groups.setdefault((p.system, p.skills), []).append(i)
        plain = []
        for rows in groups.values():
            shared = _common_prefix([encoded[i] for i in rows]) if len(rows) > 1 else 0
            if shared >= MIN_SHARED:
                yield rows, shared
            else:
                plain += rows
        if plain:
            yield plain, 0

    def _prefill_all(self, prompts: list[Prompt], encoded: list[list[int]]):
        """Prefill a batch group by group, then merge the groups' KV caches into one batch (each
        left-padded with masked zeros to the longest), so all rows decode in one loop.
        Returns (last logits [n, V], cache, mask, positions [n, 1]) in the batch's row order."""
        parts = []
        for rows, shared in self._groups(prompts, encoded):
            out, mask, position = self._prefill([encoded[i] for i in rows], shared)
            parts.append((rows, out.logits[:, -1], out.past_key_values, mask, position[:, -1:]))
        if len(parts) == 1:
            rows, logits, cache, mask, position = parts[0]
        else:
            width = max(p[3].shape[1] for p in parts)
            pad = lambda t, dim: torch.nn.functional.pad(t, (0, 0) * (t.dim() - 1 - dim) + (width - t.shape[dim], 0))
            layers = [(torch.cat([pad(p[2].layers[k].keys, 2) for p in parts]),
                       torch.cat([pad(p[2].layers[k].values, 2) for p in parts])) for k in range(len(parts[0][2].layers))]
            cache = DynamicCache(ddp_cache_data=layers)
            rows = [r for p in parts for r in p[0]]
            logits, mask, position = (torch.cat([pad(p[i], 1) if i == 3 else p[i] for p in parts]) for i in (1, 3, 4))
        back = torch.tensor(np.argsort(rows), device=self.device)  # merged order -> the batch's order
        for layer in cache.layers:
            layer.keys, layer.values = layer.keys[back], layer.values[back]
        return logits[back], cache, mask[back], position[back]

    def _decode(self, prompts: list[Prompt], encoded: list[list[int]], deadline: float) -> list[Completion]:
        n = len(prompts)
        cap = torch.tensor([p.max_tokens for p in prompts], device=self.device)
        stops = torch.stack([self._stop_mask(p.stop) for p in prompts])  # [n, V]
        temperature = torch.tensor([p.temperature for p in prompts], device=self.device)
        sampled = [i for i, p in enumerate(prompts) if p.temperature > 0]
        generators = {i: torch.Generator(device=self.device).manual_seed(prompts[i].seed) for i in sampled}

        tokens = torch.zeros((n, int(cap.max())), dtype=torch.long, device=self.device)
        logprob = torch.zeros(n, device=self.device)
        length = torch.zeros(n, dtype=torch.long, device=self.device)
        running = torch.ones(n, dtype=torch.bool, device=self.device)
        stopped = torch.zeros(n, dtype=torch.bool, device=self.device)
        timed_out = False

        logits, cache, mask, position = self._prefill_all(prompts, encoded)
        rows = torch.arange(n, device=self.device)  # the rows still in the decoding batch
        for t in range(int(cap.max())):
            logits = logits.float()
            logp = torch.log_softmax(logits, dim=-1)
            choice = logits.argmax(-1)
            for i in sampled:  # Gumbel-max with the row's own generator: reproducible per row
                u = torch.rand(logits.shape[-1], generator=generators[i], device=self.device).clamp_(1e-20, 1.0)
                choice[i] = (logits[i] / temperature[i] - torch.log(-torch.log(u))).argmax()
            choice = torch.where(running, choice, self.tokenizer.pad_token_id)
            ends = running & stops[torch.arange(n), choice]
            keep = running & ~ends
            tokens[:, t] = choice
            logprob += torch.where(running, logp.gather(1, choice[:, None])[:, 0], 0.0)
            length += keep
            stopped |= ends
            running = keep & (length < cap)
            if not running.any():
                break
            if time.monotonic() > deadline:
                timed_out = True
                break
            live = running[rows]
            if int(live.sum()) <= live.numel() // 2:  # most rows are done: stop computing them
                keep_idx = torch.nonzero(live)[:, 0]
                cache.batch_select_indices(keep_idx)
                rows, mask, position = rows[keep_idx], mask[keep_idx], position[keep_idx]
            mask = torch.cat([mask, torch.ones((rows.numel(), 1), dtype=mask.dtype, device=self.device)], dim=1)
            position = position + 1
            step_logits = self.model(input_ids=choice[rows][:, None], attention_mask=mask, position_ids=position,
                                     past_key_values=cache, use_cache=True).logits[:, -1]
            logits = torch.zeros((n, step_logits.shape[-1]), dtype=step_logits.dtype, device=self.device)
            logits[rows] = step_logits

        results = []
        for i, p in enumerate(prompts):
            emitted = tokens[i, : int(length[i]) + int(stopped[i])].tolist()
            text = self.tokenizer.decode(emitted, skip_special_tokens=True)
            for s in p.stop:  # a stop token may carry text before the stop string: keep that part
                text = text.split(s, 1)[0] if s in text else text
            finish = "stop" if stopped[i] else ("timeout" if timed_out and running[i] else "length")
            results.append(Completion(text, float(logprob[i]), len(emitted), finish))
        return results

    def _prefill(self, encoded: list[list[int]], shared: int):
        """Forward the prompts once, filling the KV cache. With a shared prefix, the prefix is run
        once and its cache repeated for every row; the rows' own suffixes follow, left-padded
        *after* the prefix (the padding is masked, and positions skip it)."""
        if not shared:
            ids, mask = self._pad(encoded)
            position = (mask.cumsum(-1) - 1).clamp(min=0)
            out = self.model(input_ids=ids, attention_mask=mask, position_ids=position, use_cache=True, logits_to_keep=1)
            return out, mask, position
        prefix = torch.tensor([encoded[0][:shared]], device=self.device)
        cache = self.model(input_ids=prefix, use_cache=True).past_key_values
        cache.batch_repeat_interleave(len(encoded))
        ids, suffix_mask = self._pad([e[shared:] for e in encoded])
        mask = torch.cat([torch.ones((len(encoded), shared), dtype=suffix_mask.dtype, device=self.device), suffix_mask], 1)
        position = (mask.cumsum(-1) - 1).clamp(min=0)[:, shared:]
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=position, past_key_values=cache, use_cache=True,
                         logits_to_keep=1)
        return out, mask, position

    # --------------------------------------------------------------- score
    @torch.inference_mode()
    def score(self, prompts: list[Prompt]) -> np.ndarray:
        self.stats.start()
        encoded = self._encode(prompts)
        result = np.zeros(len(prompts))
        for batch in self._batches(prompts, encoded):
            for rows, shared in self._groups([prompts[i] for i in batch], [encoded[i] for i in batch]):
                chunk = [batch[r] for r in rows]  # one agent's questions share its prompt's prefix
                logits = self._prefill([encoded[i] for i in chunk], shared)[0].logits[:, -1].float()
                logp = torch.log_softmax(logits, dim=-1)
                odds = torch.logsumexp(logp[:, self.yes_ids], -1) - torch.logsumexp(logp[:, self.no_ids], -1)
                result[chunk] = odds.cpu().numpy()
        self.stats.prompts += len(prompts)
        self.stats.scored += len(prompts)
        self.stats.prompt_tokens += sum(len(e) for e in encoded)
        self.stats.stop()
        return result

    def close(self) -> None:
        self.model = None
