"""Agents: policy backends (rule now; hf, vllm, openai to come), bid heads and the learner."""

from agents.rule_policy import RulePolicy
from agents.rules import RuleSpace, RuleSyntaxError

__all__ = ["RulePolicy", "RuleSpace", "RuleSyntaxError"]
