"""The learning curve's schedule: held-out success before the first round, every ``run.eval_every`` rounds, after the last.

A point is the scenario's ``heldout_point(model)`` (agents/heldout.py for the LLM worlds: the frozen market, greedy,
on the fixed held-out problems, leaving the training run as it was), measured between rounds and written with the
round it follows (market/schema.py ``HeldoutEval``), so a resumed run reads the points before its checkpoint back
instead of playing them again and ends with the uninterrupted run's curve. The summary carries it as
``heldout_curve``: ``[round, episodes, success]`` per point, in order, and ``heldout_eval_seconds``, the time the
points took (a point whose state was measured already is reused, at no cost).
"""

from __future__ import annotations

from scenarios.registry import get_scenario


class Curve:
    def __init__(self, every: int | None, scenario: str, rounds: int, stored: list[dict]):
        self.every, self.rounds = every, rounds
        self.measure = get_scenario(scenario).heldout_point if every else None
        self.points = list(stored)

    def due(self, done: int) -> bool:
        """Whether a point is measured once ``done`` rounds are done (0: before the first)."""
        if self.measure is None or any(p["round"] == done for p in self.points):
            return False
        return done == 0 or done == self.rounds or done % self.every == 0

    def after(self, model, done: int) -> list[dict]:
        """The point measured once ``done`` rounds are done, as rows to write with that round (none if not due)."""
        if not self.due(done):
            return []
        point = self.measure(model)
        row = {"episode": int(model.episodes_done), "round": done, "success": float(point["success"]),
               "reward": float(point["reward"]), "problems": int(point["problems"]),
               "seconds": float(point["seconds"]), "fingerprint": str(point["fingerprint"])}
        self.points.append(row)
        return [row]

    def summary(self) -> dict:
        """``heldout_curve`` ([round, episodes, success] per point) and ``heldout_eval_seconds``; nothing without
        ``run.eval_every``."""
        if self.measure is None:
            return {}
        return {"heldout_curve": [[p["round"], p["episode"], p["success"]] for p in self.points],
                "heldout_eval_seconds": round(sum(p["seconds"] for p in self.points), 2)}
