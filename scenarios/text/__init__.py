"""The text-world API: an LLM world written as one class, and what turns it into a scenario.

``from scenarios.text import Role, TextWorld`` is the public path; ``world.py``'s docstring is the guide.

* ``world.py``: :class:`TextWorld`, the class a user subclasses (roles, start, step, score, prompts);
* ``adapter.py``: B worlds in lockstep as the market sees them, and the text task the LLM policy plays;
* ``scenario.py``: a module with one ``TextWorld`` subclass made into a scenario (config, model, policy).

``Prompts`` (the framework's prompts a world may replace) and ``Role`` are defined beside the LLM policy
(``agents/llm/``), which needs them, and are imported from here.
"""

from agents.llm.prompts import Prompts
from agents.llm.task import Role
from scenarios.text.world import TextWorld

__all__ = ["Prompts", "Role", "TextWorld"]
