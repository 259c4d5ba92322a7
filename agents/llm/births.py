"""Births of LLM agents: the child's skills rewritten by the same LLM.

Exploit (``inherit``) asks the model for one more general skill for a rich agent; explore
(``revise``) shows a failed agent's task, its output and the correct output, and asks for a worked
example. The asks and their worked demonstrations are the world's (agents/llm/prompts.py: ``prompts`` of
the text task, or the generic defaults), each role shown its own format. :meth:`Births.write_lines` is the one
place a rewrite is asked and read, for births and for skill edits (agents/llm/edit_pass.py). A malformed rewrite
(or one that copies the framework's own words) is recorded and discarded (the child keeps its parent's skills). Every accepted rewrite is a new version (skill set) with its parent
version; a line not yet in the role's library is a new skill, an ``add`` edit whose diagnosis names
the birth (exploit or explore), the parent agent, its version and skills, and the raw rewrite.
"""

from __future__ import annotations

import numpy as np

from agents.backends.base import skill


class Births:
    """Mixed into LLMPolicy: reads ``prompts``, ``roles``, ``task``, ``recent``, the rows' arrays and the catalogue."""

    def _copy(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        self.role[rows] = self.role[parents]
        self.theta[rows] = self.theta[parents] + rng.normal(0.0, self.cfg.theta_sigma, size=rows.size)
        for row, parent in zip(rows.tolist(), parents.tolist()):
            self.skills[row] = self.skills[parent]
            self.version[row] = self.version[parent]

    def inherit(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        """Exploit: the child of a rich agent is its copy plus one general skill written by the LLM."""
        self._copy(rows, parents, rng)
        asks = []
        for row in rows.tolist():
            role = self.roles[self.role[row]]
            if not role.tool:
                fields = {"role": role.frozen, "skills": " | ".join(self.lines(row)) or "(none)"}
                asks.append((row, role.name, "exploit", fields))
        self._rewrite(asks, dict(zip(rows.tolist(), parents.tolist())), "exploit: add a general skill", rng)

    def revise(self, rows: np.ndarray, parents: np.ndarray, obs: np.ndarray, found: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
        """Explore: the child of a failed agent gets a worked example written by the LLM from the
        parent's failure (its task, what it wrote, the correct output). Every row is made here (-> all True)."""
        self._copy(rows, parents, rng)
        asks = []
        for row, parent, seen, ok in zip(rows.tolist(), parents.tolist(), obs, found):
            role = self.roles[self.role[row]]
            if role.tool or not ok:
                continue
            given, correct = self.task.lesson(seen, role.name)
            last_obs, raw = self.recent.get(parent, ((), ""))
            wrote = raw if last_obs == tuple(np.asarray(seen).tolist()) else "(nothing)"
            asks.append((row, role.name, "explore", {"given": given, "wrote": wrote.strip() or "(empty)",
                                                     "correct": correct}))
        self._rewrite(asks, dict(zip(rows.tolist(), parents.tolist())), "explore: revise from a failure", rng)
        return np.ones(rows.size, dtype=bool)

    def write_lines(self, asks: list[tuple[int, str, str, dict]], seeds: list[int]) -> list[tuple[str | None, str, str]]:
        """Rewrites in one batched generation: ``asks`` are (the row that pays, -1 for none; the role the line is
        for; ``explore`` or ``exploit``; the ask's fields), each shown its role's own demonstration
        (agents/llm/prompts.py ``Prompts.rewrite``). -> per ask (the line, or None; the raw text; why it was refused)."""
        prompts = [self.prompts.rewrite(kind, role, fields, max_tokens=self.cfg.rewrite_tokens,
                                        temperature=self.cfg.rewrite_temperature, seed=int(seed))
                   for (_, role, kind, fields), seed in zip(asks, seeds)]
        out = []
        for done in self.generate(prompts, [row for row, *_ in asks]):
            line = skill(done.text) if done.finish == "stop" or done.finish == "length" else None
            why = (done.error or "malformed") if line is None else "echo" if self.prompts.echoes(line) else ""
            out.append((None if why else line, done.text, why))
        return out

    def _rewrite(self, asks: list[tuple[int, str, str, dict]], parents: dict[int, int], edit: str,
                 rng: np.random.Generator) -> None:
        """The births' rewrites (``asks``: row, role, kind, fields; ``parents``: row -> its parent's row); a
        malformed one is recorded and discarded. A line new to the role is a new skill, its diagnosis the birth;
        the round's new skills are written when the births end."""
        seeds = rng.integers(2**31, size=len(asks))
        for (row, *_), (line, raw, why) in zip(asks, self.write_lines(asks, seeds.tolist())):
            if line is None or line in self.lines(row):
                self.counts["malformed_rewrites"] += 1
                self.records.append({"kind": "malformed_rewrite", "row": row, "edit": edit, "raw": raw,
                                     "reason": "duplicate" if line else why})
                continue
            self.counts["rewrites"] += 1
            birth = {"origin": edit.split(":")[0], "agent": self._agent(row), "parent_agent": self._agent(parents[row]),
                     "parent_version": int(self.version[row]), "version": len(self.versions),
                     "parent_skills": list(self.skills[row]), "raw": raw}
            name = self._name(self.roles[self.role[row]].name, line, birth)
            skills = (*self.skills[row], name)[-self.cfg.max_skills:]
            self.new_version(row, skills, int(self.version[row]), edit)
        self.catalogue.flush()  # births end a round: its new skills go to the library now
