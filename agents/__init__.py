"""Agents: who acts in a market and how they learn.

* rule agents: a small rule language (``rules.py``, ``rules_kernel.py``) and its policy (``rule_policy.py``);
* LLM agents (``llm/``) on the engines of ``backends/`` (hf, vllm, openai); the text-world API a world of
  them is written in is ``scenarios.text``;
* learners (``learners/``): bid learners, action learners, the LoRA learner of a shared model, their critic,
  EMA weights and one Adam step, composed by ``learners.policy.LearnedPolicy``;
* the methods each is one file of a folder: credit estimators (``credit/``, with what a round earned:
  ``credit/advantages.py``), policy objectives (``objectives/``, with the KL to a reference: ``objectives/kl.py``),
  task samplers (``tasks/``), all found by name and their settings tables typed by ``named/`` (a package that imports
  none of them), and set in ``[agents]`` (``config.py``).

The packages import one way: ``named`` below the methods, the methods below this package's ``config.py``,
``backends`` below ``llm``, and ``learners`` above them all.

``import agents`` loads neither torch nor an LLM engine: those come with ``agents.learners`` and
``agents.llm``.
"""

from agents.config import AgentsConfig
from agents.rule_policy import RulePolicy
from agents.rules import RuleSpace, RuleSyntaxError

__all__ = ["AgentsConfig", "RulePolicy", "RuleSpace", "RuleSyntaxError"]
