"""The compiled (numba) kernels, imported on first use.

A small economy never takes a compiled path, so it never pays numba's import (~0.3 s, plus a cache load
per kernel); a large one reaches its kernels through :func:`kernel`, cached, because an import statement in
a hot path costs a microsecond or two of every call.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType


@functools.cache
def kernel(module: str) -> ModuleType:
    """The kernel module ``module`` (``"market.auction_kernel"``, ...), imported once."""
    return importlib.import_module(module)
