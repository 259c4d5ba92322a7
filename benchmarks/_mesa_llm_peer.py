"""The peer of benchmarks/llm.py: the same wordmath work done by mesa-llm's agents (PyPI ``mesa-llm`` 0.2.0).

mesa-llm's pattern is one LLM call per agent per step: every ``LLMAgent`` decides for itself,
at every step, through litellm. Both of its schedules run here: its default (Mesa's
``shuffle_do("step")``, one agent after another, each call blocking) and its fastest,
automatic parallel stepping (``enable_automatic_parallel_stepping("asyncio")``), where a
step's agents all await their completions at once, so the server batches them.

The work is the recorded lockstep run's own: its steps, its worlds still running at each
step and its population. At each of those world-steps, every LLM agent of the population
whose role can act legally there (the market's own ``task.illegal``; the calculator is a
tool, not an LLM) asks the server for its action, with exactly the prompt the market would
send it if it won (``LLMPolicy.action_prompt``, built during the recorded run, so the same
messages, token cap, stop and greedy decoding). The replies are not fed back: like the other
modes, the peer replays the recorded trajectory, so both sides face the same states for the
same number of world-steps.

Two adaptations, both to keep the comparison fair:
* ``ModuleLLM.agenerate`` sends no token cap, stop or temperature, so an agent here awaits
  the same litellm coroutine (``litellm.acompletion``, on the agent's ``llm.llm_model``)
  with the market's caps: both sides generate the same lengths.
* mesa-llm's reasoning modules (CoT, ReAct, ReWOO) are not used: each of their plans ends in
  a forced tool call (``tool_choice="required"``) after a free-text planning call, which is
  two or more calls per agent per step and asks SmolLM2-135M for function calling that
  litellm itself reports it does not support. The agents keep mesa-llm's memory (its
  per-step processing runs around every step), with its console display off.
"""

from __future__ import annotations

import contextlib
import io
import os
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of litellm's price list at import

import litellm  # noqa: E402
import mesa  # noqa: E402
import numpy as np  # noqa: E402
from mesa_llm.llm_agent import LLMAgent  # noqa: E402
from mesa_llm.parallel_stepping import disable_automatic_parallel_stepping, enable_automatic_parallel_stepping  # noqa: E402
from mesa_llm.reasoning.cot import CoTReasoning  # noqa: E402

from agents.backends.base import Prompt  # noqa: E402


class PeerAgent(LLMAgent):
    """One LLM agent of the market's population in one world: at each step, one completion of its prompt
    (none where its world has ended or its role cannot act in the state)."""

    def _request(self, prompt: Prompt) -> dict:
        return dict(model=self.llm.llm_model, messages=prompt.messages(), max_tokens=prompt.max_tokens,
                    stop=list(prompt.stop) or None, temperature=prompt.temperature)

    def _count(self, reply) -> None:
        self.model.completion_tokens += reply.usage.completion_tokens
        self.model.calls += 1

    def step(self):
        prompt = self.model.prompts.get(self.unique_id)
        if prompt is not None:
            self._count(litellm.completion(**self._request(prompt)))

    async def astep(self):
        prompt = self.model.prompts.get(self.unique_id)
        if prompt is not None:
            self._count(await litellm.acompletion(**self._request(prompt)))


class PeerModel(mesa.Model):
    """B worlds x the population's LLM agents as mesa-llm agents; ``step(prompts)`` is one world-step of each."""

    def __init__(self, base_url: str, served: str, keys: list[tuple[int, int]], parallel: bool):
        super().__init__(rng=0)
        os.environ["HOSTED_VLLM_API_BASE"] = base_url  # litellm's hosted_vllm provider reads these two
        os.environ.setdefault("HOSTED_VLLM_API_KEY", "EMPTY")
        self.parallel_stepping = parallel
        self.prompts: dict[int, Prompt] = {}
        self.calls, self.completion_tokens = 0, 0
        self.agent_of: dict[tuple[int, int], int] = {}
        with contextlib.redirect_stdout(io.StringIO()):  # each LLM module warns that SmolLM2 has no function calling
            for key in keys:
                agent = PeerAgent(self, reasoning=CoTReasoning, llm_model=f"hosted_vllm/{served}")
                agent.memory.display = False
                self.agent_of[key] = agent.unique_id

    def step(self, prompts: dict[tuple[int, int], Prompt]) -> None:
        self.prompts = {self.agent_of[key]: p for key, p in prompts.items()}
        self.agents.shuffle_do("step")


def record(world, policy) -> list[dict[tuple[int, int], Prompt]]:
    """Hook a market run: at each step, every (world still running, LLM agent that can act there) pair's
    action prompt, built before the market moves -> the list the run fills, one dict per step."""
    steps, active = [], np.ones(0, dtype=bool)
    rows = [r for r in np.flatnonzero(policy.role >= 0).tolist() if not policy.roles[policy.role[r]].tool]
    observe, step, reset = world.observe, world.step, world.reset

    def observed():
        obs = observe()
        steps.append({(b, r): policy.action_prompt(b, r, obs[b]) for b in np.flatnonzero(active).tolist()
                      for r in rows if not policy.task.illegal(policy.roles[policy.role[r]].name, obs[b])})
        return obs

    def stepped(actions, won):
        reward, done = step(actions, won)
        active[np.asarray(done, dtype=bool)] = False
        return reward, done

    def reset_all(batch, rng):
        nonlocal active
        active = np.ones(batch, dtype=bool)
        return reset(batch, rng)

    world.observe, world.step, world.reset = observed, stepped, reset_all
    return steps


def replay(base_url: str, served: str, steps: list[dict], parallel: bool) -> tuple[float, int, int]:
    """Play the recorded world-steps with mesa-llm agents, on its default schedule or its parallel one
    -> (wall seconds, calls, generated tokens)."""
    enable_automatic_parallel_stepping("asyncio")  # patches AgentSet.shuffle_do; it reads model.parallel_stepping
    try:
        model = PeerModel(base_url, served, sorted({key for prompts in steps for key in prompts}), parallel)
        start = time.perf_counter()
        for prompts in steps:
            model.step(prompts)
        return time.perf_counter() - start, model.calls, model.completion_tokens
    finally:
        disable_automatic_parallel_stepping()
