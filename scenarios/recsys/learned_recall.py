"""A recall source with learned item scores, trained by an ``agents.objective`` that reads them (``ca_pg``).

The recall role hands the rank role its top ``candidates`` items; a request only scores if a held-out item
is among them. This source scores every item for a user as

    s_u,i = tau x <q_u, e_i>,     q_u = normalise(sum of e_j over the user's last ``seeds`` items)

with one embedding e_i per item (initialised from the PureSVD item embedding the ``embed`` source reads, so
that before any update it proposes what ``embed`` proposes) and a learned scale tau. After each round the
objective gets, for every held-out item of the round's questions (their validation segment: the requests the
rollouts answered), the scores of all items as ``item_logits`` (history and unreleased items at -inf: no
recall may propose them), the item's index as ``target`` and the candidate count as ``list_len``; one Adam
step then follows its gradient (``ca_pg``: the probability that the list of ``candidates`` holds the item).
Validation and test users' targets are never trained on.

As a recall source (ops.py ``learned``) the scores become the softmax probabilities, scaled to max 1 like
every source's. ``version`` counts updates, so a score cached for a library (the gate's) is not reused
after the scores moved.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch

from agents.objectives import PolicyBatch
from scenarios.recsys.data import Split

SEEDS = 20  # the last items of a user's history its query reads (``embed``'s seeds in the initial library)


class LearnedRecall:
    def __init__(self, data: Split, embedding: np.ndarray, objective, lr: float, candidates: int):
        self.data, self.objective, self.list_len = data, objective, candidates
        self.items = torch.nn.Parameter(torch.as_tensor(np.asarray(embedding), dtype=torch.float32).clone())
        self.log_scale = torch.nn.Parameter(torch.tensor(np.log(10.0), dtype=torch.float32))
        self.opt = torch.optim.Adam([self.items, self.log_scale], lr=lr)
        self.version = 0
        self._initial = (self.items.detach().clone(), self.log_scale.detach().clone())

    def logits(self, users: np.ndarray, seeds: int = SEEDS) -> torch.Tensor:
        """[B, I] tau <q_u, e_i>, with each user's history and not-yet-released items at -inf."""
        recent = self.data.recent(users, seeds).tocoo()
        rows = torch.as_tensor(np.c_[recent.row, recent.col].T, dtype=torch.long)
        weights = torch.sparse_coo_tensor(rows, torch.as_tensor(recent.data, dtype=torch.float32), recent.shape,
                                          check_invariants=False)  # scipy's COO: valid by construction
        query = torch.nn.functional.normalize(torch.sparse.mm(weights, self.items), dim=1)
        scores = self.log_scale.exp() * query @ torch.nn.functional.normalize(self.items, dim=1).T
        blocked = torch.as_tensor(self.data.strike(np.zeros(scores.shape), users) < 0)
        return scores.masked_fill(blocked, float("-inf"))

    @torch.no_grad()
    def scores(self, users: np.ndarray, seeds: int = SEEDS) -> np.ndarray:
        """[B, I] the recall's probabilities over the items it may propose."""
        return torch.softmax(self.logits(users, seeds), dim=1).numpy().astype(np.float64)

    def update(self, users: np.ndarray) -> dict:
        """One step of the objective on the held-out items of ``users`` (one row per item; an item the recall
        may not propose, not yet released at the request, has target -1 and carries no signal)."""
        users = np.unique(users)
        logits = self.logits(users)
        targets = self.data.targets[users]  # [B, holdout]
        row = np.repeat(np.arange(users.size), targets.shape[1])
        item_logits = logits[torch.as_tensor(row)]
        target = torch.as_tensor(targets.reshape(-1))
        target = torch.where(torch.isfinite(item_logits.gather(1, target[:, None])[:, 0]), target, -1)
        logp = torch.log_softmax(item_logits, 1).gather(1, target.clamp(min=0)[:, None])
        M = target.numel()
        batch = PolicyBatch(logp=logp, old_logp=logp.detach(), mask=torch.ones_like(logp, dtype=torch.bool),
                            advantage=torch.zeros(M), outcome=torch.zeros(M), group=torch.as_tensor(row),
                            episode=torch.arange(M), entropy=torch.zeros_like(logp), item_logits=item_logits,
                            target=target, list_len=self.list_len)
        loss, stats = self.objective(batch)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.version += 1
        return {**stats, "updates": self.version}

    @torch.no_grad()
    def hit_rate(self, users: np.ndarray) -> float:
        """Share of ``users``' held-out items among the recall's top ``list_len`` on its own."""
        logits = self.logits(users)
        best = torch.topk(logits, min(self.list_len, logits.shape[1]), dim=1)
        top = np.where(torch.isfinite(best.values).numpy(), best.indices.numpy(), -1)  # fewer proposable items than L
        return float((top[:, :, None] == self.data.targets[users][:, None, :]).any(1).mean())

    @contextmanager
    def untrained(self):
        """The scores as initialised, for the length of a ``with`` (the summary's ablation: the same library with
        the recall before any update)."""
        trained = (self.items.detach().clone(), self.log_scale.detach().clone())
        with torch.no_grad():
            self.items.copy_(self._initial[0]), self.log_scale.copy_(self._initial[1])
        try:
            yield self
        finally:
            with torch.no_grad():
                self.items.copy_(trained[0]), self.log_scale.copy_(trained[1])

    def state_dict(self) -> dict:
        return {"items": self.items.detach().clone(), "log_scale": self.log_scale.detach().clone(),
                "opt": self.opt.state_dict(), "version": self.version}

    def load_state_dict(self, state: dict) -> None:
        with torch.no_grad():
            self.items.copy_(state["items"])
            self.log_scale.copy_(state["log_scale"])
        self.opt.load_state_dict(state["opt"])
        self.version = state["version"]


SKILL = ("recall-learned", "recall", "Candidates the learned recall scores highest for the user's recent items.",
         f"always -> learned(seeds={SEEDS}, weight=1)")
"""The skill that runs the source, added to the seed library of a run that trains it."""


def trains_recall(objective: str) -> bool:
    """Whether ``agents.objective`` reads item scores: then the run's recall has a learned source it trains."""
    from agents.objectives import needs

    return "item_logits" in needs(objective)


def for_run(exp, world) -> LearnedRecall | None:
    """The run's learned recall (on ``world.pipeline``, where the ``learned`` source reads it), or None when
    ``agents.objective`` does not train one."""
    if not trains_recall(exp.agents.objective):
        return None
    from agents.objectives import for_agents as objective_for

    world.pipeline.learned = LearnedRecall(world.data, world.signals.embedding, objective_for(exp.agents),
                                           exp.agents.lr, exp.scenario.candidates)
    return world.pipeline.learned
