"""The one pydantic setting every typed config table is built with, in a module of its own.

Every package's config dataclasses (the economy's ``[market]``, the learners' ``[agents]``, ``[skills]``, each
scenario's own section) are validated the same way: an unknown key is refused (``extra="forbid"``), a value
set after construction is checked again (``validate_assignment``), and a float must be finite
(``allow_inf_nan=False``: ``rent = inf`` is refused at load, not mid-run). It lives in a module of its own, not
in the economy's config (market/config.py), and imports nothing but pydantic: ``market`` is the package every
other one already builds on, so this adds no edge to the import graph.
"""

from pydantic import ConfigDict

STRICT = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

__all__ = ["STRICT"]
