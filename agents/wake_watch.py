"""Roles that never wake: a training round in which a role has live agents, a state it may act on, and none of its
agents woke on any state.

An LLM agent bids only where its yes/no wake-up question (its role's ``wake`` text, read after the state's stage
summary, with its yes/no wake-up examples) scores above its threshold. A role whose agents answer "no" everywhere
never acts: the world's chain stalls at its step, and every episode fails without one error saying why. Such a
round is counted per role (the summary's ``roles_never_woke``: role -> rounds) and its first one is said on stderr,
once per role and run, so a new world's wake-up text is fixed before its numbers are read (the LLM-world tutorial
explains the question and its examples). The counts are checkpointed with the policy, so a resumed run reports the
whole run's and does not warn twice. A round in which the role had no state it may act on (desk's questions of
one kind may all miss a round) is not counted: its agents had nothing to wake for.
"""

from __future__ import annotations

import sys

import numpy as np


class WakeWatch:
    """Mixed into LLMPolicy: reads ``roles``, ``role``, ``counts``, ``_evaluating`` and ``only``."""

    _woke: np.ndarray | None = None  # [N] rows that woke somewhere in this training round
    _legal: set | None = None  # role indices that may act on some state of this training round

    def _may_act(self, role: int) -> None:
        """A training step had a state on which role ``role`` may act (``task.illegal`` did not rule out all of them)."""
        if not (self._evaluating or self.only is not None):
            self._legal = (self._legal or set()) | {role}

    def _saw_wake(self, wake: np.ndarray) -> None:
        """A training step's wake-up matrix [B, N] (frozen and solo runs are not the market's own rounds)."""
        if self._evaluating or self.only is not None:
            return
        woke = wake.any(axis=0)
        if self._woke is None or self._woke.size != woke.size:
            self._woke = np.zeros(woke.size, dtype=bool) if self._woke is None else np.resize(self._woke, woke.size)
        self._woke |= woke

    def _round_woke(self, model) -> None:
        """At the end of a training round: count each LLM role with live agents and a state it may act on, none of
        which woke, and warn the first time a role does so."""
        live = np.asarray(model.population.traders)[: self.role.size]
        woke = self._woke if self._woke is not None else np.zeros(self.role.size, dtype=bool)
        woke = np.resize(woke, self.role.size) if woke.size != self.role.size else woke
        legal, self._woke, self._legal = self._legal or set(), None, None
        for i, role in enumerate(self.roles):
            mine = live & (self.role[: live.size] == i)
            if role.tool or i not in legal or not mine.any() or (woke[: live.size] & mine).any():
                continue
            self.counts[f"never_woke:{role.name}"] += 1
            if self.counts[f"never_woke:{role.name}"] == 1:
                print(f"catallax: warning: role {role.name!r} never woke in the round ending at episode "
                      f"{model.episodes_done + model.cfg.batch} ({int(mine.sum())} live agents answered its wake-up "
                      f"question no on every state): check its wake text and yes/no wake-up examples",
                      file=sys.stderr)

    def wake_report(self) -> dict:
        """``roles_never_woke``: role -> rounds in which it had live agents and a state to act on and none woke (roles
        that did, only)."""
        silent = {k.split(":", 1)[1]: int(v) for k, v in sorted(self.counts.items()) if k.startswith("never_woke:")}
        return {"roles_never_woke": silent}
