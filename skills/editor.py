"""Diagnosis of blamed skills, and the edit each diagnosis asks for.

Group-relative credit (skills/credit.py) says *which* (agent, skill) to change;
a diagnosis says *why* and *how*: one of eight failure types, the step of the
trace it cites, and an edit action. Failure types (and their usual action):

* ``invalid_output``      the role's output did not parse                    -> revise
* ``empty_output``        the role produced nothing                           -> revise
* ``constraint_violated`` the output broke a rule of the task                 -> revise
* ``timeout``             the role ran out of its budget                       -> revise
* ``upstream_failure``    it failed on bad input from an earlier role's skill  -> revise that skill
* ``missing_skill``       no skill of the role covered the step                -> add (a skill for the role)
* ``harmful_skill``       every step ran, yet rollouts using it score lower     -> prune (revise if mild)
* ``redundant_skill``     always used with another skill of the agent           -> merge

Two diagnosers share one interface, ``diagnose(cases) -> [Diagnosis | None]``:
:class:`RuleDiagnoser` reads the per-role checks recorded in the trace (for
rule-backend workflows); :class:`LLMDiagnoser` asks a language model, passed in
as ``generate(prompts) -> texts`` (one batched call), for a JSON verdict; an
output that does not parse or names an unknown type, action or step is
recorded in ``malformed`` and skipped (None), never a crash. Given ``choose``
(constrained decoding: a backend's ``choose(prompts, options) -> [index]``), the
verdict is instead picked from the closed set of well-formed verdicts for the
case (:func:`verdicts`), so it parses by construction; SmolLM2-135M's free
verdicts parse far less often (docs/results/skill_evolution.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Callable, Protocol

import numpy as np
from pydantic import Field
from pydantic.dataclasses import dataclass as config_dataclass

from skills.credit import Batch, GroupCredit
from skills.library import Edit, Skill, SkillLibrary
from skills.workflow import Trace
from market.strict import STRICT

FAILURE_TYPES = {
    "invalid_output": ("the role's output did not parse into the expected form", "revise"),
    "empty_output": ("the role produced no output", "revise"),
    "constraint_violated": ("the output parsed but broke a rule of the task", "revise"),
    "timeout": ("the role ran out of its step or time budget", "revise"),
    "upstream_failure": ("the role failed on bad input from an earlier role; edit that role's skill", "revise"),
    "missing_skill": ("no skill of the role covered this step; add one for the role", "add"),
    "harmful_skill": ("every step ran, yet rollouts using the skill score lower than those without", "prune"),
    "redundant_skill": ("the skill is always used together with another skill of the agent", "merge"),
}
ACTIONS = ("revise", "add", "prune", "merge")

PROMPT = """\
You diagnose one skill of a multi-agent team workflow. Group-relative credit blamed it: in rollouts of \
the same question, agent {agent} scored lower when it used this skill than when it did not.

Skill {label} (role {role}; credit {credit:+.3f} over {support} questions)
Description: {description}
Instruction:
{body}{rule}
Other skills the agent used with it (share of its rollouts): {co_used}

The worst rollout that used it, one line per step:
{trace}

Failure types:
{types}

Reply with one JSON object and nothing else:
{{"failure": "<a failure type>", "step": <the step you cite, or null>, "action": "revise|add|prune|merge", \
"target": "<the skill to edit, or the role for add>", "partner": "<merge only: the other skill>", \
"rationale": "<one sentence>"}}
"""


SHORT_SYSTEM = ("You review a team's workflow. Failure types: " + ", ".join(FAILURE_TYPES) + ". Actions: "
                + ", ".join(ACTIONS) + ". Reply with one JSON object on one line.")
SHORT_OUTPUT = 20
"""Characters of each step's output the short form shows (a small model copies long outputs into its verdict)."""


@config_dataclass(config=STRICT)
class DiagnosisConfig:
    min_support: int = Field(2, ge=1)
    """Blame a skill only with contrast on at least this many distinct questions."""
    max_cases: int = Field(8, ge=1)
    """Diagnose at most this many skills per round, most negative credit first."""
    prune_below: float = -0.3
    """harmful_skill: prune at credit <= this, else revise (the threshold MASkills prunes at)."""
    redundant_at: float = Field(0.95, ge=0, le=1)
    """redundant_skill: another skill of the agent is used in at least this share of its rollouts."""


@dataclass(frozen=True)
class Diagnosis:
    agent: str
    skill: str  # the blamed skill
    failure: str  # a key of FAILURE_TYPES
    step: int | None  # the trace step it cites
    action: str  # revise | add | prune | merge
    target: str  # the skill the edit changes (add: the role that gets a new skill)
    partner: str | None = None  # merge: the skill merged into the target
    rationale: str = ""


@dataclass
class Case:
    """The evidence about one blamed (agent, skill)."""

    agent: str
    skill: Skill
    credit: float
    support: int
    trace: Trace  # the lowest-advantage rollout that used the skill
    co_used: dict[str, float]  # the agent's other skills -> share of this skill's rollouts that used them too


