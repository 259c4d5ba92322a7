"""Skills: versioned library, SKILL.md format, lineage, group-relative credit, workflow penalties,
diagnosis and edits, validation gate (docs: concepts/skills.md). Imports ``market`` only; an LLM is passed in."""

from skills.config import SkillsConfig
from skills.credit import Batch, CreditConfig, GroupCredit, Rollout, batch, group_relative_credit, presence_credit
from skills.editor import (ACTIONS, FAILURE_TYPES, Case, Diagnoser, Diagnosis, DiagnosisConfig, LLMDiagnoser,
                           RuleDiagnoser, cases, to_edit)
from skills.gate import GateConfig, GateResult, compare, validate
from skills.library import Edit, Skill, SkillEdit, SkillError, SkillLibrary
from skills.lineage import agent_graph, ancestors, descendants, edit_path, skill_graph
from skills.skillmd import export_library, import_library
from skills.skillmd_parse import SkillFormatError
from skills.workflow import FAILURES, Trace

__all__ = [
    "ACTIONS", "FAILURES", "FAILURE_TYPES", "Batch", "Case", "CreditConfig", "Diagnoser", "Diagnosis",
    "DiagnosisConfig", "Edit", "GateConfig", "GateResult", "GroupCredit", "LLMDiagnoser", "Rollout",
    "RuleDiagnoser", "Skill", "SkillEdit", "SkillError", "SkillFormatError", "SkillLibrary", "SkillsConfig", "Trace",
    "agent_graph", "ancestors", "batch", "cases", "compare", "descendants", "edit_path", "export_library",
    "group_relative_credit", "import_library", "presence_credit", "skill_graph", "to_edit", "validate",
]
