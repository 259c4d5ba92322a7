"""The ``openai`` backend: any OpenAI-compatible chat server (vLLM serve, SGLang, Ollama, ...).

Standard library only (urllib + a thread pool), so it adds no dependency: a call's
prompts go out as concurrent requests (``max_batch`` at a time) and the server
batches them. Log-probabilities come from the API's ``logprobs`` field; scoring
asks for one token with ``top_logprobs`` (a yes/no spelling outside them is taken
at the smallest reported value).

Servers fail in passing (a rate limit, an overloaded or restarting server, a dropped
connection): a request answered 429 or 5xx, or whose connection fails, is sent again
after an exponential backoff (0.1 s, 0.2 s, ... at most 5 s) until ``retry_for`` seconds
after it was first sent (and never past ``timeout``); every failed attempt is recorded in ``failures``. What still
fails ends as a ``timeout`` or ``error`` completion, and a failed score is NaN: "no
opinion" (the policy neither wakes the agent on that state nor caches the score).
Never an exception into the market.

``model = "smollm2"`` (the default) means "whatever the server serves": the first
id of ``GET /models``; a server that does not answer it is :class:`Unreachable` (one line, exit 2).

The API key comes from the environment (``CATALLAX_OPENAI_API_KEY``, or the variable ``api_key_env`` names),
never from the config, which a run stores and ``catallax config show`` prints. ``CATALLAX_OPENAI_BASE_URL``
overrides ``base_url`` (a resumed run then reaches the server you name, not the one its database names), and
the backend says on stderr when that differs from the config's.
"""

from __future__ import annotations

import collections
import http.client
import json
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from market.escape import terminal

from agents.backends.base import NO, YES, BackendConfig, Completion, NoPrivilegedPass, Prompt, Stats, Unreachable

TOP_LOGPROBS = 20
BASE_URL_ENV = "CATALLAX_OPENAI_BASE_URL"
"""The environment variable that overrides ``llm.base_url`` (the server this machine's user chose)."""
BACKOFF = (0.1, 5.0)
"""First wait and longest wait between attempts of one request (seconds); it doubles in between."""


def _retryable(err: Exception) -> bool:
    """429 and 5xx, refused or dropped connections: worth another attempt. Other HTTP errors
    (a bad request, an unknown model) would fail again."""
    if isinstance(err, urllib.error.HTTPError):
        return err.code == 429 or err.code >= 500
    return isinstance(err, (urllib.error.URLError, ConnectionError, http.client.HTTPException))


def server(cfg: BackendConfig) -> str:
    """The root the backend contacts: ``CATALLAX_OPENAI_BASE_URL`` when set, else the config's ``base_url``;
    a one-line note on stderr when they differ, so a run (a resumed one, whose config a database gave) never
    reaches another server than its config names without saying so."""
    configured, override = cfg.base_url.rstrip("/"), os.environ.get(BASE_URL_ENV, "").rstrip("/")
    if override and override != configured:
        print(f"catallax: note: llm.base_url is {terminal(configured)} in the run's config; contacting "
              f"{terminal(override)} ({BASE_URL_ENV})", file=sys.stderr)
    return override or configured


