"""The team's workflow, recall -> rank -> rerank, run on a batch of requests by a library of skills.

A skill applies to a request when one of its clauses' conditions holds for
the request's features; in a rollout an applicable skill is *used* with
probability ``p_use`` (stochastic skill application, so that the G rollouts of
one question differ in which skills ran); in an evaluation every applicable
skill is used. Used clauses run their operators (:mod:`scenarios.recsys.ops`):

* **recall**: the sum of the used sources' scores; history items and items not yet released at
  the request are struck out; the
  top ``candidates`` with a positive score are the candidate set;
* **rank**: the sum of the used terms, each z-normalised over the candidates; with no rank
  skill used the candidates keep the recall order;
* **rerank**: the used steps in library order; the first ``k`` items are the recommendation.

Per-role checks (the trace nodes' statuses, skills/workflow.py) feed the workflow penalty:

* recall ``empty_output`` (no candidate) or ``constraint_violated`` (it missed every held-out item);
* rank ``empty_output`` (no rank skill ran) or ``constraint_violated`` (fewer than k items);
* rerank ``constraint_violated``: fewer than ``diversity_floor`` genres in the top k (not checked without
  genre data: every item of genre 0 would violate it); with an LLM playing rerank, ``invalid_output`` when
  its answer holds no candidate number.

Everything is vectorized over the requests, ``chunk`` users at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from pydantic import Field
from pydantic.dataclasses import dataclass as config_dataclass

from scenarios.recsys import ops, rules
from scenarios.recsys.data import Split
from scenarios.recsys.ranking import ndcg, recall, top_k
from scenarios.recsys.signals import Signals
from skills.workflow import STATUSES, Trace
from market.strict import STRICT

ROLES = ops.ROLES
OK, INVALID, EMPTY, VIOLATED = (STATUSES.index(s) for s in
                                ("ok", "invalid_output", "empty_output", "constraint_violated"))


@config_dataclass(config=STRICT)
class PipelineConfig:
    candidates: int = Field(100, ge=10)
    """Size of the recall's candidate set."""
    k: int = Field(10, ge=1)
    """Length of the recommendation (NDCG@k)."""
    reward_k: int = Field(0, ge=0)
    """A rollout's reward is NDCG@reward_k of the whole reranked list (0: all candidates): a dense
    surrogate of NDCG@k, so that a target moving from rank 30 to 12 counts for credit too."""
    diversity_floor: int = Field(2, ge=0)
    """Rerank check: fewer distinct genres than this in the top k violates the constraint."""
    fresh_days: float = Field(60.0, gt=0)
    """An item at most this old when consumed counts as fresh (the ``novelty`` feature)."""
    chunk: int = Field(512, ge=1)
    """Users scored at once (memory: chunk x items floats)."""


@dataclass
class Compiled:
    """A library ready to run: one entry per skill, its clauses grouped by role."""

    names: list[str]  # [K]
    bodies: list[str]  # [K] what an LLM playing the role reads
    roles: list[str]  # [K]
    clauses: dict[str, list[tuple[int, rules.Clause]]]  # role -> [(skill index, clause)] in library order
    key: tuple  # what the skills run: equal keys give equal results (an evaluation cache key)

    @classmethod
    def of(cls, skills) -> "Compiled":
        """Skills without a recsys role or a rule are not part of the workflow and are left out."""
        names, bodies, roles, clauses = [], [], [], {r: [] for r in ROLES}
        for s in skills:
            if s.role not in ROLES or not s.rule:
                continue
            k = len(names)
            names.append(s.name)
            bodies.append(getattr(s, "body", "") or "")
            roles.append(s.role)
            clauses[s.role] += [(k, c) for c in rules.parse(s.rule, s.role)]
        key = tuple((role, tuple((names[k], c.text()) for k, c in clauses[role])) for role in ROLES)
        return cls(names, bodies, roles, clauses, key)


