"""The ``hf`` backend: a transformers causal LM, batched left-padded decoding.

The decode loop is written out (prefill once, then one token per forward pass
with the KV cache) rather than hidden in ``generate``, because the market needs
per-row things ``generate`` does not give cheaply in one batch: each row's own
token cap and stop strings, the summed log-probability of what it emitted, a
per-row sampling seed (reproducible births), and a wall-clock timeout after which
unfinished rows end as ``timeout`` instead of stalling the run.

On two CPU cores prefill dominates this workload (long few-shot prompts, answers of
a few tokens), so prefill is where the work is saved:

* an agent's prompts share everything before the observation (chat template, frozen
  part, skills: often hundreds of tokens of worked examples), and that prefix changes
  only when the agent is reborn. Its KV is computed once and kept in a **prefix cache**
  across calls, keyed by the prefix's token ids and bounded in memory (least recently
  used out first: a reborn agent's old prefix is simply never asked for again);
* a call runs at most two prefill forwards per batch: one over the prefixes not in the
  cache (one row each), one over every row's own suffix on top of its prefix's KV
  (left-padded twice: prefix part and suffix part, masked, positions skipping the pads);
* both ask the LM head for the last position only (``logits_to_keep``): the 49k-wide
  vocabulary is never computed over prompt tokens.

All rows of a batch then decode in one loop; rows that have finished are dropped from
it once they are the majority. Results come back in the caller's order.
"""

from __future__ import annotations

import collections
import os
import time

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from agents.backends import smollm2
from agents.backends.base import NO, YES, BackendConfig, Completion, Prompt, Stats
from agents.backends.loading import loading_bars


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AMX or AVX512-BF16): there bfloat16 runs SmolLM2 faster than
    float32, elsewhere slower."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


MIN_SHARED = 32
"""Shortest prefix worth keeping (shorter ones are prefilled with the row)."""


