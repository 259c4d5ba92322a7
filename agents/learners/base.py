"""What every learner of the market shares: the device, Adam with row bookkeeping, the hooks a learner declares.

Training alternates (docs: concepts/learner.md): one market round collects B = (tasks x G) rollouts in
lockstep, then one update, then the next round. The learners themselves, one module each, are composed
by ``agents/learners/policy.py``: value bids (agents/learners/value_bids.py), REINFORCE bids (agents/learners/reinforce_bids.py),
rule action logits (agents/learners/action_logits.py) and the LM's LoRA (agents/learners/lm_grpo.py over agents/learners/hf_grpo.py);
what a round earned they read from agents/credit/advantages.py, and how a policy moves on it from
agents/objectives.

**The update** (:meth:`AdamStep.step`): zero grads, backward, clip the global grad norm, Adam step.
Device: ``cuda`` when available with bf16 autocast for the forward passes, else CPU; the same
code path (a learner with no gradient work stays on the CPU: :func:`pick_device`). Parameters whose rows grow
with the population keep their Adam moments (padded), and a recycled row's moments are zeroed when a newborn
takes it.

The KL to a reference policy, which the learners of actions and the objectives share, is written once in
agents/objectives/kl.py.
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import torch
from torch import nn


def pick_device(name: str = "auto", gradients: bool = True) -> torch.device:
    """``auto``: cuda when available and the learner has gradient work for it, else the CPU.

    A learner without gradients (value bids over rule actions: ``value_step`` touches only the rows
    of the round's turns) is bound by kernel launches on a GPU. There it runs slower than on the CPU
    (``benchmarks/learner.py``) and its float32 sums, taken in another order, change the blocks economy's
    ledgers, so ``auto`` keeps it on the CPU: the same ledger hash on every machine.
    """
    cuda = name == "cuda" or (name == "auto" and gradients and torch.cuda.is_available())
    return torch.device("cuda" if cuda else "cpu")


def autocast(device: torch.device):
    """bf16 autocast on cuda (the matmuls), nothing on CPU: one code path for both."""
    return torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else nullcontext()


# ------------------------------------------------------------------------------------ the update
class AdamStep:
    """Adam over a list of parameters, with gradient clipping and row-aware moment bookkeeping."""

    def __init__(self, params: list[nn.Parameter], lr: float, max_grad_norm: float, rows: list[nn.Parameter] = ()):
        """``rows``: the parameters among ``params`` whose first axis is the population's rows (a bid
        head's rows and biases, action logits); only their moments grow and restart with births."""
        self.params, self.lr, self.max_grad_norm = params, lr, max_grad_norm
        self.rows = list(rows)
        self._opt = None

    @property
    def opt(self) -> torch.optim.Adam:
        """Built at first use: constructing a torch optimizer imports torch._dynamo (about 0.9 s), which a run
        whose learner never steps (value bids over rule actions: relay's and blocks' learned runs) need not pay."""
        if self._opt is None:
            self._opt = torch.optim.Adam(self.params, lr=self.lr)
        return self._opt

    def step(self, loss: torch.Tensor | None = None) -> float:
        """Backward ``loss``, clip, step; ``loss=None``: the gradients are already there (a batch
        accumulated in chunks after ``opt.zero_grad``)."""
        if loss is not None:
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        self.opt.step()
        return float(norm)

    @torch.no_grad()
    def sync_rows(self, fresh: np.ndarray | None = None) -> None:
        """After the population grew or recycled rows: pad Adam's moments to the parameters' new row
        count, and zero the moments of ``fresh`` rows (a newborn does not inherit a dead agent's momentum)."""
        if self._opt is None:  # not built yet: no moments to pad or zero
            return
        for p in self.rows:
            state = self._opt.state.get(p)
            if not state:
                continue
            for key in ("exp_avg", "exp_avg_sq"):
                m = state[key]
                if m.shape != p.shape:
                    grown = m.new_zeros(p.shape)
                    grown[: m.shape[0]] = m
                    state[key] = m = grown
                if fresh is not None and fresh.size:
                    m[torch.as_tensor(fresh, device=m.device)] = 0

    def state_dict(self) -> dict | None:
        """Adam's state; None while it has never been built (a fresh Adam, which is what loading None restores)."""
        return None if self._opt is None else to_cpu(self._opt.state_dict())

    def load_state_dict(self, state: dict | None) -> None:
        if state is None:
            self._opt = None
        else:
            self.opt.load_state_dict(state)


def to_cpu(obj):
    """A state dict with every tensor moved to CPU (a checkpoint written on a GPU loads anywhere)."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu().clone()
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj


# ------------------------------------------------------------------------------ the learners' hooks
class RoundLearner:
    """The hooks a learner declares to :class:`agents.learners.policy.LearnedPolicy`, which calls them for every
    learner it composes (one bid learner, at most one action learner), so it never asks what a learner is.
    Each default does nothing; a learner overrides what it needs.

    * ``params`` / ``rows``: its parameters for the shared Adam (one clipped step over every learner's loss),
      and those among them whose first axis is the population's rows;
    * births: ``resize(capacity) -> grew``, ``born(rows, parents)`` (parents None: random newcomers);
    * a round: ``learn(model) -> stats`` (an update of its own, outside the shared Adam), then
      ``batch(model)`` once and ``loss(batch, epoch) -> (loss, stats) or None`` per epoch of ``agents.epochs``;
    * ``report()``: what the run's summary says of it; ``state_dict`` / ``load_state_dict``.
    """

    params: list = []
    """Its torch parameters, stepped by the shared Adam."""
    rows: list = []
    """Those of ``params`` whose first axis is the population's rows (resized and inherited at births)."""
    moves_features = False
    """Whether its update changes what the bid features read (an LM that is also the encoder)."""
    PROVIDES: tuple[str, ...] = ()
    """What its round gives an objective (agents/objectives ``NEEDS``) beyond every batch's fields, on any world."""
    PROVIDES_WHERE: dict[str, tuple[str, ...]] = {}
    """What it adds where the scenario's SPEC sets the flag named (scenarios/spec/: ``oracle``, ``subgoals``,
    ``rubric``): the world then gives what those signals are computed from."""

    @classmethod
    def provides(cls, spec) -> tuple[str, ...]:
        """The signals it gives an objective on a world of ``spec`` (scenarios/run/rules.py checks them at load)."""
        return cls.PROVIDES + tuple(s for flag, signals in cls.PROVIDES_WHERE.items() if getattr(spec, flag)
                                    for s in signals)

    def resize(self, capacity: int) -> bool:
        """Make room for ``capacity`` population rows.

        Args:
            capacity: The population's new number of rows.

        Returns:
            Whether any parameter grew (the shared optimiser then rebuilds its state).
        """
        return False

    def born(self, rows: np.ndarray, parents: np.ndarray | None) -> None:
        """Initialise newborns' rows.

        Args:
            rows: [K] the newborns' population rows.
            parents: [K] each one's parent row (a child inherits from it), or None for random newcomers.
        """

    def learn(self, model) -> dict:
        """An update of its own after a round, outside the shared Adam (e.g. a value head's exact step).

        Args:
            model: The market model whose round just ended (``model.trace``: the round's auctions and steps).

        Returns:
            Statistics for the run's log, by name.
        """
        return {}

    def batch(self, model):
        """What ``loss`` reads this round, made once before the epochs (None: no gradient work this round).

        Args:
            model: The market model whose round just ended.

        Returns:
            Any object its own ``loss`` understands (the action learners': a ``PolicyBatch``), or None.
        """
        return None

    def loss(self, batch, epoch: int):
        """Its loss for one epoch of ``agents.epochs``, summed with the other learners' into one clipped Adam step.

        Args:
            batch: What ``batch`` returned.
            epoch: The epoch, from 0.

        Returns:
            ``(loss, stats)``: a scalar tensor with grad and a dict of statistics; or None (nothing to learn).
        """
        return None

    def report(self) -> dict:
        """What the run's summary says of this learner.

        Returns:
            Summary keys and their values (documented with the summary's keys).
        """
        return {}

    def state_dict(self) -> dict:
        """Everything needed to continue exactly from a checkpoint.

        Returns:
            Tensors, arrays and plain values (written into the run's checkpoint).
        """
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what ``state_dict`` returned.

        Args:
            state: A checkpoint's entry for this learner.
        """
