"""Strings from a database or a file, made safe where they are shown: the one home of that escaping.

A results database may come from anyone (a shared folder, a download), and every string in it (a run's scenario
and status, a skill's name, a stored summary, an error a foreign row provokes) ends up on a terminal or in a
report. Raw, an ESC sequence there retitles or clears the terminal, a carriage return or a bidi override hides
what a line says, and HTML in ``summary.md`` renders as markup. Every printer and writer passes such strings
through :func:`terminal` or :func:`markdown`; nothing else escapes them.
"""

from __future__ import annotations

import html
import unicodedata


def terminal(text: object, keep: str = "") -> str:
    """``text`` safe for a terminal: every control character (C0, DEL, C1 such as the 8-bit CSI, the ESC that
    starts a sequence) and every format character (bidi overrides, zero-width marks) other than those in
    ``keep`` is written as its Python escape (``\\x1b``, ``\\u202e``), so it shows as text and acts as none."""
    return "".join(c if c in keep or not _hidden(c) else c.encode("unicode_escape").decode("ascii")
                   for c in str(text))


def markdown(text: object) -> str:
    """``text`` safe inside a Markdown line of a report: escaped for the terminal (a ``cat`` of the file is a
    terminal too; newlines included, so one value stays one line), then HTML's ``& < >`` as entities and
    Markdown's own markup characters backslashed, so a value renders as the text it is. Quotes stay as they are:
    a report puts no value inside an HTML attribute, and an entity's ``#`` would be backslashed out of it."""
    safe = html.escape(terminal(text), quote=False)
    return "".join("\\" + c if c in _MARKUP else c for c in safe)


def markdown_code(text: object) -> str:
    """``text`` as a Markdown code span: escaped for the terminal, its backticks (which would end the span) as
    quotes and its pipes (which split a table's cell even inside a span) backslashed. HTML inside a code span is
    shown, not rendered, so it needs nothing more."""
    return "`" + terminal(text).replace("`", "'").replace("|", "\\|") + "`"


_MARKUP = set("\\`*_[]|#!~")
"""Markdown characters that would change a line's rendering (emphasis, code, links, images, tables, headings)."""


def _hidden(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Cf") and c != "\u200d"  # Cf: bidi overrides; keep the emoji joiner
