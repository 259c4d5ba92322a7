"""LLM agents: a language model that acts in a market and edits its own skills.

* ``policy.py``: :class:`LLMPolicy`, the market policy whose action is a model completion; it plays any
  :class:`task.TextTask` (``task.py``: the protocol a text world is seen through, and ``Role``);
* ``calls.py`` (batched model calls and their accounting), ``births.py`` (children's rewritten skills),
  ``lines.py`` (each agent's skill lines), ``prompts.py`` (the framework's prompts), ``parse.py`` (reading
  numbers and answers out of model output);
* ``edit_pass.py``: the skills' edit pass (diagnose, rewrite, keep what a frozen market scores higher), on
  ``rollouts.py`` (the watched completions it reads);
* ``privileged_pass.py``: the pass that shows the model what only a teacher sees (hints, rubrics).

The engines it runs on are ``agents/backends/`` (hf, vLLM, OpenAI-compatible). A world for these agents is
written with the text-world API of ``scenarios.text``.
"""
