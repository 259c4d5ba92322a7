"""The LLM policy's calls to its backend: batched generation and wake-up scoring, a greedy memo, token charges.

Each market step makes at most two backend calls per engine (a role may call a model of its own:
agents/llm/task.py ``Role.llm``), each one batch over all B worlds and all agents that need it
(``PolicyConfig.lockstep``; ``False`` sends the same prompts one by one: the benchmark's sequential baseline,
nothing else). Greedy prompts the shared engine answered before are answered from a bounded memo, and what
each engine call cost in tokens is charged to the row that asked, per model (agents/llm/policy.py).
"""

from __future__ import annotations

import numpy as np

from agents.backends.base import Completion, Prompt
from agents.backends.factory import label


class ModelCalls:
    """Mixed into LLMPolicy: reads ``backend`` (the shared engine), ``engines`` (role index -> the engine of a role
    with a model of its own), ``role``, ``cfg``, ``memo``, ``scores``, ``spent`` and ``_evaluating``."""

    def weights_changed(self) -> None:
        """The LM's weights moved (a learner's step): every cached answer, score and prefix KV is stale."""
        self.memo.clear()
        self.scores.clear()
        getattr(self.backend, "weights_changed", lambda: None)()

    def engine(self, row: int):
        """The engine ``row``'s role calls (its own model, agents/llm/task.py ``Role.llm``; row -1, the
        framework's own asks: the shared one)."""
        return self.backend if row < 0 or self.role[row] < 0 else self.engines.get(self.role[row], self.backend)

    def all_engines(self) -> list:
        """Every engine this policy's agents call, the shared one first, each once."""
        return list({id(e): e for e in (self.backend, *self.engines.values())}.values())

    def _split(self, prompts: list[Prompt], rows: list[int]) -> list[tuple[object, list[int]]]:
        """(engine, indices into prompts) per engine the asking rows' roles call, the shared one first."""
        groups: dict[int, tuple[object, list[int]]] = {}
        for i, row in enumerate(rows):
            engine = self.engine(row)
            groups.setdefault(id(engine), (engine, []))[1].append(i)
        return sorted(groups.values(), key=lambda g: g[0] is not self.backend)

    def generate(self, prompts: list[Prompt], rows: list[int]) -> list[Completion]:
        """Greedy prompts the shared engine answered before are answered from the memo (it would repeat itself:
        a forfeiting agent facing the same state again); the rest go to the engine of the asking row's role
        (one batch per engine; a prompt asked of two engines is two asks), and what each call cost in tokens is
        charged to the row that asked first (``rows[i]`` asked ``prompts[i]``)."""
        keys = [(id(self.engine(row)), p) for p, row in zip(prompts, rows)]
        asker = dict(zip(reversed(keys), reversed(rows)))  # each distinct (engine, prompt)'s first asker
        shared = id(self.backend)
        fresh = [k for k in dict.fromkeys(keys) if k[1].temperature > 0 or k[0] != shared or k[1] not in self.memo]
        answers: dict[tuple, Completion] = {}
        for engine, idx in self._split([p for _, p in fresh], [asker[k] for k in fresh]):
            batch = [fresh[i] for i in idx]
            if self.cfg.lockstep:
                done = engine.generate([p for _, p in batch])
            else:
                done = [engine.generate([p])[0] for _, p in batch]
            answers.update(zip(batch, done))
        for k in fresh:
            self._spend(asker[k], answers[k].prompt_tokens + answers[k].tokens, self.engine(asker[k]))
        for (engine, p), c in ((k, answers[k]) for k in fresh):
            if engine == shared and p.temperature == 0 and c.finish != "timeout" and c.finish != "error":
                self.memo[p] = c
                if len(self.memo) > self.cfg.memo:
                    self.memo.pop(next(iter(self.memo)))
        return [answers[k] if k in answers else self.memo[k[1]] for k in keys]

    def _score(self, prompts: list[Prompt], rows: list[int]) -> np.ndarray:
        """Wake-up scores of ``prompts`` (one pass per engine); each one's prompt tokens are charged to ``rows[i]``."""
        if not prompts:
            return np.zeros(0)
        scores, tokens = np.zeros(len(prompts)), np.zeros(len(prompts), dtype=np.int64)
        for engine, idx in self._split(prompts, rows):
            if self.cfg.lockstep:
                scores[idx], tokens[idx] = engine.score([prompts[i] for i in idx]), engine.scored_tokens
            else:
                parts = [(engine.score([prompts[i]]), engine.scored_tokens) for i in idx]
                scores[idx], tokens[idx] = (np.concatenate(column) for column in zip(*parts))
        for row, n in zip(rows, tokens.tolist()):
            self._spend(row, n, self.engine(row))
        return scores

    def _spend(self, row: int, tokens: int, engine) -> None:
        """Tokens ``engine`` used for ``row`` (not counted in evaluation: the frozen market pays nothing)."""
        if not self._evaluating and row >= 0:
            self.spent[row] += tokens
            model = label(engine)
            if model not in self.spent_by:
                self.spent_by[model] = np.zeros(self.spent.size, dtype=np.int64)
            self.spent_by[model][row] += tokens
            self.counts[f"tokens:{self.roles[self.role[row]].name}"] += tokens

    def compute(self) -> dict[str, np.ndarray]:
        """{model: [N] tokens} each row's calls to each model used since the last call (the market charges
        market.token_price, or the model's market.token_prices)."""
        spent, self.spent_by = self.spent_by, {}
        self.spent = np.zeros_like(self.spent)
        return spent
