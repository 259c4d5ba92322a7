"""An exponential moving average of a model's trained weights, and the model run with it for a while: a slow teacher.

hint_sd's teacher (agents/objectives/hint_sd.py) is the policy with its weights averaged over its recent updates,
so the target a located step is pulled to moves slower than the student it trains. The LoRA learner keeps the
average of the weights it trains (the adapters; the base model is frozen and common to both) and, for the
teacher's privileged pass, swaps the average into the model in place and back (the engine that scores holds the
same model)::

    w_ema <- ema x w_ema + (1 - ema) x w          after each update (w_ema starts as the initial w)
"""

from __future__ import annotations

import contextlib

import torch


class EMAWeights:
    def __init__(self, params, ema: float):
        self.params, self.ema = list(params), ema
        self.average = [p.detach().clone() for p in self.params]

    @torch.no_grad()
    def update(self) -> None:
        """Fold the weights as they are now into the average."""
        for a, p in zip(self.average, self.params):
            a.lerp_(p.detach(), 1 - self.ema)

    @contextlib.contextmanager
    def swapped(self):
        """The model with the averaged weights inside, its own weights back after (whatever happens inside)."""
        own = [p.detach().clone() for p in self.params]
        self._copy(self.average)
        try:
            yield
        finally:
            self._copy(own)

    @torch.no_grad()
    def _copy(self, values) -> None:
        for p, v in zip(self.params, values):
            p.copy_(v)

    def state_dict(self) -> dict:
        return {"ema": self.ema, "average": [a.cpu() for a in self.average]}

    def load_state_dict(self, state: dict) -> None:
        self.ema = state["ema"]
        with torch.no_grad():
            for a, saved in zip(self.average, state["average"]):
                a.copy_(saved)
