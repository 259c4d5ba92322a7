"""Agents: who acts in a market and how they learn.

* rule agents: a small rule language (``rules.py``, ``rules_kernel.py``) and its policy (``rule_policy.py``);
* LLM agents (``llm_*.py``, ``prompts.py``, ``privileged_pass.py``) on the engines of ``backends/`` (hf, vllm,
  openai), and the text-world API a world of them is written in (``text_*.py``);
* learners, composed by ``learned.py``: value and REINFORCE bids (``*_bids.py``, ``bid_head.py``), action
  logits over rules (``action_logits.py``), the LoRA learner of a shared model (``lm_grpo.py``, ``hf_grpo.py``),
  their critic and EMA weights, one optimiser step (``learner.py``); what a round earned (``advantages.py``);
* the methods each is one file of a folder: credit estimators (``credit/``), policy objectives
  (``objectives/``), task samplers (``tasks/``), all found by name (``named.py``) and set in ``[agents]``
  (``config.py``).

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
