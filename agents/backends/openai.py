"""The ``openai`` backend: any OpenAI-compatible chat server (vLLM serve, SGLang, Ollama, ...).

Standard library only (urllib + a thread pool), so it adds no dependency: a call's
prompts go out as concurrent requests (``max_batch`` at a time) and the server
batches them. Log-probabilities come from the API's ``logprobs`` field; scoring
asks for one token with ``top_logprobs`` (a yes/no spelling outside them is taken
at the smallest reported value). A request that exceeds ``timeout`` seconds ends
as ``timeout``; any other failure (refused connection, HTTP error, bad JSON) as
``error``: never an exception into the market.

``model = "smollm2"`` (the default) means "whatever the server serves": the first
id of ``GET /models``.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from agents.backends.base import NO, YES, BackendConfig, Completion, Prompt, Stats

TOP_LOGPROBS = 20


class OpenAIBackend:
    name = "openai"

    def __init__(self, cfg: BackendConfig = BackendConfig()):
        self.cfg = cfg
        self.root = cfg.base_url.rstrip("/")
        self.model = cfg.model if cfg.model not in ("", "smollm2") else self._request("GET", "/models")["data"][0]["id"]
        self.stats = Stats()

    def _request(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.root + path, data=data, method=method, headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self.cfg.api_key}"})
        with urllib.request.urlopen(request, timeout=self.cfg.timeout) as response:
            return json.loads(response.read())

    def _chat(self, prompt: Prompt, **extra) -> dict:
        body = {"model": self.model, "messages": prompt.messages(), "max_tokens": prompt.max_tokens,
                "temperature": prompt.temperature, "stop": list(prompt.stop) or None, "logprobs": True, **extra}
        if prompt.temperature > 0:
            body["seed"] = prompt.seed
        return self._request("POST", "/chat/completions", body)

    def _one(self, prompt: Prompt) -> Completion:
        try:
            reply = self._chat(prompt)
            choice = reply["choices"][0]
            content = (choice.get("logprobs") or {}).get("content") or []
            logprob = float(sum(t["logprob"] for t in content)) if content else None
            tokens = reply.get("usage", {}).get("completion_tokens", len(content))
            finish = "length" if choice.get("finish_reason") == "length" else "stop"
            self.stats.prompt_tokens += reply.get("usage", {}).get("prompt_tokens", 0)
            return Completion(choice["message"].get("content") or "", logprob, tokens, finish)
        except (TimeoutError, socket.timeout) as err:
            return Completion("", None, 0, "timeout", str(err))
        except urllib.error.URLError as err:
            timed_out = isinstance(err.reason, (TimeoutError, socket.timeout))
            return Completion("", None, 0, "timeout" if timed_out else "error", str(err))
        except (OSError, ValueError, KeyError, IndexError, TypeError) as err:
            return Completion("", None, 0, "error", f"{type(err).__name__}: {err}")

    def _map(self, fn, prompts: list[Prompt]) -> list:
        with ThreadPoolExecutor(max_workers=min(self.cfg.max_batch, max(len(prompts), 1))) as pool:
            return list(pool.map(fn, prompts))

    def generate(self, prompts: list[Prompt]) -> list[Completion]:
        self.stats.start()
        results = self._map(self._one, prompts)
        self.stats.prompts += len(prompts)
        self.stats.completion_tokens += sum(c.tokens for c in results)
        self.stats.stop()
        return results

    def _odds(self, prompt: Prompt) -> float:
        try:
            reply = self._chat(Prompt(prompt.system, prompt.skills, prompt.user, max_tokens=1, stop=()),
                               top_logprobs=TOP_LOGPROBS)
            top = {t["token"]: t["logprob"] for t in reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]}
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return float("-inf")  # an unreachable or broken server wakes nobody
        floor = min(top.values())
        pool = lambda spellings: np.logaddexp.reduce([top.get(s, floor) for s in spellings])
        return float(pool(YES) - pool(NO))

    def score(self, prompts: list[Prompt]) -> np.ndarray:
        self.stats.start()
        result = np.array(self._map(self._odds, prompts), dtype=float)
        self.stats.prompts += len(prompts)
        self.stats.scored += len(prompts)
        self.stats.stop()
        return result

    def close(self) -> None:
        pass
