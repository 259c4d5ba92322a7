"""Agents: policy backends (rule, hf, vllm, openai), bid heads and the learner.

Your own LLM world is one class: ``from agents import Role, TextWorld`` (agents/text_world.py, whose docstring
is the guide); the framework turns it into a scenario (agents/text_scenario.py).

``LearnedPolicy`` (agents/learned.py: bid heads + the torch learner) is imported on first use, so
``import agents`` does not load torch for runs that do not learn.
"""

from agents.config import AgentsConfig
from agents.rule_policy import RulePolicy
from agents.rules import RuleSpace, RuleSyntaxError

__all__ = ["AgentsConfig", "LLMPolicy", "LearnedPolicy", "Prompts", "Role", "RulePolicy", "RuleSpace", "RuleSyntaxError",
           "TextWorld"]


def __getattr__(name):
    if name == "LearnedPolicy":
        from agents.learned import LearnedPolicy

        return LearnedPolicy
    if name == "LLMPolicy":  # LLM agents (agents/llm_policy.py); engines load only when a backend is made
        from agents.llm_policy import LLMPolicy

        return LLMPolicy
    if name in ("TextWorld", "Role", "Prompts"):  # the text-world API (agents/text_world.py)
        from agents import text_world

        return getattr(text_world, name)
    raise AttributeError(f"module 'agents' has no attribute {name!r}")