@dataclass
class Malformed:
    skill: str
    output: str
    error: str


class Diagnoser(Protocol):
    def diagnose(self, cases: list[Case]) -> list[Diagnosis | None]: ...


def cases(batch: Batch, credit: GroupCredit, library: SkillLibrary, cfg: DiagnosisConfig) -> list[Case]:
    """The (agent, skill) columns with negative credit and enough support, worst first (needs ``batch.traces``)."""
    if not batch.traces:
        raise ValueError("cases need the rollouts' traces: build the batch with skills.credit.batch")
    order = [k for k in np.argsort(credit.credit, kind="stable")
             if credit.credit[k] < 0 and credit.support[k] >= cfg.min_support][: cfg.max_cases]
    return [case_of(batch, credit, library, k) for k in order]


def case_of(batch: Batch, credit: GroupCredit, library: SkillLibrary, k: int) -> Case:
    """The evidence about column k: its credit and support, its lowest-advantage rollout, its co-usage."""
    agent, name = batch.keys[k]
    used = batch.usage[:, :, k] > 0  # [Q, G]
    q, g = np.unravel_index(np.argmin(np.where(used, credit.advantage, np.inf)), used.shape)
    co_used = {s: float((used & (batch.usage[:, :, j] > 0)).sum() / used.sum())
               for j, (a, s) in enumerate(batch.keys) if a == agent and j != k}
    return Case(agent, library.get(name), float(credit.credit[k]), int(credit.support[k]), batch.traces[q][g], co_used)


def to_edit(diagnosis: Diagnosis, **content) -> Edit:
    """The library edit a diagnosis asks for, with the new text (``description``, ``body``, ``rule``; an add
    also needs ``name``) written by the caller: an LLM's rewrite, a mutated rule."""
    if diagnosis.action == "add":
        return Edit("add", content.pop("name"), role=diagnosis.target, diagnosis=asdict(diagnosis), **content)
    return Edit(diagnosis.action, diagnosis.target, partner=diagnosis.partner, diagnosis=asdict(diagnosis), **content)


class RuleDiagnoser:
    """Reads the trace's per-role checks: failed steps first, then credit and co-usage."""

    def __init__(self, cfg: DiagnosisConfig | None = None):
        self.cfg = cfg or DiagnosisConfig()

    def diagnose(self, cases: list[Case]) -> list[Diagnosis | None]:
        return [self.diagnose_one(c) for c in cases]

    def diagnose_one(self, case: Case) -> Diagnosis:
        t, name = case.trace, case.skill.name

        def verdict(failure, step, action, target, partner=None):
            return Diagnosis(case.agent, name, failure, step, action, target, partner, FAILURE_TYPES[failure][0])

        nodes = t.graph.nodes
        mine = [n for n in nodes
                if name in nodes[n]["skills"] and (nodes[n]["agent"] or nodes[n]["role"]) == case.agent]
        failed = [n for n in mine if nodes[n]["status"] != "ok"]
        if failed:
            upstream = t.failed_upstream(failed[0])
            if upstream and nodes[upstream[0]]["skills"]:
                return verdict("upstream_failure", upstream[0], "revise", nodes[upstream[0]]["skills"][0])
            if upstream:
                return verdict("missing_skill", upstream[0], "add", nodes[upstream[0]]["role"])
            return verdict(nodes[failed[0]]["status"], failed[0], "revise", name)
        bare = [n for n in t.failed() if not nodes[n]["skills"] and nodes[n]["role"] == case.skill.role]
        if bare:
            return verdict("missing_skill", bare[0], "add", nodes[bare[0]]["role"])
        first = mine[0] if mine else None
        if case.credit <= self.cfg.prune_below:
            return verdict("harmful_skill", first, "prune", name)
        partner = max(case.co_used, key=case.co_used.get, default=None)
        if partner is not None and case.co_used[partner] >= self.cfg.redundant_at:
            return verdict("redundant_skill", first, "merge", name, partner)
        return verdict("harmful_skill", first, "revise", name)


def first_json_object(text: str) -> dict:
    """The first JSON object anywhere in ``text`` (code fences, chatter around it, trailing text)."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    raise ValueError("no JSON object in the output")


def read_diagnosis(obj: dict, case: Case) -> Diagnosis:
    """Check a model's JSON verdict against the case; ValueError names what is wrong."""
    failure = re.sub(r"[\s-]+", "_", str(obj.get("failure", "")).strip().lower())
    if failure not in FAILURE_TYPES:
        raise ValueError(f"failure {obj.get('failure')!r} is not one of {', '.join(FAILURE_TYPES)}")
    action = str(obj.get("action") or FAILURE_TYPES[failure][1]).strip().lower()
    if action not in ACTIONS:
        raise ValueError(f"action {obj.get('action')!r} is not one of {', '.join(ACTIONS)}")
    step = obj.get("step")
    if step is not None:
        if isinstance(step, bool) or not str(step).strip().isdigit() or int(step) not in case.trace.graph:
            raise ValueError(f"step {step!r} is not a step of the trace")
        step = int(step)
    target = obj.get("target") or (case.skill.role if action == "add" else case.skill.name)
    partner = obj.get("partner") if action == "merge" else None
    if action == "merge" and (not isinstance(partner, str) or partner in ("", target)):
        raise ValueError(f"merge needs a partner skill other than the target, got {partner!r}")
    if not isinstance(target, str):
        raise ValueError(f"target {target!r} is not a name")
    return Diagnosis(case.agent, case.skill.name, failure, step, action, target, partner,
                     str(obj.get("rationale", "")))


