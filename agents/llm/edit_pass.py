"""Skill evolution for LLM agents: credit over their skill lines, a diagnosis, an LLM-written edit, the gate.

The loop recsys runs on rule clauses (scenarios/recsys/evolve.py), here on the lines LLM agents carry
(agents/llm/policy.py; each a skill of the run's library, skills/catalogue.py), set by ``[skills]`` (skills/config.py).

**Rollouts.** A training round runs B worlds, ``agents.group`` consecutive ones on one question (the world draws them:
market.protocols.World.group). In world b an acting agent's prompt carries each of its acting skill lines with
probability ``skills.p_use``, drawn once per round, world and row: the randomised contrast the credit reads (without it
the G rollouts of a question differ only by sampling and routing). Every action is a node of world b's trace
(skills/workflow.py): role, agent, the skills its prompt carried, status (``ok``; an invalid, empty, over-long or
illegal output is a failed node of its role: agents/llm/policy.py ``status_of``) and output, after the world's previous
step; the trace ends with the question's correct answer (``task.lesson``). A rollout's reward is the world's success,
less the workflow penalty ``skills.penalty``.

**An edit pass** every ``skills.every`` rounds, on the rollouts since the last accepted edit (at most ``skills.window``
rounds): one pass of the edit loop every library runs (skills/loop.py), to which this module gives its rollouts, its
evaluator (the frozen market) and its edit writer:

1. blame (skills/evolve.py): ``grse`` or ``presence`` credit over (agent, skill) -> the blamed skills, worst first ->
   the diagnoser (``skills.diagnoser``: ``rule`` reads the trace's statuses; ``llm`` asks the agents' own model, one
   batched greedy call through the policy's backend, for the JSON verdict of skills/editor.py, in its short form; a
   verdict that does not parse, or names a skill or role the library does not have, is written to the
   ``skill_diagnosis_failure`` table and the rule diagnoser answers instead, counted as a fallback). ``random``: random
   (agent, skill) columns the rollouts used, with revise 1/2, prune 1/4, add 1/4 (what the gate alone buys).
2. the edit's text, written by the model as births write theirs (agents/llm/births.py), with the world's prompts
   (agents/llm/prompts.py): ``revise`` rewrites the skill as a worked example from the cited step (what the role was given,
   what it wrote, the correct output); ``add`` asks for one more general line for the role, held by every agent of
   that role; ``prune`` takes the line from every agent; ``merge`` gives the partner's holders the target instead. A
   rewrite that does not parse is counted and the edit dropped.
3. the gate (skills/gate.py): the frozen market (its auctions, greedy completions, no payments) plays the scenario's
   fixed validation problems (``world.validation``) with the current skills and with the candidate, paired; a
   candidate passes only with the evidence ``skills.confidence`` asks for (or a prune within the one-standard-error
   rule where the problems can see ``skills.min_harm``). An accepted edit changes the rows (each a new skill-set
   version) and its held-out gain is measured beside its validation gain (``validation_gain_accepted``,
   ``heldout_gain_accepted``); a rejected one is written with status ``rejected`` and both scores. Edits are gated one
   at a time, after the size checks of skills/limits.py.

``heldout_accuracy_initial`` is the frozen market's held-out accuracy before the first edit pass, on the problems
``heldout_accuracy`` is measured on at the end. No frozen run changes the training run (agents/heldout.py).
"""

from __future__ import annotations

import collections
import time

import numpy as np

from agents.backends.base import NoPrivilegedPass, Prompt
from market.database import make_engine
from agents.heldout import FrozenMarket, frozen_episodes
from agents.llm.rollouts import Watched, decode, groups
from skills import Diagnosis, LLMDiagnoser, RuleDiagnoser, SkillLibrary, SkillsConfig, Trace, to_edit
from skills.catalogue import summary
from skills.loop import EditLoop, World
from skills.shapley import retrieve


