"""griffe extension (mkdocs.yml, the python handler's ``extensions``): Sphinx roles in docstrings become Markdown.

The code's docstrings name other objects the Sphinx way (``:class:`Ledger```, ``:meth:`~market.ledger.Ledger.pending```),
which ``help()`` and editors show as written but a Markdown page would print raw. Each role becomes the name in code
font, linked to that object's entry where the site documents it: an optional autorefs cross-reference, resolved in the
docstring's own scope (as Python would resolve the name there), that stays plain code where no page documents the object.
"""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj):`(~?)([\w.]+)(\(\))?`")


def identifier(obj: griffe.Object, name: str) -> str:
    """The full path ``name`` stands for in ``obj``'s scope (its first part resolved there), else ``name`` itself."""
    head, dot, rest = name.partition(".")
    try:
        return obj.resolve(head) + dot + rest
    except (griffe.NameResolutionError, KeyError, AttributeError):
        return name


def markdown(obj: griffe.Object, text: str) -> str:
    """``text`` with every Sphinx role replaced by an optional cross-reference in code font."""
    def replace(m: re.Match) -> str:
        tilde, name, call = m.groups()
        shown = (name.rsplit(".", 1)[-1] if tilde else name) + (call or "")
        return f'<autoref identifier="{identifier(obj, name)}" optional>`{shown}`</autoref>'
    return ROLE.sub(replace, text)


def plain(text: str) -> str:
    """``text`` with every Sphinx role replaced by the name in code font (for text outside the API pages)."""
    return ROLE.sub(lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}{m[3] or ''}`", text)


class SphinxRoles(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = markdown(obj, obj.docstring.value)