def verdicts(case: Case) -> list[str]:
    """Every well-formed verdict for ``case``, as the JSON text the short form shows: each failure type with its
    usual action (harmful_skill also with revise), each step of the trace or none; the target is the blamed
    skill (add: its role; upstream_failure: the first skill of the cited step; merge: with the skill most used
    beside it as the partner). The closed set constrained decoding picks from."""
    nodes, name = case.trace.graph.nodes, case.skill.name
    partner = max(case.co_used, key=case.co_used.get, default=None)
    out = []
    for failure, (_, usual) in FAILURE_TYPES.items():
        for action in (usual, "revise") if failure == "harmful_skill" else (usual,):
            if action == "merge" and partner is None:
                continue
            for step in (None, *sorted(nodes)):
                target = case.skill.role if action == "add" else name
                if failure == "upstream_failure":
                    if step is None or not nodes[step]["skills"] or nodes[step]["skills"][0] == name:
                        continue
                    target = nodes[step]["skills"][0].partition("@")[0]
                if action == "add" and not target:
                    continue
                verdict = {"failure": failure, "step": step, "action": action, "target": target}
                if action == "merge":
                    verdict["partner"] = partner
                out.append(json.dumps(verdict))
    return out


@dataclass
class LLMDiagnoser:
    """Asks ``generate(prompts) -> texts`` (any batched LM call) for one JSON verdict per case."""

    generate: Callable[[list[str]], list[str]]
    malformed: list[Malformed] = field(default_factory=list)
    check: Callable[[Diagnosis], str] | None = None
    """What one case cannot tell: e.g. whether the target names a skill of the library ("" if fine,
    else why not: the verdict is then malformed)."""
    short: bool = False
    """Ask in the short form (SHORT_SYSTEM and worked verdicts as the ``generate`` caller's system and
    demonstration turns: the world's own, agents/llm/prompts.py; :meth:`short_prompt` per case) instead of PROMPT."""
    choose: Callable[[list[str], list[list[str]]], list[int]] | None = None
    """Constrained decoding: ``choose(prompts, options) -> [index]`` (a backend's: log-likelihood of each option on
    hf, guided choice on vllm, a JSON schema on openai; -1: none) picks each verdict from :func:`verdicts`. None:
    free generation through ``generate``, parsed."""

    def short_prompt(self, case: Case) -> str:
        t = case.trace
        steps = " ".join(f"Step {n}: {d['role']} -> {d['status']} {(d['output'] or '').strip()[:SHORT_OUTPUT]!r}."
                         for n, d in t.graph.nodes(data=True))
        correct = f" (correct: {t.reference})" if t.reference else ""
        return f"Blamed {case.skill.name}{correct}. {steps}"

    def prompt(self, case: Case) -> str:
        if self.short:
            return self.short_prompt(case)
        s = case.skill
        co_used = ", ".join(f"{k} {v:.0%}" for k, v in sorted(case.co_used.items())) or "none"
        types = "\n".join(f"- {k}: {meaning} (usually {action})" for k, (meaning, action) in FAILURE_TYPES.items())
        return PROMPT.format(agent=case.agent, label=s.label, role=s.role, credit=case.credit, support=case.support,
                             description=s.description, body=s.body,
                             rule=f"\nRule: {s.rule}" if s.rule else "", co_used=co_used,
                             trace=case.trace.describe(), types=types)

    def diagnose(self, cases: list[Case]) -> list[Diagnosis | None]:
        if self.choose is not None and cases:
            options = [verdicts(c) for c in cases]
            picks = self.choose([self.prompt(c) for c in cases], options)
            outputs = [opts[i] if 0 <= i < len(opts) else "" for opts, i in zip(options, picks)]
        else:
            outputs = self.generate([self.prompt(c) for c in cases]) if cases else []
        if len(outputs) != len(cases):
            raise ValueError(f"generate returned {len(outputs)} texts for {len(cases)} prompts")
        out = []
        for case, text in zip(cases, outputs):
            try:
                d = read_diagnosis(first_json_object(text), case)
                if self.check is not None and (problem := self.check(d)):
                    raise ValueError(problem)
                out.append(d)
            except ValueError as err:
                self.malformed.append(Malformed(case.skill.label, text, str(err)))
                out.append(None)
        return out