class SkillEvolver:
    def __init__(self, policy, skills: SkillsConfig, group: int, seed: int = 0):
        self.policy, self.cfg, self.group = policy, skills, group
        self.rng = np.random.default_rng([seed, 0x5C111])
        self.rounds = 0
        self.mask: dict[tuple[int, int], np.ndarray] = {}  # (world, row) -> this round's draws of skills.p_use
        self.frozen = FrozenMarket()  # the gate's evaluator: an edit pass's scores, by holdings
        self.counts = collections.Counter()
        self.initial: float | None = None
        constrained = skills.constrained and hasattr(policy.backend, "choose")
        self.llm = LLMDiagnoser(self._diagnose, check=self._known, short=True,
                                choose=self._choose if constrained else None) if skills.diagnoser == "llm" else None
        self.rule = RuleDiagnoser(skills.diagnosis_config())
        self.model = None  # the model of the round being learned from: the gate plays its frozen market
        self.probing = False  # a probe (skills.evidence = "probe") is playing: its rollouts carry the p_use draws
        self.loop = EditLoop(SkillLibrary(make_engine("sqlite://"), "unattached"), skills, World(
            evaluate=lambda skills, q, s: self.frozen.score(self.model, self._holdings(skills, self.loop.library)),
            questions=np.zeros(0), seeds=np.zeros(0), write=self._write, draw=self._random,
            heldout=lambda skills: self.frozen.score(self.model, self._holdings(skills, self.loop.library), "heldout"),
            gated=self._gated, imitation=self._imitation), diagnoser=self.llm, fallback=self.rule if self.llm else None)

    @property
    def window(self) -> list[list[tuple]]:
        """Per round: (question, [Rollout] * G), since the last accepted edit (the loop's evidence)."""
        return self.loop.window

    # --- rollouts ----------------------------------------------------------------------------------
    def retrieved(self, read: str, carried: list[str]) -> list[str]:
        """The lines of ``carried`` the memory retrieves for a prompt that reads ``read`` (skills/shapley.py
        ``retrieve``: similarity plus the last pass's utility; all of them unless ``skills.shapley.retrieve``)."""
        cfg = self.cfg.shapley
        lines = {name: self.policy.catalogue.lines[name] for name in carried}
        return retrieve(read, lines, self.loop.utility, cfg.retrieve, cfg.weight)

    def contrasting(self, evaluating: bool) -> bool:
        """Whether the episodes being played are the credit's rollouts: their prompts carry the p_use draws and the
        policy records their steps. ``skills.evidence``: training rounds (not the frozen runs), or the probe only."""
        return self.probing if self.cfg.evidence == "probe" else not evaluating

    def applied(self, b: int, row: int, carried: list[str]) -> list[str]:
        """The skills row's prompt carries in world b of the credit's rollouts (each with probability p_use)."""
        if (b, row) not in self.mask:  # drawn when first asked: the same draws for the same run
            self.mask[b, row] = self.rng.random(self.policy.cfg.max_skills) < self.cfg.p_use
        return [name for name, keep in zip(carried, self.mask[b, row]) if keep]

    def rollouts(self, model) -> list[tuple]:
        """The training round's (question, G rollouts) groups, from the policy's step records and the market's trace."""
        trace = model.trace
        steps, self.policy.steps = self.policy.steps[-len(trace.path):], []
        return groups(self.policy, steps, trace.obs, trace.solved, model.population.ids, self.group)

    def probe(self, model) -> list[tuple]:
        """``skills.evidence = "probe"``: the frozen market plays ``skills.probe`` fresh questions of the training
        stream (drawn from the evolver's own stream), G rollouts each, every prompt carrying its p_use draws; their
        (question, G rollouts) groups. Nothing of the training run changes (agents/heldout.py)."""
        pids = np.repeat(self.rng.integers(2**31, size=self.cfg.probe), self.group)
        world = Watched(model.world.with_problems(pids))
        self.probing, self.mask, self.policy.steps = True, {}, []
        try:
            episodes = frozen_episodes(model, world, keep_answers=True)
        finally:
            self.probing, self.mask = False, {}
        steps, self.policy.steps = self.policy.steps, []
        solved = np.array([e["success"] for e in episodes], dtype=float)
        self.counts["probe_episodes"] += len(episodes)
        return groups(self.policy, steps, np.stack(world.seen), solved, model.population.ids, self.group)

    def evidence(self) -> list[tuple]:
        """The (question, rollouts) groups of the window's rounds, oldest first."""
        return self.loop.evidence()

    # --- the round's hook ------------------------------------------------------------------------
    def learn(self, model) -> None:
        if self.initial is None:
            self.initial = float(self.frozen.success(model, model.world.heldout).mean())
        self.mask = {}  # the next round draws afresh
        if self.cfg.evidence == "training":
            self.loop.observe(self.rollouts(model))
        self.rounds += 1
        if self.rounds % self.cfg.every:
            return
        start = time.perf_counter()
        if self.cfg.evidence == "probe":
            self.loop.observe(self.probe(model))
        self._pass(model)
        self.counts["edit_passes"] += 1
        self.counts["skill_pass_seconds"] += time.perf_counter() - start

    def _pass(self, model) -> None:
        """One pass of the edit loop (skills/loop.py) on the frozen market's validation problems."""
        self.model, self.loop.library = model, self._library()
        n = model.world.validation.fixed.size
        self.loop.world.questions, self.loop.world.seeds = np.arange(n), np.zeros(n)
        self.loop.run(self.rng)
        if self.llm is not None and self.llm.malformed:
            self.loop.library.record_failures(self.llm.malformed)
            self.counts["diagnoses_malformed"] += len(self.llm.malformed)
            self.llm.malformed = []
        self.frozen.clear()
        self.model = None

    def _gated(self, d: Diagnosis, result, candidate) -> None:
        """After a gated edit: an accepted one changes the rows (each a new skill-set version)."""
        library = self.loop.library
        if result.accepted:
            self._adopt(self._holdings(candidate, library), f"{d.action} {d.target} ({self.cfg.credit})")
        self.policy.catalogue.sync(library)

    def _library(self) -> SkillLibrary:
        catalogue = self.policy.catalogue
        if catalogue.library is None:  # a policy no run attached (tests, baselines): an in-memory library
            catalogue.attach(SkillLibrary(make_engine("sqlite://"), "unattached"))
        return catalogue.library

    def _diagnose(self, prompts: list[str]) -> list[str]:
        """The LLM diagnoser's ``generate``: one greedy batch on the agents' engine, charged to no agent."""
        with self.policy.evaluating():
            return [c.text for c in self.policy.generate(self._asks(prompts), [-1] * len(prompts))]

    def _choose(self, prompts: list[str], options: list[list[str]]) -> list[int]:
        """The LLM diagnoser's constrained decoding (``skills.constrained``): each verdict picked from its closed set."""
        with self.policy.evaluating():
            return self.policy.backend.choose(self._asks(prompts), options)

    def _asks(self, prompts: list[str]) -> list[Prompt]:
        return [self.policy.prompts.diagnosis(p) for p in prompts]  # the world's prompts (agents/llm/prompts.py)

    def _known(self, d: Diagnosis) -> str:
        """A verdict's target (and a merge's partner) must be a current skill, an add's a role with an LLM."""
        if d.action == "add":
            role = self.policy.role_index.get(d.target)
            return "" if role is not None and not self.policy.roles[role].tool else f"add: {d.target!r} is not a role"
        current = {s.name for s in self._library().current()}
        for name in (d.target, d.partner) if d.action == "merge" else (d.target,):
            if name not in current:
                return f"{d.action}: {name!r} is not a current skill"
        return ""

    def _imitation(self, steps: list[tuple[Trace, int]]) -> list[dict[str, float]]:
        """What each failed step's output imitates (skills/imitation.py ``Read``): per line its prompt carried, the
        failed output's log-probability less the correct output's with that line alone, less the same with no line;
        one privileged pass (``forced``) per engine. {} for a step whose output was right or whose state was not kept,
        and where the engine cannot teacher-force."""
        policy = self.policy
        asks, spans = [], []
        for trace, n in steps:
            node, index = trace.graph.nodes[n], policy.role_index.get(trace.graph.nodes[n]["role"])
            states = getattr(trace, "states", [])
            if index is None or policy.roles[index].tool or n >= len(states):
                spans.append(None)
                continue
            role = policy.roles[index]
            wrote, right = (node["output"] or "").strip(), policy.task.lesson(states[n], role.name)[1].strip()
            lines = {name: policy.catalogue.lines[name] for name in node["skills"] if name in policy.catalogue.lines}
            if not wrote or not right or wrote == right or not lines:
                spans.append(None)
                continue
            context = policy.task.context(states[n], role.name)
            spans.append((len(asks), list(lines), policy.engines.get(index, policy.backend)))
            for line in ("", *lines.values()):
                prompt = Prompt(role.frozen, line, context, max_tokens=role.max_tokens, stop=role.stop)
                asks.append((prompt, wrote, right))
        margins = np.full(len(asks), np.nan)
        for engine in {id(s[2]): s[2] for s in spans if s}.values():
            idx = [i for s in spans if s and s[2] is engine for i in range(s[0], s[0] + len(s[1]) + 1)]
            try:
                logp = engine.forced([asks[i][0] for i in idx for _ in (0, 1)], [t for i in idx for t in asks[i][1:]])
            except (NoPrivilegedPass, AttributeError):  # no read: the loop counts the blames left unread
                continue
            margins[idx] = [float(a.sum() - b.sum()) for a, b in zip(logp[::2], logp[1::2])]
        return [{} if s is None or np.isnan(margins[s[0]]) else
                {name: float(margins[s[0] + 1 + j] - margins[s[0]]) for j, name in enumerate(s[1])} for s in spans]

    def _random(self, rng, n: int) -> list[tuple[Diagnosis, Trace]]:
        """Random (agent, skill) columns the window's rollouts used: revise 1/2, prune 1/4, add 1/4."""
        library = self.loop.library
        current = {s.name for s in library.current()}
        window = self.evidence()
        used = sorted({(agent, skill) for _, rollouts in window for r in rollouts
                       for agent, skills in r.used().items() for skill in skills if skill in current})
        out = []
        for i in rng.permutation(len(used))[:n]:
            agent, skill = used[i]
            traces = [r.trace for _, rollouts in window for r in rollouts if skill in r.used().get(agent, ())]
            action = ("revise", "revise", "prune", "add")[int(rng.integers(4))]
            role = library.get(skill).role
            out.append((Diagnosis(agent, skill, "random", None, action, role if action == "add" else skill, None,
                                  "a random edit (baseline)"), traces[int(rng.integers(len(traces)))]))
        return out

    # --- the edit's text ---------------------------------------------------------------------------
    def _write(self, d: Diagnosis, trace: Trace, rng=None):
        """The library edit of a diagnosis, its new line written by the model (None: nothing to write)."""
        policy, current = self.policy, {s.name: s for s in self.loop.library.current()}
        if d.action == "prune":
            return to_edit(d) if d.target in current else None
        if d.action == "merge":
            ok = d.target in current and d.partner in current
            return to_edit(d, body=current[d.target].body) if ok else None  # the line stays one line
        if d.action == "add":
            if d.target not in policy.role_index or policy.roles[policy.role_index[d.target]].tool:
                return None
            line = self._rewrite(d.target, "exploit", {
                "role": policy.roles[policy.role_index[d.target]].frozen,
                "skills": " | ".join(s.body for s in current.values() if s.role == d.target
                                     and policy.line_kind(s.body) != "wake") or "(none)"})
            if line is None:
                return None
            name = policy.catalogue.reserve(d.target, policy.line_kind(line))
            return to_edit(d, name=name, description=summary(line), body=line)
        if d.target not in current:
            return None
        skill = current[d.target]
        nodes = trace.graph.nodes
        cited = [n for n in nodes if d.target in nodes[n]["skills"]] or ([d.step] if d.step is not None else [])
        if not cited:
            return None
        n = cited[0]
        given, correct = policy.task.lesson(trace.states[n], skill.role)
        wrote = (nodes[n]["output"] or "").strip() or "(empty)"
        line = self._rewrite(skill.role, "explore", {"given": given, "wrote": wrote, "correct": correct})
        if line is None or line == skill.body:
            return None
        return to_edit(d, description=summary(line), body=line)

    def _rewrite(self, role: str, kind: str, fields: dict) -> str | None:
        """An edit's new line for ``role``, written as births write theirs (agents/llm/births.py ``write_lines``:
        the role's own format), unpaid (no agent asked for it)."""
        with self.policy.evaluating():
            line, _, _ = self.policy.write_lines([(-1, role, kind, fields)], [int(self.rng.integers(2**31))])[0]
        if line is None:
            self.counts["skill_rewrites_malformed"] += 1
        return line

    # --- the gate --------------------------------------------------------------------------------
    def _holdings(self, skills, library) -> tuple[list[tuple[str, ...]], dict[str, str]]:
        """What each row would hold under the library ``skills`` (current or a candidate): a name no longer
        current is dropped, or replaced by the skill it was merged into; a new skill (a planned add) goes to
        every agent of its role. -> (skills per row, text of every name)."""
        policy = self.policy
        by_id = {v.id: v.name for v in library.versions()}
        current = {s.name: s for s in skills}
        merged = {by_id[s.merge_parent_id]: s.name for s in skills if s.merge_parent_id in by_id}
        added = [s for s in skills if s.id is not None and s.id < 0 and s.parent_id is None]
        held = []
        for row, names in enumerate(policy.skills):
            if policy.role[row] < 0 or policy.roles[policy.role[row]].tool:
                held.append(names)
                continue
            role = policy.roles[policy.role[row]].name
            out = list(dict.fromkeys(n for n in (merged.get(n, n) for n in names) if n in current))
            out += [s.name for s in added if s.role == role and s.name not in out]
            held.append(tuple(out[-policy.cfg.max_skills:]))
        return held, {s.name: s.body for s in skills}

    def _adopt(self, held, edit: str) -> None:
        """An accepted edit: rows whose skills change get a new skill-set version."""
        policy = self.policy
        for row, names in enumerate(held[0]):
            if names != policy.skills[row] and policy.role[row] >= 0:
                policy.new_version(row, names, int(policy.version[row]), f"skills: {edit}")

    # --- the summary and checkpoints --------------------------------------------------------------
    def report(self) -> dict:
        loop = self.loop.report()
        out = {f"skill_{k}": loop.get(k, 0) for k in ("edits_proposed", "edits_accepted", "edits_rejected")}
        out |= {k: int(self.counts[k]) for k in ("edit_passes", "skill_rewrites_malformed", "probe_episodes")}
        out |= {k: v for k, v in loop.items() if k.startswith(("edits_refused", "blame_"))
                or k.endswith(("gain_accepted", "worse_accepted"))}
        out |= {f"births_{k}": int(v) for k, v in sorted(self.policy.catalogue.checks.items())}
        if self.cfg.credit != "random":
            by, fallback = loop.get("diagnoses_by_diagnoser", 0), loop.get("diagnoses_by_fallback", 0)
            if self.llm:
                out |= {"diagnoses_llm": by, "diagnoses_fallback": fallback,
                        "diagnoses_malformed": int(self.counts["diagnoses_malformed"])}
            else:
                out["diagnoses_rule"] = by
        out["skill_pass_seconds"] = round(float(self.counts["skill_pass_seconds"]), 2)
        return out | ({"heldout_accuracy_initial": self.initial} if self.initial is not None else {})

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "rounds": self.rounds, "counts": dict(self.counts),
                "initial": self.initial,
                "loop": self.loop.state_dict(lambda r: (r.reward, r.trace.state_dict(), [s.tolist() for s in r.trace.states]))}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.rounds, self.counts, self.initial = state["rounds"], collections.Counter(state["counts"]), state["initial"]
        self.loop.load_state_dict(state.get("loop") or {"window": state["window"]}, decode)  # or a pre-loop checkpoint
        self.mask = {}