class Requests:
    """One batch of requests (users): their histories and features, with per-batch caches."""

    def __init__(self, data: Split, signals: Signals, feats: np.ndarray, users: np.ndarray, sponsored_order,
                 learned=None):
        self.data, self.signals, self.users, self.learned = data, signals, users, learned
        self.features = feats[users]
        self.now = data.now[users]
        self.sponsored_order = sponsored_order
        self._history: sp.csr_matrix | None = None
        self._recent: dict[int, sp.csr_matrix] = {}
        self._baseline: dict[str, np.ndarray] = {}

    def history(self, rows) -> sp.csr_matrix:
        if self._history is None:
            self._history = self.data.history_matrix(self.users)
        return self._history[rows]

    def recent(self, rows, n: int) -> sp.csr_matrix:
        if n not in self._recent:
            self._recent[n] = self.data.recent(self.users, n)
        return self._recent[n][rows]

    def baseline(self, name: str) -> np.ndarray:
        """[B, I] scores of a tuned baseline for the whole batch (its recall and rank share them), ties to the
        more popular item as in baselines.py, so that its recall + rank recommend the baseline's own list."""
        if name not in self._baseline:
            self._baseline[name] = self.signals.tuned.score(name, self.data, self.users) + 1e-9 * self.signals.popularity
        return self._baseline[name]

    def genre_share(self, rows, n: int) -> np.ndarray:
        onehot = sp.csr_matrix((np.ones(self.data.n_items), (np.arange(self.data.n_items), self.data.item_genre)),
                               shape=(self.data.n_items, self.data.n_genres))
        counts = (self.recent(rows, n) > 0).astype(np.float64) @ onehot
        counts = np.asarray(counts.todense())
        return counts / np.maximum(counts.sum(1, keepdims=True), 1.0)


@dataclass
class Outcome:
    """A batch's results: lists, what ran, the checks and the metrics (all [B, ...])."""

    final: np.ndarray  # [B, k] the recommendation
    ranked: np.ndarray  # [B, C] the whole list after rerank (final is its head)
    candidates: np.ndarray  # [B, C] the recall's candidates, best first
    used: np.ndarray  # [B, K] which skills ran
    status: np.ndarray  # [B, 3] per role, an index into skills.workflow.STATUSES
    ndcg: np.ndarray  # [B] NDCG@k
    reward: np.ndarray  # [B] NDCG@reward_k of the reranked list
    recall50: np.ndarray  # [B] Recall@50 of the candidates

    @staticmethod
    def concat(parts: list["Outcome"]) -> "Outcome":
        return Outcome(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                         ("final", "ranked", "candidates", "used", "status", "ndcg", "reward", "recall50")))


