"""Parsers from raw model text to actions: strict, total, and never raising.

A weak model's output is untrusted input. Each parser returns a clean value or
``None`` (with no exception for any string whatsoever: the fuzz test in
tests/agents/test_parse_fuzz.py throws thousands of garbage strings at them), and
the caller records a ``None`` as an invalid action with its raw text. Limits are
explicit: an over-long text, a huge number or a deep expression is refused, not
evaluated.
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction

MAX_EXPRESSION = 80
"""Characters an expression may have (after cleaning)."""
MAX_DIGITS = 9
"""Digits a number may have, in an expression or an answer."""

_EXPRESSION_CHARS = re.compile(r"[0-9+\-*/(). ]+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_ANSWER = re.compile(r"answer\s*(?:is)?\s*[:=]?\s*\$?\s*(-?\d[\d,]*(?:\.\d+)?)", re.IGNORECASE)
_BARE = re.compile(r"\s*\$?\s*(-?\d[\d,]*(?:\.\d+)?)\s*\.?\s*")


def expression(text: str, allowed: set[str] | None = None) -> str | None:
    """Raw text -> a canonical arithmetic expression (numbers, + - * /, parentheses), or None.

    Tolerated: surrounding backticks/quotes, an ``Expression:`` label, a trailing
    ``= ...`` (the model computing, which we ignore). ``allowed``: if given, every
    number must be one of these strings (a hard constraint: no invented numbers).
    """
    if not isinstance(text, str) or len(text) > 4 * MAX_EXPRESSION:
        return None
    line = text.strip().split("\n", 1)[0].strip().strip("`\"'").strip()
    line = re.sub(r"^(?:expression|expr)\s*:\s*", "", line, flags=re.IGNORECASE)
    line = line.split("=", 1)[0].strip().replace("\u00d7", "*").replace("\u00f7", "/").replace("x", "*")
    if not line or len(line) > MAX_EXPRESSION or not _EXPRESSION_CHARS.fullmatch(line):
        return None
    numbers = _NUMBER.findall(line)
    if not numbers or any(len(n) > MAX_DIGITS for n in numbers):
        return None
    if allowed is not None and any(n not in allowed for n in numbers):
        return None
    try:
        tree = ast.parse(line, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not _arithmetic(tree.body, depth=0):
        return None
    return " ".join(line.split())


def _arithmetic(node, depth: int) -> bool:
    if depth > 12:
        return False
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd)) and _arithmetic(node.operand, depth + 1)
    if isinstance(node, ast.BinOp):
        return (isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div))
                and _arithmetic(node.left, depth + 1) and _arithmetic(node.right, depth + 1))
    return False


def evaluate(expr: str) -> Fraction | None:
    """Exact value of an expression that :func:`expression` accepted (None: not one, or division by zero)."""
    clean = expression(expr)
    if clean is None:
        return None
    return _value(ast.parse(clean, mode="eval").body)


def _value(node) -> Fraction | None:
    if isinstance(node, ast.Constant):
        return Fraction(str(node.value))
    if isinstance(node, ast.UnaryOp):
        v = _value(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    left, right = _value(node.left), _value(node.right)
    if left is None or right is None:
        return None
    if isinstance(node.op, ast.Add):
        return left + right
    if isinstance(node.op, ast.Sub):
        return left - right
    if isinstance(node.op, ast.Mult):
        return left * right
    return None if right == 0 else left / right


def answer(text: str) -> int | None:
    """``Answer: 42``, ``The answer is 42.``, ``42`` -> 42; anything else (or a non-integer) -> None."""
    if not isinstance(text, str) or len(text) > 200:
        return None
    line = text.strip().split("\n", 1)[0]
    match = _ANSWER.search(line) or _BARE.fullmatch(line)
    if match is None:
        return None
    raw = match.group(1).replace(",", "")
    if len(raw.lstrip("-").split(".", 1)[0]) > MAX_DIGITS:
        return None
    value = Fraction(raw)
    return int(value) if value.denominator == 1 else None
