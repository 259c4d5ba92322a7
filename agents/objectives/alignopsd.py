r"""``alignopsd``: the teacher's gap at a turn, against the same step in the task's other rollouts, matched by what the turns say.

The teacher is agentopsd's: the policy with the correct output at the step's state in its prompt (a privileged
pass, agents/objectives/privileged.py), its per-turn gap g_m = mean_t log pi(y_t | x, correct) - log pi(y_t | x).
A gap alone mixes what the step did with what any rollout of the task does there (a step every rollout takes
and the teacher likes everywhere earned nothing over its siblings). So each turn is compared with the same step
of the group's other rollouts. Rollouts take their steps in different orders and numbers, so turn m of one is
not turn m of another: turns are matched by the cosine of their frozen sentence embeddings (``thought``: the
reply's text embedded by the shipped MiniLM, agents/learners/bid_head.py), each keeping its top K matches among the
task's other rollouts with cosine >= tau. Its correspondence profile p_m (over the group's turns, plus one slot
"unmatched") weights those matches by cosine. Consecutive turns that correspond to the same steps elsewhere
form a span (a step spread over several turns); a span ends where the Jensen-Shannon divergence of adjacent
turns' profiles jumps. Each span's contrast, signed by the advantage, gives its turns a stop-grad weight::

    p_m(j) = cos(e_m, e_j) / sum_k cos(e_m, e_k)   j among m's top-K matches with cos >= tau (none: p_m = unmatched)
    c_m    = g_m - sum_j p_m(j) g_j                (unmatched: g_m - the mean gap of the group's turns)
    spans  : an episode's turns in time order, cut between m-1 and m where JSD(p_{m-1}, p_m) > cut
    u_m    = exp(sign(A_m) c_{s(m)} / T)            c_s: the span's token-weighted mean contrast
    w_m    = u_m x sum_k n_k / sum_k n_k u_k         (per episode, n_k: turn k's tokens)
    L      = grpo's clipped surrogate on w_m A_m

A success's span the teacher endorses more than the sibling rollouts' version of it gets more of the
advantage; a failure's span it disowns more than theirs gets more of the blame. The total per episode is kept.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from pydantic import Field
from pydantic.dataclasses import dataclass

from agents.objectives.batch import PolicyBatch
from agents.objectives.grpo import Config as Grpo
from agents.objectives.privileged import episodes, mean_one, reweighted, turn_gap
from market.strict import STRICT

NEEDS = ("teacher_logp", "thought")


@dataclass(config=STRICT)
class Config:
    grpo: Grpo = Field(default_factory=Grpo)
    """The surrogate's settings."""
    temperature: float = Field(0.5, gt=0)
    """T: how sharply a span's contrast tilts its weight (large: uniform, grpo's)."""
    tau: float = Field(0.75, gt=0, le=1)
    """The cosine of two turns' embeddings from which they count as the same step."""
    top_k: int = Field(3, ge=1)
    """K: the matches a turn keeps among its task's other rollouts (one per sibling at G = 4)."""
    cut: float = Field(math.log(2) / 2, ge=0, le=math.log(2))
    """The JSD (nats; ln 2 for disjoint profiles) between adjacent turns' profiles above which a span ends."""


def profiles(batch: PolicyBatch, cfg: Config) -> torch.Tensor:
    """[M, M + 1] each turn's correspondence profile over the batch's turns, its last column "unmatched"."""
    e = F.normalize(batch.thought.detach().to(batch.advantage.dtype), dim=-1)
    sibling = (batch.group[:, None] == batch.group[None, :]) & (batch.episode[:, None] != batch.episode[None, :])
    sim = e @ e.T
    sim = torch.where(sibling & (sim >= cfg.tau), sim, 0)
    top = sim.topk(min(cfg.top_k, sim.shape[1]), dim=1)
    kept = torch.zeros_like(sim).scatter(1, top.indices, top.values)
    p = torch.cat([kept, (kept.sum(1) == 0)[:, None].to(kept.dtype)], 1)
    return p / p.sum(1, keepdim=True)


def jsd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence (nats) of two distributions over the same support."""
    m = (p + q) / 2
    return (torch.xlogy(p, p / m.clamp(min=1e-30)).sum() + torch.xlogy(q, q / m.clamp(min=1e-30)).sum()) / 2


def contrast(g: torch.Tensor, p: torch.Tensor, batch: PolicyBatch) -> torch.Tensor:
    """[M] c_m: each turn's gap less its matched turns' (an unmatched one's: its group's mean gap)."""
    groups, index = torch.unique(batch.group, return_inverse=True)
    mean = g.new_zeros(len(groups)).index_add_(0, index, g) / torch.bincount(index).to(g.dtype)
    matched = p[:, -1] < 1
    return torch.where(matched, g - p[:, :-1] @ g, g - mean[index])


def spans(p: torch.Tensor, batch: PolicyBatch, cfg: Config) -> torch.Tensor:
    """[M] int: each turn's span, numbered across the batch; a span ends where the profiles' JSD exceeds ``cut``."""
    out = torch.zeros(len(p), dtype=torch.long, device=p.device)
    n = -1
    for rows in episodes(batch):
        for i, m in enumerate(rows.tolist()):
            if i == 0 or float(jsd(p[rows[i - 1]], p[m])) > cfg.cut:
                n += 1
            out[m] = n
    return out


def loss(batch: PolicyBatch, cfg: Config) -> tuple:
    g = turn_gap(batch.teacher_logp, batch, mean=True).to(batch.advantage.dtype)
    p = profiles(batch, cfg)
    c = contrast(g, p, batch)
    span = spans(p, batch, cfg)
    n = batch.mask.sum(1).to(c.dtype)
    per_span = c.new_zeros(int(span.max()) + 1)
    span_c = per_span.index_add(0, span, n * c) / per_span.index_add(0, span, n).clamp(min=1)
    z = torch.sign(batch.advantage) * span_c[span] / cfg.temperature
    weight = mean_one(torch.exp(z - z.max()), batch, tokens=True)
    value, stats = reweighted(batch, weight, cfg.grpo)
    stats.update(teacher_gap=float(g.mean()), contrast=float(c.mean()), matched=float((p[:, -1] < 1).double().mean()),
                 spans=float(span.max() + 1), weight_max=float(weight.max()))
    return value, stats
