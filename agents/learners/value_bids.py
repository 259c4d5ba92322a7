"""Value bids (``market.bid_scheme = "learned"``, ``agents.bid_objective = "value"``): each agent bids what its turn
is worth to it.

The bid head (agents/learners/bid_head.py) predicts what each agent's turn from an observation will earn it, [B, N]
credits; the agent bids (1 - value.margin) x that and sits out where it predicts a loss.

**The value update.** Each turn k of the round (agent i_k bought world b at step t and held it) earned
y_k = what its successor paid for the world + the world's rewards - its fees (the ledger's flows,
:func:`agents.credit.advantages.turn_earnings`). The head's prediction v_k = x_k . row[i] + bias[i] (x_k = phi(obs of
turn k)) moves toward y_k by one normalised least-squares step on the round's Huber loss::

    L = sum_k  s_i / (K_i (|x_k|^2 + 1)) x huber(v_k - y_k)          SGD, step size 1

where agent i took K_i turns this round after n_i earlier ones, and s_i = K_i / (n_i + K_i) while
n_i + K_i <= 1 / value.rate (the plain mean of a young agent's turns), else 1 - (1 - value.rate)^K_i
(an exponential average per turn: XCS's update). With ``agent`` features (x empty) this is exactly
v_i <- v_i + s_i (mean_k y_k - v_i): a per-agent running value; with one-hot features each state's
entry follows the turns taken there. The step is exact and its own (no Adam): the learner has no
parameters in the shared optimizer, and a shared text projection stays fixed.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from agents.credit.advantages import turn_earnings
from agents.config import AgentsConfig
from agents.learners.market_bids import MarketBids


class ValueBids(MarketBids):
    def __init__(self, cfg: AgentsConfig, features, device: torch.device):
        super().__init__(cfg, features, device)
        if self.head.proj is not None:
            self.head.proj.requires_grad_(False)
        self.turns = np.zeros(2, dtype=np.int64)  # [N] turns each row's value has learned from
        self.changed()

    @property
    def reads_auctions(self) -> bool:
        return False  # only the payments

    def eligible(self, obs: np.ndarray, awake: np.ndarray) -> np.ndarray:
        """An agent that predicts a loss sits out."""
        return awake & (self.values(obs) >= 0)

    def bids(self, obs: np.ndarray) -> np.ndarray:
        # numpy only: no torch.no_grad() to enter (~4 us of a blocks step)
        return ((1 - self.cfg.value.margin) * np.maximum(self.values(obs), 0)).astype(np.float64)

    def values(self, obs: np.ndarray) -> np.ndarray:
        """[B, N] predicted values of this step's observations, once per step (eligible and bids share them).

        Computed in numpy float32 from a CPU copy of the head's weights, refreshed when they change
        (a learning step, a birth, a checkpoint): acting costs no torch call per step, and a run clears
        the same auctions whatever device the head trains on."""
        seen, values = self._scored
        if seen is not obs:
            if self._weights is None:
                head = self.head
                self._weights = (None if head.proj is None else head.proj.weight.detach().float().cpu().numpy().T,
                                 head.row.detach().float().cpu().numpy().T.copy(),
                                 head.bias.detach().float().cpu().numpy())
            proj, rows, bias = self._weights
            phi = self.features(obs)
            x = phi if proj is None else phi @ proj
            values = x @ rows + bias if rows.shape[0] else np.broadcast_to(bias, (len(obs), bias.size))
            self._scored = (obs, values)
        return values

    def changed(self) -> None:
        self._weights, self._scored = None, (None, None)

    def resize(self, capacity: int) -> bool:
        grew = super().resize(capacity)
        if grew:
            self.turns = np.r_[self.turns, np.zeros(capacity - self.turns.size, dtype=np.int64)]
        return grew

    def revise(self, rows, parents, made, found, rng) -> None:
        """A rule revised at a state (``found``) is a new rule: its value starts as a newcomer's guess; every
        other revised row inherits its parent's head row."""
        fresh = made & found
        self.head.spawn(rows[fresh], rng)
        self.head.inherit(rows[made & ~fresh], parents[made & ~fresh], rng)

    def born(self, rows: np.ndarray, parents: np.ndarray | None) -> None:
        """A newborn's value has learned from no turns yet."""
        self.turns[rows] = 0
        self.changed()

    def learn(self, model) -> dict:
        """One normalised least-squares step of every turn's predicted value toward what it earned."""
        self.changed()
        agents, t, b, earned = turn_earnings(model.trace)
        if agents.size == 0:
            return {}
        k = np.bincount(agents, minlength=self.turns.size)
        n, rate = self.turns, self.cfg.value.rate
        share = np.where(n + k <= 1 / rate, k / np.maximum(n + k, 1), 1 - (1 - rate) ** k)
        d = self.device
        phi = torch.as_tensor(self.features(model.trace.obs[t, b]), device=d)
        loss, errors = value_loss(self.head, phi, torch.as_tensor(agents, device=d),
                                  torch.as_tensor(earned, dtype=torch.float32, device=d),
                                  torch.as_tensor(share[agents] / k[agents], dtype=torch.float32, device=d),
                                  self.cfg.value.huber)
        value_step(self.head, loss)
        self.changed()
        self.turns += k
        return {"value_loss": float(errors.detach().mean()), "value_turns": int(agents.size)}

    def state_dict(self) -> dict:
        return {**super().state_dict(), "turns": self.turns.copy()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.turns = state["turns"].copy()


def value_step(head, loss: torch.Tensor) -> None:
    """Backward :func:`value_loss`, then one SGD step of size 1 on the rows and biases: the normalised step it is
    built for. Written in place rather than through torch.optim.SGD, whose construction imports torch._dynamo (a
    large share of a short relay run's time); the arithmetic is SGD's, p - grad."""
    head.row.grad = head.bias.grad = None
    loss.backward()
    with torch.no_grad():
        for p in (head.row, head.bias):
            p.sub_(p.grad)
            p.grad = None


def value_loss(head, phi, agents, target, share, delta: float):
    """The value heads' loss, sum_k share_k / (|x_k|^2 + 1) x huber(v_k - y_k), and the per-turn errors.

    x_k = the turn's features as the rows see them (a shared projection is held fixed); dividing by
    |x_k|^2 + 1 (NLMS) makes one SGD step of size 1 move turn k's prediction by share_k x its error.
    """
    x = head.proj(phi).detach() if head.proj is not None else phi
    errors = nn.functional.huber_loss(head.turn_values(phi, agents), target, reduction="none", delta=delta)
    return (share / ((x * x).sum(-1) + 1) * errors).sum(), errors