def _common(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for k in range(n):
        if a[k] != b[k]:
            return k
    return n


class PrefixCache:
    """Prefix token ids -> per-layer (keys, values) [1, heads, L, dim]; least recently used out
    first once the entries exceed ``budget`` bytes."""

    def __init__(self, budget: int):
        self.budget, self.used, self.entries = budget, 0, collections.OrderedDict()

    def get(self, key: tuple[int, ...]):
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
            return entry[0]
        return None

    def put(self, key: tuple[int, ...], layers: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        size = sum(k.nbytes + v.nbytes for k, v in layers)
        if size > self.budget or key in self.entries:
            return
        self.entries[key] = (layers, size)
        self.used += size
        while self.used > self.budget:
            self.used -= self.entries.popitem(last=False)[1][1]

    def clear(self) -> None:
        self.entries.clear()
        self.used = 0


class HFBackend:
    name = "hf"

    def __init__(self, cfg: BackendConfig = BackendConfig()):
        self.cfg = cfg
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if cfg.device == "auto" else cfg.device
        dtype = cfg.dtype if cfg.dtype != "auto" else ("bfloat16" if self.device != "cpu" or cpu_has_bf16() else "float32")
        if self.device == "cpu":  # auto: leave one core to the rest (on a small machine a thread on every core
            # spin-waits whenever anything else runs, which costs far more than the extra core gains when idle)
            torch.set_num_threads(cfg.threads or max(1, min(torch.get_num_threads(), (os.cpu_count() or 2) - 1)))
        folder = smollm2.resolve(cfg.model)
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        with loading_bars():  # transformers' "Loading weights" bar: on a terminal only
            self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype)).to(self.device).eval()
        self.eos = self.tokenizer.eos_token_id
        self.yes_ids, self.no_ids = self._first_tokens(YES), self._first_tokens(NO)
        self._pieces = None  # token id -> decoded text, built on first use of stop strings
        self._stop_masks: dict[tuple[str, ...], torch.Tensor] = {}
        self._prefix_ids: collections.OrderedDict = collections.OrderedDict()  # (system, skills) -> prefix token ids
        self.prefixes = PrefixCache(cfg.prefix_cache_mb * 2**20)
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

    def _template(self, messages: list[dict], generation: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation)

    def _prefix(self, prompt: Prompt) -> list[int]:
        """Token ids of the prompt before its observation: the chat template over the frozen part
        and the skills (with their demonstration turns). Remembered per (system, skills)."""
        key = (prompt.system, prompt.skills)
        if key not in self._prefix_ids:
            text = self._template(prompt.messages()[:-1], generation=False)
            self._prefix_ids[key] = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(self._prefix_ids) > 4096:
                self._prefix_ids.popitem(last=False)
        return self._prefix_ids[key]

    def _encode(self, prompts: list[Prompt]) -> tuple[list[list[int]], list[int]]:
        """(token ids of each prompt, length of its shared prefix: 0 where under MIN_SHARED);
        every row keeps at least one token of its own to prefill."""
        t0 = time.perf_counter()
        texts = [self._template(p.messages(), generation=True) for p in prompts]
        encoded = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        shared = [min(_common(self._prefix(p), e), len(e) - 1) for p, e in zip(prompts, encoded)]
        self.stats.tokenize_s += time.perf_counter() - t0
        return encoded, [k if k >= MIN_SHARED else 0 for k in shared]

    def _pad(self, rows: list[list[int]]):
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r) :] = 1
        return ids.to(self.device), mask.to(self.device)

    def _batches(self, prompts: list[Prompt], encoded: list[list[int]]):
        """Index batches of at most max_batch prompts, each agent's prompts kept together (they
        share a prefix), then by length (less padding)."""
        key = {k: i for i, k in enumerate(dict.fromkeys((p.system, p.skills) for p in prompts))}
        order = sorted(range(len(prompts)), key=lambda i: (key[(prompts[i].system, prompts[i].skills)], len(encoded[i])))
        for i in range(0, len(order), self.cfg.max_batch):
            yield order[i : i + self.cfg.max_batch]

    def _prefill(self, encoded: list[list[int]], shared: list[int]):
        """Fill the KV cache for a batch: prefixes from the prefix cache or, for the missing ones,
        one forward (one row per distinct prefix); then one forward over every row's suffix on
        top of its prefix (prefix part and suffix part each left-padded, pads masked, positions
        counting real tokens only). Returns (last logits [n, V], cache, mask, positions [n, 1])."""
        t0 = time.perf_counter()
        keys = [tuple(e[:k]) for e, k in zip(encoded, shared)]
        rows: dict[tuple, list[int]] = {}
        for i, k in enumerate(keys):
            if k:
                rows.setdefault(k, []).append(i)
        found = {k: self.prefixes.get(k) for k in rows}
        new = [k for k, v in found.items() if v is None]
        if new:
            ids, mask = self._pad([list(k) for k in new])
            kv = self.model(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
                            use_cache=True, logits_to_keep=1).past_key_values
            width = ids.shape[1]
            for j, k in enumerate(new):
                found[k] = [(layer.keys[j : j + 1, :, width - len(k) :].clone(),
                             layer.values[j : j + 1, :, width - len(k) :].clone()) for layer in kv.layers]
                self.prefixes.put(k, found[k])
            del kv
        n, width = len(encoded), max(shared)
        ids, suffix_mask = self._pad([e[k:] for e, k in zip(encoded, shared)])
        mask = torch.zeros((n, width), dtype=suffix_mask.dtype, device=self.device)
        cache = None
        if width:
            for i, k in enumerate(shared):
                if k:
                    mask[i, width - k :] = 1
            layers = []
            for li, (keys0, _) in enumerate(next(iter(found.values()))):
                kv = [keys0.new_zeros((n, keys0.shape[1], width, keys0.shape[3])) for _ in (0, 1)]
                for k, members in rows.items():  # the one copy: each prefix into its rows of the batch
                    for part in (0, 1):
                        kv[part][members, :, width - len(k) :] = found[k][li][part]
                layers.append(tuple(kv))
            cache = DynamicCache(ddp_cache_data=layers)
        mask = torch.cat([mask, suffix_mask], 1)
        position = (mask.cumsum(-1) - 1).clamp(min=0)[:, width:]
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=position, past_key_values=cache,
                         use_cache=True, logits_to_keep=1)
        self.stats.prefill_tokens += sum(len(k) for k in new) + sum(len(e) - k for e, k in zip(encoded, shared))
        self.stats.prefix_tokens_saved += sum(shared) - sum(len(k) for k in new)
        self.stats.prefill_s += time.perf_counter() - t0
        return out.logits[:, -1], out.past_key_values, mask, position[:, -1:]

    # ------------------------------------------------------------ generate
    @torch.inference_mode()
    def generate(self, prompts: list[Prompt]) -> list[Completion]:
        self.stats.start()
        encoded, shared = self._encode(prompts)
        out: list[Completion | None] = [None] * len(prompts)
        deadline = time.monotonic() + self.cfg.timeout
        for batch in self._batches(prompts, encoded):
            if time.monotonic() > deadline:  # the call's time is spent: the rest end unstarted
                for i in batch:
                    out[i] = Completion("", None, 0, "timeout", "backend timeout before decoding")
                continue
            done = self._decode([prompts[i] for i in batch], [encoded[i] for i in batch], [shared[i] for i in batch],
                                deadline)
            for i, completion in zip(batch, done):
                out[i] = completion
        self.stats.prompts += len(prompts)
        self.stats.prompt_tokens += sum(len(e) for e in encoded)
        self.stats.completion_tokens += sum(c.tokens for c in out)
        self.stats.stop()
        return out

    def _decode(self, prompts: list[Prompt], encoded: list[list[int]], shared: list[int], deadline: float) -> list[Completion]:
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

        logits, cache, mask, position = self._prefill(encoded, shared)
        t0 = time.perf_counter()
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
            results.append(Completion(text, float(logprob[i]), len(emitted), finish, prompt_tokens=len(encoded[i])))
        self.stats.decode_s += time.perf_counter() - t0
        return results

    # --------------------------------------------------------------- score
    @torch.inference_mode()
    def score(self, prompts: list[Prompt]) -> np.ndarray:
        self.stats.start()
        encoded, shared = self._encode(prompts)
        result = np.zeros(len(prompts))
        for batch in self._batches(prompts, encoded):
            logits = self._prefill([encoded[i] for i in batch], [shared[i] for i in batch])[0].float()
            logp = torch.log_softmax(logits, dim=-1)
            odds = torch.logsumexp(logp[:, self.yes_ids], -1) - torch.logsumexp(logp[:, self.no_ids], -1)
            result[batch] = odds.cpu().numpy()
        self.stats.prompts += len(prompts)
        self.stats.scored += len(prompts)
        self.stats.prompt_tokens += sum(len(e) for e in encoded)
        self.scored_tokens = np.array([len(e) for e in encoded], dtype=np.int64)
        self.stats.stop()
        return result

    # --------------------------------------------------------------- forced (the privileged pass)
    @torch.inference_mode()
    def forced(self, prompts: list[Prompt], completions: list[str]) -> list[np.ndarray]:
        """Per-token log-probabilities of each completion after its prompt (base.py): prompt and completion
        ids left-padded so every completion ends at the right edge, one forward per ``max_batch`` rows with the
        LM head over the last L + 1 positions only, as the learner scores its own completions (agents/learners/hf_grpo.py)."""
        t0 = time.perf_counter()
        heads = self.tokenizer([self._template(p.messages(), generation=True) for p in prompts],
                               add_special_tokens=False)["input_ids"]
        tails = [self.tokenizer(c, add_special_tokens=False)["input_ids"] for c in completions]
        out = []
        for i in range(0, len(prompts), self.cfg.max_batch):
            rows = [h + t for h, t in zip(heads[i:i + self.cfg.max_batch], tails[i:i + self.cfg.max_batch])]
            L = max(max(len(t) for t in tails[i:i + self.cfg.max_batch]), 1)
            ids, mask = self._pad(rows)
            logits = self.model(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
                                use_cache=False, logits_to_keep=L + 1).logits[:, :-1].float()
            logp = torch.log_softmax(logits, -1).gather(2, ids[:, -L:, None])[..., 0].cpu().numpy()
            out += [logp[j, L - len(t):] for j, t in enumerate(tails[i:i + self.cfg.max_batch])]
        self.stats.privileged_tokens += sum(len(h) + len(t) for h, t in zip(heads, tails))
        self.stats.privileged_s += time.perf_counter() - t0
        return out

    # --------------------------------------------------------------- choose (constrained decoding)
    @torch.inference_mode()
    def choose(self, prompts: list[Prompt], options: list[list[str]]) -> list[int]:
        """For each prompt, the option greedy decoding writes when every token must continue one of the options (a
        prefix-allowed-tokens constraint over the options' token trie). Only where options part is the model run:
        tokens every live option shares are fed with the next choice, one forward pass per branch point."""
        self.stats.start()
        picks = []
        for prompt, opts in zip(prompts, options):
            head = self.tokenizer(self._template(prompt.messages(), generation=True), add_special_tokens=False)["input_ids"]
            out = self.model(input_ids=torch.tensor([head], device=self.device), use_cache=True)
            cache, logits, position = out.past_key_values, out.logits[0, -1], len(head)
            tails = [self.tokenizer(o, add_special_tokens=False)["input_ids"] for o in opts]
            alive, done, pending = list(range(len(opts))), 0, []
            while len(alive) > 1 and all(len(tails[i]) > done for i in alive):
                allowed = sorted({tails[i][done] for i in alive})
                if len(allowed) > 1:  # a branch point: the model chooses among the allowed tokens
                    if pending:
                        ids = torch.tensor([pending], device=self.device)
                        logits = self.model(input_ids=ids, past_key_values=cache, use_cache=True, position_ids=
                                            position + torch.arange(len(pending), device=self.device)[None]).logits[0, -1]
                        position, pending = position + len(pending), []
                    allowed = [max(allowed, key=lambda t: float(logits[t]))]
                alive = [i for i in alive if tails[i][done] == allowed[0]]
                pending.append(allowed[0])
                done += 1
            picks.append(min(alive, key=lambda i: len(tails[i])) if alive else -1)
            self.stats.prompt_tokens += len(head)
        self.stats.prompts += len(prompts)
        self.stats.stop()
        return picks

    def weights_changed(self) -> None:
        """The model's weights moved (a learner's step): the prefix KV cache is stale."""
        self.prefixes.clear()

    def close(self) -> None:
        self.model = None
        self.prefixes.clear()
