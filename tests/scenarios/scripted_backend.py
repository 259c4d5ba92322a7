"""A scripted stand-in for the LLM backend, for market rounds of text worlds in tests that cannot afford the model.

Named as what it is: a subclass writes ``answer(prompt)``, every agent wakes, every completion is 4 tokens of a
9-token prompt. The real model plays the same worlds in their slow tests.
"""

import numpy as np

from agents.backends.base import Completion, Stats


class ScriptedBackend:
    name = "scripted"

    def __init__(self):
        self.stats, self.scored_tokens = Stats(), np.zeros(0, dtype=np.int64)

    def answer(self, prompt) -> str:
        raise NotImplementedError

    def generate(self, prompts):
        return [Completion(self.answer(p), tokens=4, prompt_tokens=9) for p in prompts]

    def score(self, prompts):  # every agent wakes
        self.scored_tokens = np.full(len(prompts), 9, dtype=np.int64)
        return np.ones(len(prompts))

    def close(self):
        pass