class Pipeline:
    def __init__(self, data: Split, signals: Signals, cfg: PipelineConfig, reranker=None):
        """``reranker``: an LLM playing rerank (scenarios/recsys/llm_rerank.py); None: the rule clauses run."""
        self.data, self.signals, self.cfg, self.reranker = data, signals, cfg, reranker
        self.learned = None  # the run's learned recall source (learned_recall.py), where agents.objective trains one
        self.features = rules.features(data, cfg.fresh_days)
        spon = np.flatnonzero(data.sponsored)
        self.sponsored_order = spon[np.argsort(-signals.popularity[spon], kind="stable")]

    def requests(self, users: np.ndarray) -> Requests:
        return Requests(self.data, self.signals, self.features, users, self.sponsored_order, self.learned)

    def applicable(self, lib: Compiled, users: np.ndarray) -> np.ndarray:
        """[B, K] bool: a skill applies where any of its clauses' conditions holds."""
        out = np.zeros((users.size, len(lib.names)), dtype=bool)
        for role in ROLES:
            entries = lib.clauses[role]
            if entries:
                hold = rules.holds([c.condition for _, c in entries], role, self.features[users])
                for j, (k, _) in enumerate(entries):
                    out[:, k] |= hold[:, j]
        return out

    def sample_use(self, lib: Compiled, users: np.ndarray, p_use: float, rng: np.random.Generator) -> np.ndarray:
        """[B, K] stochastic application: each applicable skill runs with probability p_use."""
        draws = rng.random((users.size, max(len(lib.names), 1)))[:, : len(lib.names)]
        return self.applicable(lib, users) & (draws < p_use)

    def run(self, lib: Compiled, users: np.ndarray, used: np.ndarray | None = None,
            targets: np.ndarray | None = None) -> Outcome:
        """Run the workflow for ``users`` (their split targets unless ``targets`` is given)."""
        users = np.asarray(users, dtype=np.int64)
        used = self.applicable(lib, users) if used is None else used
        targets = self.data.targets[users] if targets is None else targets
        step = self.cfg.chunk
        return Outcome.concat([self._run(lib, users[i:i + step], used[i:i + step], targets[i:i + step])
                               for i in range(0, max(users.size, 1), step)])

    def _run(self, lib, users, used, targets) -> Outcome:
        req = self.requests(users)
        B, cfg = users.size, self.cfg
        status = np.full((B, 3), OK)

        hold = {role: rules.holds([c.condition for _, c in lib.clauses[role]], role, req.features) for role in ROLES}

        def rows_of(j, k, role):
            """Requests where skill k runs its j-th clause of ``role``: used, and the clause's condition holds."""
            return np.flatnonzero(used[:, k] & hold[role][:, j])

        # recall
        fused = np.zeros((B, self.data.n_items))
        for j, (k, c) in enumerate(lib.clauses["recall"]):
            rows = rows_of(j, k, "recall")
            if rows.size:
                fused[rows] += c.param("weight") * ops.CATALOGUE["recall"][c.operator].run(req, rows, dict(c.params))
        fused[req.history(slice(None)).nonzero()] = 0.0
        fused[~self.data.released(users)] = 0.0  # nothing from the future
        candidates = top_k(np.where(fused > 0, fused, -np.inf), cfg.candidates)
        valid = candidates >= 0
        found = (candidates[:, :, None] == targets[:, None, :]).any(1).any(1)
        status[:, 0] = np.where(~valid.any(1), EMPTY, np.where(found, OK, VIOLATED))

        # rank
        score = np.zeros(candidates.shape)
        ranked_any = np.zeros(B, dtype=bool)
        for j, (k, c) in enumerate(lib.clauses["rank"]):
            rows = rows_of(j, k, "rank")
            if rows.size:
                term = ops.CATALOGUE["rank"][c.operator].run(req, rows, candidates[rows], dict(c.params))
                score[rows] += c.param("weight") * _zscore(term, valid[rows])
                ranked_any[rows] = True
        score = np.where(ranked_any[:, None], score, -np.arange(candidates.shape[1])[None, :])
        order = np.argsort(np.where(valid, -score, np.inf), axis=1, kind="stable")
        ranked = np.take_along_axis(candidates, order, axis=1)
        status[:, 1] = np.where(~ranked_any, EMPTY, np.where((ranked[:, :cfg.k] >= 0).sum(1) < cfg.k, VIOLATED, OK))

        # rerank
        parsed = np.ones(B, dtype=bool)
        if self.reranker is None:
            for j, (k, c) in enumerate(lib.clauses["rerank"]):
                rows = rows_of(j, k, "rerank")
                if rows.size:
                    ranked[rows] = ops.CATALOGUE["rerank"][c.operator].run(req, rows, ranked[rows], dict(c.params))
        elif B:
            mine = [k for k, role in enumerate(lib.roles) if role == "rerank"]
            skills = ["\n".join(lib.bodies[k].strip() for k in mine if used[b, k]) for b in range(B)]
            ranked, parsed = self.reranker.rerank(req, ranked, skills)
        final = ranked[:, : cfg.k]
        genres = np.where(final >= 0, self.data.item_genre[np.maximum(final, 0)], -1)
        distinct = np.array([np.unique(g[g >= 0]).size for g in genres]) if B else np.zeros(0, int)
        narrow = (distinct < cfg.diversity_floor) & (self.data.n_genres > 1)
        status[:, 2] = np.where(~parsed, INVALID, np.where(narrow, VIOLATED, OK))
        return Outcome(final, ranked, candidates, used, status, ndcg(final, targets, cfg.k),
                       ndcg(ranked, targets, cfg.reward_k or ranked.shape[1]), recall(candidates, targets, 50))

    def evaluate(self, lib: Compiled, users: np.ndarray) -> np.ndarray:
        """[B] NDCG@k of the library with every applicable skill used (what the gate compares)."""
        return self.run(lib, users).ndcg


def _zscore(term: np.ndarray, valid: np.ndarray) -> np.ndarray:
    n = np.maximum(valid.sum(1, keepdims=True), 1)
    t = np.where(valid, term, 0.0)
    mean = t.sum(1, keepdims=True) / n
    std = np.sqrt((np.where(valid, term - mean, 0.0) ** 2).sum(1, keepdims=True) / n)
    return np.where(valid, (term - mean) / np.maximum(std, 1e-9), 0.0)


def trace(outcome: Outcome, lib: Compiled, b: int, agents: dict[str, str]) -> Trace:
    """The rollout's execution DAG: recall -> rank -> rerank, each node with the skills its agent used."""
    t = Trace()
    prev = ()
    for r, role in enumerate(ROLES):
        skills = [lib.names[k] for k in np.flatnonzero(outcome.used[b]) if lib.roles[k] == role]
        step = t.invoke(role, STATUSES[outcome.status[b, r]], agent=agents[role], skills=skills, after=prev)
        prev = (step,)
    return t
