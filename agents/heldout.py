"""Held-out evaluation of a running text-world market without changing the run: frozen episodes and the curve's points.

A learning curve measures the frozen market (its auctions, greedy completions, no payments) on the world's fixed
held-out problems between training rounds. Such a measurement must leave the training run as it was, else a run
with a curve trains apart from one without: :func:`frozen_episodes` restores what a frozen run changes of it (the
market's random stream, the policy's action counter that seeds its sampling, the rows' last actions, forfeit
memory). The skill gate's frozen runs (agents/llm/edit_pass.py) are played the same way.

:func:`heldout_point` caches by a :func:`fingerprint` of what the measurement reads (the policy's whole state:
weights, adapter, bids, skills and library; the population's rows and balances), so the same state is not played
twice: the run's final ``heldout_success`` reuses the curve's last point, and a point measured again after an
unchanged round costs nothing.
"""

from __future__ import annotations

import hashlib
import time

import numpy as np

from market.checkpoint import encode


def outcomes(batch) -> tuple[float, float]:
    """(success rate, mean reward) of a text batch's ended episodes (one still running scores 0)."""
    world = batch.board.world
    rewards = [float(world.reward(s)) if world.done(s) else 0.0 for s in batch.states]
    return float(np.mean(batch.solved)), float(np.mean(rewards))


def frozen_episodes(model, world, holdings=None, keep_answers: bool = False) -> list[dict]:
    """The frozen market's episodes on ``world``'s fixed problems (with ``holdings``: the rows' skills and lines
    set to them), restoring what they change of the training run.

    The greedy answers and wake-up scores they computed are dropped too: the frozen market pays no tokens, so a
    training round that found them cached would not be charged for them, and its ledger would differ from the
    run's without the measurement. ``keep_answers``: the skill gate's runs keep them (the gate's ledgers were
    always so; dropping them would change every gated run's)."""
    policy = model.policy.unwrapped
    skills, lines = holdings or (policy.skills, {})
    saved = (model.rng.bit_generator.state, policy.counts.copy(), dict(policy.recent),
             {k: set(v) for k, v in policy.bench.items()})
    answers = None if keep_answers else (policy.memo.copy(), dict(policy.scores))
    try:
        with policy.evaluating(), policy.holding(skills, lines):
            return model.run_episodes(world=world, batch=world.fixed.size, settle=False)
    finally:
        model.rng.bit_generator.state = saved[0]
        policy.counts, policy.recent, policy.bench = saved[1:]
        if answers is not None:
            policy.memo, policy.scores = answers


class FrozenMarket:
    """The skill gate's evaluator: the frozen market's success per fixed problem of a split (``validation``: the
    gate's; ``heldout``: an accepted edit's paired gain) with the rows holding a candidate library, each holdings
    played once per edit pass (:meth:`clear` ends the pass)."""

    def __init__(self):
        self.scores: dict = {}

    def score(self, model, holdings, split: str = "validation") -> np.ndarray:
        """[n] success on ``model.world``'s ``split`` problems with the rows holding ``holdings`` (skills, lines)."""
        key = (split, tuple(holdings[0]), tuple(sorted(holdings[1].items())))
        if key not in self.scores:
            self.scores[key] = self.success(model, getattr(model.world, split), holdings)
        return self.scores[key]

    @staticmethod
    def success(model, world, holdings=None) -> np.ndarray:
        """[n] success on ``world``'s fixed problems (the current rows' skills, or ``holdings``), not cached."""
        return np.array([e["success"] for e in frozen_episodes(model, world, holdings, keep_answers=True)], dtype=float)

    def clear(self) -> None:
        self.scores = {}


CACHES = ("memo", "scores", "counts", "recent", "bench", "spent", "spent_by")
"""The LLM policy's state that caches answers or counts what was spent: not what a frozen held-out run reads."""


def fingerprint(model) -> str:
    """A digest of everything a frozen held-out run reads: the population's rows (alive, balances) and the policy's
    state (its rows' roles, skills and versions, the skill catalogue, bid heads, a LoRA adapter and its update
    count), less the LLM policy's caches and counters (:data:`CACHES`)."""
    policy = model.policy.state_dict()
    inner = policy
    while isinstance(inner, dict) and isinstance(inner.get("inner"), dict):  # a learner's wrapper: agents/learners/policy.py
        inner = inner["inner"]
    for key in CACHES:
        inner.pop(key, None)
    state = {"population": model.population.state_dict(), "policy": policy}
    return hashlib.sha256(encode(state)).hexdigest()[:16]


def heldout_point(model) -> dict:
    """The frozen market's held-out success and mean reward now (``world.heldout``'s fixed problems), with the
    problems' count, the seconds it took (0 when the cached point of an equal fingerprint was reused) and the
    fingerprint."""
    policy, batch = model.policy.unwrapped, model.world.heldout
    key = fingerprint(model)
    memo = policy.heldout_memo
    if memo is not None and memo["fingerprint"] == key:
        return memo | {"seconds": 0.0}
    start = time.perf_counter()
    frozen_episodes(model, batch)
    success, reward = outcomes(batch)
    policy.heldout_memo = {"success": success, "reward": reward, "problems": int(batch.fixed.size),
                           "fingerprint": key, "seconds": 0.0}
    return policy.heldout_memo | {"seconds": round(time.perf_counter() - start, 3)}
