"""The LLM policy's calls to its backend: batched generation and wake-up scoring, a greedy memo, token charges.

Each market step makes at most two backend calls, each one batch over all B worlds and all agents
that need it (``PolicyConfig.lockstep``; ``False`` sends the same prompts one by one: the benchmark's
sequential baseline, nothing else). Greedy prompts seen before are answered from a bounded memo, and
what each engine call cost in tokens is charged to the row that asked (agents/llm_policy.py).
"""

from __future__ import annotations

import numpy as np

from agents.backends.base import Completion, Prompt


class ModelCalls:
    """Mixed into LLMPolicy: reads ``backend``, ``cfg``, ``memo``, ``scores``, ``spent`` and ``_evaluating``."""

    def weights_changed(self) -> None:
        """The LM's weights moved (a learner's step): every cached answer, score and prefix KV is stale."""
        self.memo.clear()
        self.scores.clear()
        getattr(self.backend, "weights_changed", lambda: None)()

    def _generate(self, prompts: list[Prompt], rows: list[int]) -> list[Completion]:
        """Greedy prompts seen before are answered from the memo (the engine would repeat itself:
        a forfeiting agent facing the same state again); the rest go to the backend, and what each
        engine call cost in tokens is charged to the row that asked first (``rows[i]`` asked ``prompts[i]``)."""
        asker = dict(zip(reversed(prompts), reversed(rows)))  # each distinct prompt's first asker
        fresh = [p for p in dict.fromkeys(prompts) if p.temperature > 0 or p not in self.memo]
        if fresh and self.cfg.lockstep:
            done = self.backend.generate(fresh)
        else:
            done = [self.backend.generate([p])[0] for p in fresh]
        for p, c in zip(fresh, done):
            self._spend(asker[p], c.prompt_tokens + c.tokens)
        answers = dict(zip(fresh, done))
        for p, c in answers.items():
            if p.temperature == 0 and c.finish != "timeout" and c.finish != "error":
                self.memo[p] = c
                if len(self.memo) > self.cfg.memo:
                    self.memo.pop(next(iter(self.memo)))
        return [answers[p] if p in answers else self.memo[p] for p in prompts]

    def _score(self, prompts: list[Prompt], rows: list[int]) -> np.ndarray:
        """Wake-up scores of ``prompts``; each one's prompt tokens are charged to ``rows[i]``."""
        if not prompts:
            return np.zeros(0)
        if self.cfg.lockstep:
            scores, tokens = self.backend.score(prompts), self.backend.scored_tokens
        else:
            parts = [(self.backend.score([p]), self.backend.scored_tokens) for p in prompts]
            scores, tokens = (np.concatenate(column) for column in zip(*parts))
        for row, n in zip(rows, tokens.tolist()):
            self._spend(row, n)
        return scores

    def _spend(self, row: int, tokens: int) -> None:
        """Tokens an engine call used for ``row`` (not counted in evaluation: the frozen market pays nothing)."""
        if not self._evaluating and row >= 0:
            self.spent[row] += tokens

    def compute(self) -> np.ndarray:
        """[N] tokens each row's calls used since the last call (the market charges market.token_price)."""
        spent, self.spent = self.spent, np.zeros_like(self.spent)
        return spent
