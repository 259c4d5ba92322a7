"""The ``hf`` backend: a transformers causal LM, batched left-padded decoding.

The decode loop is written out (prefill once, then one token per forward pass
with the KV cache) rather than hidden in ``generate``, because the market needs
per-row things ``generate`` does not give cheaply in one batch: each row's own
token cap and stop strings, the summed log-probability of what it emitted, a
per-row sampling seed (reproducible births), and a wall-clock timeout after which
unfinished rows end as ``timeout`` instead of stalling the run.

Prompts are sorted by length before chunking (less padding), and results are
returned in the caller's order.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from agents.backends import smollm2
from agents.backends.base import NO, YES, BackendConfig, Completion, Prompt, Stats


class HFBackend:
    name = "hf"

    def __init__(self, cfg: BackendConfig = BackendConfig()):
        self.cfg = cfg
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if cfg.device == "auto" else cfg.device
        dtype = cfg.dtype if cfg.dtype != "auto" else ("float32" if self.device == "cpu" else "bfloat16")
        if cfg.threads and self.device == "cpu":
            torch.set_num_threads(cfg.threads)
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

    def _chunks(self, encoded: list[list[int]]):
        """Index chunks of at most max_batch prompts, grouped by length."""
        order = np.argsort([len(e) for e in encoded], kind="stable")
        for i in range(0, len(order), self.cfg.max_batch):
            yield order[i : i + self.cfg.max_batch].tolist()

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
        for chunk in self._chunks(encoded):
            if time.monotonic() > deadline:  # the call's time is spent: the rest end unstarted
                for i in chunk:
                    out[i] = Completion("", None, 0, "timeout", "backend timeout before decoding")
                continue
            for i, completion in zip(chunk, self._decode([prompts[i] for i in chunk], [encoded[i] for i in chunk], deadline)):
                out[i] = completion
        self.stats.prompts += len(prompts)
        self.stats.prompt_tokens += sum(len(e) for e in encoded)
        self.stats.completion_tokens += sum(c.tokens for c in out)
        self.stats.stop()
        return out

    def _decode(self, prompts: list[Prompt], encoded: list[list[int]], deadline: float) -> list[Completion]:
        n = len(prompts)
        ids, mask = self._pad(encoded)
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

        position = (mask.cumsum(-1) - 1).clamp(min=0)
        step_out = self.model(input_ids=ids, attention_mask=mask, position_ids=position, use_cache=True)
        for t in range(int(cap.max())):
            logits = step_out.logits[:, -1].float()
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
            mask = torch.cat([mask, torch.ones((n, 1), dtype=mask.dtype, device=self.device)], dim=1)
            position = position[:, -1:] + 1
            step_out = self.model(input_ids=choice[:, None], attention_mask=mask, position_ids=position,
                                  past_key_values=step_out.past_key_values, use_cache=True)

        results = []
        for i, p in enumerate(prompts):
            emitted = tokens[i, : int(length[i]) + int(stopped[i])].tolist()
            text = self.tokenizer.decode(emitted, skip_special_tokens=True)
            for s in p.stop:  # a stop token may carry text before the stop string: keep that part
                text = text.split(s, 1)[0] if s in text else text
            finish = "stop" if stopped[i] else ("timeout" if timed_out and running[i] else "length")
            results.append(Completion(text, float(logprob[i]), len(emitted), finish))
        return results

    # --------------------------------------------------------------- score
    @torch.inference_mode()
    def score(self, prompts: list[Prompt]) -> np.ndarray:
        self.stats.start()
        encoded = self._encode(prompts)
        result = np.zeros(len(prompts))
        for chunk in self._chunks(encoded):
            ids, mask = self._pad([encoded[i] for i in chunk])
            position = (mask.cumsum(-1) - 1).clamp(min=0)
            logits = self.model(input_ids=ids, attention_mask=mask, position_ids=position, use_cache=False,
                                logits_to_keep=1).logits[:, -1].float()
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
