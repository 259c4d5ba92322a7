"""The critics that token-level objectives read (the batch's ``token_logits``: tppo; ``value_logits``: pact, focus).

A critic gives a prefix a logit of success; the objective turns logits into values and trains them by
BCE on the outcome (agents/objectives). Read at each sampled token it gives ``token_logits`` (the
prefix through the token) and ``value_logits`` (the prefix before it: the state the token is sampled
in). Two shapes of action, one head each, both zero at the start (every value 1/2: no opinion yet):

* :class:`ActionCritic`, for rule-logit policies, whose action is one token: c = w_a . phi(s) + b_a,
  a linear map of the state's features (agents.features, one-hot by default: a table over states and
  actions), read at the action taken, and one more row, a = "none yet", for the state alone;
* :class:`TokenCritic`, for LLM agents: c_t = w . h_t + b on the LM's last hidden state at each
  completion token. The hidden states are detached: the critic is a probe on the policy's features,
  and the policy's weights move only by the objective's surrogate, as in the one-token case.
"""

from __future__ import annotations

import torch
from torch import nn

SIGNALS = ("token_logits", "value_logits")


def wanted(objective) -> bool:
    """Whether ``objective`` (agents.objectives.Objective, or None) reads a critic."""
    return objective is not None and bool(set(SIGNALS) & set(objective.needs))


class ActionCritic(nn.Module):
    def __init__(self, features: int, actions: int):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(actions + 1, features))  # the last row: the state, no action yet
        self.bias = nn.Parameter(torch.zeros(actions + 1))

    def forward(self, phi: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """[M] the logit of each (state, action taken): phi [M, F], actions [M]."""
        return (phi.to(self.weight.dtype) * self.weight[actions]).sum(-1) + self.bias[actions]

    def state(self, phi: torch.Tensor) -> torch.Tensor:
        """[M] the logit of each state before its action."""
        return self(phi, torch.full(phi.shape[:1], len(self.bias) - 1, device=phi.device))


class TokenCritic(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.head = nn.Linear(hidden, 1)
        nn.init.zeros_(self.head.weight), nn.init.zeros_(self.head.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """[n, L] per-token logits from the last hidden states [n, L, H] (detached here)."""
        return self.head(hidden.detach().float())[..., 0]
