r"""``pact``: actor, then critic, with importance-corrected critic targets (BCE critic, GAE lambda = 1).

A critic V_t = sigmoid(c_t) (c = ``value_logits``) predicts success from the state s_t token t is sampled
in: the prompt and the tokens before t (a baseline token t cannot move; read from the prefix through t it
would be Q(s_t, a_t), and R - Q cancels the very action it should judge: on blocks' rule logits that
version fell far below grpo). The tokens were sampled by the behaviour policy, so its Monte Carlo target R is
corrected by the truncated importance weights rho_t = min(1, pi(a_t) / pi_old(a_t)) (V-trace with
rho_bar = c_bar = 1, gamma = lambda = 1, the outcome R paid after the last token), backwards::

    v_{T+1} = R,        v_t = (1 - rho_t) V_t + rho_t v_{t+1}       (on-policy: v_t = R)
    A_t     = v_{t+1} - V_t                                        (on-policy: R - V_t, GAE lambda 1)
    L       = - mean_tokens min(r_t A_t, clip(r_t, 1 +- clip) A_t) + critic_coef x mean_tokens BCE(V_t, v_t)

Each target is a convex mix of values and R, so it stays in [0, 1], a valid BCE label. Actor then
critic: the actor's advantages and the critic's targets are both made from the critic *before* this
update (detached), so one summed step equals updating the actor first, then the critic.
"""

from __future__ import annotations

import torch
from pydantic import Field
from pydantic.dataclasses import dataclass
from torch.nn import functional as F

from agents.objectives.batch import PolicyBatch, clipped, token_mean
from market.strict import STRICT

NEEDS = ("value_logits",)


@dataclass(config=STRICT)
class Config:
    clip: float = Field(0.2, gt=0, lt=1)
    """PPO's clip range on the per-token ratio."""
    critic_coef: float = Field(0.5, ge=0)
    """Weight of the critic's BCE in the summed loss."""


@torch.no_grad()
def targets(batch: PolicyBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """[M, L] advantages A_t and critic targets v_t, by the backward recursion above (padding skipped)."""
    log_ratio = torch.where(batch.mask, batch.logp - batch.old_logp, 0)
    rho = log_ratio.exp().clamp(max=1)
    V = torch.sigmoid(batch.value_logits)
    A, v = torch.zeros_like(V), torch.zeros_like(V)
    after = batch.outcome.to(V.dtype)  # v_{t+1}
    for t in reversed(range(V.shape[1])):
        A[:, t] = after - V[:, t]
        v[:, t] = (1 - rho[:, t]) * V[:, t] + rho[:, t] * after
        after = torch.where(batch.mask[:, t], v[:, t], after)
    return A, v


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    A, v = targets(batch)
    ratio = torch.where(batch.mask, batch.logp - batch.old_logp, 0).exp()
    actor = -token_mean(clipped(ratio, A, cfg.clip), batch.mask)
    critic = token_mean(F.binary_cross_entropy_with_logits(batch.value_logits, v, reduction="none"), batch.mask)
    total = actor + cfg.critic_coef * critic
    return total, {"policy_loss": float(actor.detach()), "critic_loss": float(critic.detach()),
                   "target": float(token_mean(v, batch.mask))}
