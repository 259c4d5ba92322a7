"""The rerank role played by an LLM (``recsys.rerank_backend = "hf"``): it reads its skills and the candidates.

Per request, one prompt (agents/backends, batched: every request of a batch
is one ``generate`` call): the frozen part says what the role does and how
to answer; the trainable part is the *bodies* of the rerank skills used in
this rollout (the natural-language side of each skill, :mod:`scenarios.recsys.rules`);
the observation lists the user's recent genres and the top ``depth``
candidates of the rank role, numbered. The model answers with candidate
numbers, best first.

Parsing is forgiving and never raises: the numbers 1..depth are read in
order (repeats and others skipped) and the rank order fills the rest of the
list. An answer without one usable number is ``invalid_output`` for the
trace (the rerank node fails, and its skills see the workflow penalty), and
the request keeps the rank order. Greedy decoding makes an answer a function
of its prompt, so answers are cached by prompt: the gate's second evaluation
of an unchanged list costs nothing.
"""

from __future__ import annotations

import re

import numpy as np

SYSTEM = ("You are the rerank agent of a movie recommendation team. You receive the rank agent's "
          "candidates for one user and return the best {k} of them, best first. Follow your skills. "
          "Answer only with candidate numbers separated by commas, for example: 3, 1, 2")
NUMBER = re.compile(r"\d+")


def parse(text: str, depth: int) -> list[int]:
    """Candidate numbers 1..depth in the order given, each once, as 0-based positions."""
    out = []
    for token in NUMBER.findall(text or ""):
        n = int(token)
        if 1 <= n <= depth and n - 1 not in out:
            out.append(n - 1)
    return out


class LLMRerank:
    """Reorders [B, R] rank lists by one batched LLM call; keeps the raw answers of the last call."""

    def __init__(self, backend, k: int = 10, depth: int = 15, max_tokens: int = 48):
        self.backend, self.k, self.depth, self.max_tokens = backend, k, depth, max_tokens
        self.cache: dict[tuple[str, str], str] = {}
        self.last_texts: list[str] = []

    def prompts(self, req, ranked: np.ndarray, skills: list[str]):
        from agents.backends import Prompt

        data = req.data
        recent = req.recent(slice(None), 5)
        out = []
        for b in range(ranked.shape[0]):
            genres = [data.genre_names[g] for g in data.item_genre[recent[b].indices[np.argsort(-recent[b].data)]]]
            lines = [f"The user's last items (newest first) are in the genres: {', '.join(genres) or 'none'}.",
                     "Candidates:"]
            for i, item in enumerate(ranked[b, : self.depth]):
                if item < 0:
                    break
                age = max(req.now[b] - data.item_release[item], 0.0)
                tag = ", sponsored" if data.sponsored[item] else ""
                lines.append(f"{i + 1}. {data.genre_names[data.item_genre[item]]}, released {age:.0f} days ago{tag}")
            lines.append(f"Return the best {self.k} candidate numbers, best first.")
            out.append(Prompt(system=SYSTEM.format(k=self.k), skills=skills[b], user="\n".join(lines),
                              max_tokens=self.max_tokens, stop=("\n\n",)))
        return out

    def rerank(self, req, ranked: np.ndarray, skills: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(reordered [B, R], valid [B]): the model's order first, then the rank order of the rest."""
        prompts = self.prompts(req, ranked, skills)
        keys = [(p.skills, p.user) for p in prompts]
        todo = list(dict.fromkeys(k for k in keys if k not in self.cache))
        if todo:
            first = {k: p for k, p in zip(keys, prompts)}
            for key, done in zip(todo, self.backend.generate([first[k] for k in todo])):
                self.cache[key] = done.text
        self.last_texts = [self.cache[k] for k in keys]
        out = ranked.copy()
        valid = np.zeros(ranked.shape[0], dtype=bool)
        for b, text in enumerate(self.last_texts):
            n = int((ranked[b, : self.depth] >= 0).sum())
            order = [i for i in parse(text, self.depth) if i < n]
            valid[b] = bool(order)
            rest = [i for i in range(ranked.shape[1]) if i not in order]
            out[b] = ranked[b, order + rest]
        return out, valid


_BACKENDS: dict[tuple, object] = {}


def backend(cfg) -> object:
    """One loaded model per process and backend config (loading costs seconds; runs in a sweep share it)."""
    from agents.backends.factory import make_backend

    key = tuple(sorted(vars(cfg).items())) if hasattr(cfg, "__dict__") else (cfg,)
    if key not in _BACKENDS:
        _BACKENDS[key] = make_backend(cfg)
    return _BACKENDS[key]