class OpenAIBackend:
    name = "openai"

    def __init__(self, cfg: BackendConfig = BackendConfig()):
        self.cfg = cfg
        self.root = server(cfg)
        self._key = os.environ.get(cfg.api_key_env) or "EMPTY"  # a local server without --api-key takes any
        self.failures: collections.deque = collections.deque(maxlen=1000)
        """Failed attempts, the newest last: {"path", "attempt", "error", "retried"}."""
        self._lock = threading.Lock()
        self.stats = Stats()
        self.model = cfg.model if cfg.model not in ("", "smollm2") else self._served()

    def _served(self) -> str:
        try:
            return self._request("GET", "/models")["data"][0]["id"]
        except (OSError, ValueError, KeyError, IndexError, TypeError, http.client.HTTPException) as err:
            reason = getattr(err, "reason", None) or err
            raise Unreachable(f"llm.base_url = {self.root}: no OpenAI-compatible server answers GET /models there "
                              f"({type(reason).__name__}: {' '.join(str(reason).split())[:120]})") from None

    def _request(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        deadline = time.monotonic() + self.cfg.timeout
        retry_until = time.monotonic() + min(self.cfg.retry_for, self.cfg.timeout)
        attempt = 0
        while True:
            request = urllib.request.Request(self.root + path, data=data, method=method, headers={
                "Content-Type": "application/json", "Authorization": f"Bearer {self._key}"})
            left = deadline - time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=max(left, 1e-3)) as response:
                    return json.loads(response.read())
            except Exception as err:  # noqa: BLE001 (recorded, then re-raised unless worth retrying)
                wait = min(BACKOFF[0] * 2**attempt, BACKOFF[1])
                timed_out = isinstance(err, (TimeoutError, socket.timeout)) or isinstance(
                    getattr(err, "reason", None), (TimeoutError, socket.timeout))
                retry = _retryable(err) and not timed_out and time.monotonic() + wait < retry_until
                with self._lock:
                    self.stats.failures += 1
                    self.failures.append({"path": path, "attempt": attempt, "error": f"{type(err).__name__}: {err}",
                                          "retried": retry})
                if not retry:
                    raise
                time.sleep(wait)
                attempt += 1

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
            prompt_tokens = reply.get("usage", {}).get("prompt_tokens", 0)
            with self._lock:
                self.stats.prompt_tokens += prompt_tokens
            return Completion(choice["message"].get("content") or "", logprob, tokens, finish, prompt_tokens=prompt_tokens)
        except (TimeoutError, socket.timeout) as err:
            return Completion("", None, 0, "timeout", str(err))
        except urllib.error.URLError as err:
            timed_out = isinstance(err.reason, (TimeoutError, socket.timeout))
            return Completion("", None, 0, "timeout" if timed_out else "error", str(err))
        except (OSError, ValueError, KeyError, IndexError, TypeError, http.client.HTTPException) as err:
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

    def _odds(self, prompt: Prompt) -> tuple[float, int]:
        """(log-odds, prompt tokens the server reports)."""
        try:
            reply = self._chat(Prompt(prompt.system, prompt.skills, prompt.user, max_tokens=1, stop=()),
                               top_logprobs=TOP_LOGPROBS)
            top = {t["token"]: t["logprob"] for t in reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]}
        except (OSError, ValueError, KeyError, IndexError, TypeError, http.client.HTTPException):
            return float("nan"), 0  # no opinion: the policy neither wakes the agent here nor caches this
        floor = min(top.values())
        pool = lambda spellings: np.logaddexp.reduce([top.get(s, floor) for s in spellings])
        return float(pool(YES) - pool(NO)), int(reply.get("usage", {}).get("prompt_tokens", 0))

    def score(self, prompts: list[Prompt]) -> np.ndarray:
        self.stats.start()
        odds, tokens = zip(*self._map(self._odds, prompts)) if prompts else ((), ())
        result, self.scored_tokens = np.array(odds, dtype=float), np.array(tokens, dtype=np.int64)
        self.stats.prompts += len(prompts)
        self.stats.scored += len(prompts)
        self.stats.stop()
        return result

    def _choice(self, prompt: Prompt, options: list[str]) -> int:
        """The option the server's reply names under a JSON schema whose only key, ``verdict``, is any one of the
        options (JSON objects, skills/editor.py ``verdicts``) exactly; -1: none. One enum per key would let the
        server mix values no option has (SmolLM2 under vLLM wrote a timeout with a prune in 10 of 10 cases); the
        object around the ``anyOf`` is what strict mode asks of a schema's root. The prompt's stop strings are not
        sent: JSON may hold a newline, and the model's first one cut 8 of 10 verdicts short."""
        objects = [json.loads(o) for o in options]
        exact = [{"type": "object", "additionalProperties": False, "required": list(o),
                  "properties": {k: {"enum": [v]} for k, v in o.items()}} for o in objects]
        schema = {"type": "object", "additionalProperties": False, "required": ["verdict"],
                  "properties": {"verdict": {"anyOf": exact}}}
        try:
            reply = self._chat(prompt, stop=None, response_format={"type": "json_schema", "json_schema": {
                "name": "verdict", "schema": schema, "strict": True}})  # the schema ends the reply: no stop string
            got = json.loads(reply["choices"][0]["message"].get("content") or "")["verdict"]
        except (OSError, ValueError, KeyError, IndexError, TypeError, http.client.HTTPException):
            return -1
        return objects.index(got) if got in objects else -1

    def choose(self, prompts: list[Prompt], options: list[list[str]]) -> list[int]:
        self.stats.start()
        picks = self._map(lambda pair: self._choice(*pair), list(zip(prompts, options)))
        self.stats.prompts += len(prompts)
        self.stats.stop()
        return picks

    def forced(self, prompts: list[Prompt], completions: list[str]) -> list[np.ndarray]:
        raise NoPrivilegedPass("backend 'openai': a chat server returns no prompt log-probabilities, so it cannot run "
                               "the privileged pass (use llm.backend = \"hf\" or \"vllm\")")

    def close(self) -> None:
        pass
