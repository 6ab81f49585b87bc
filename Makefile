# knuma — everything a fresh clone needs is installed from here.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
PYTEST_ARGS ?=
## Test processes (pytest-xdist): 3 by default on CI's 2 cores, since the end-to-end tests spend much of their time
## waiting for other processes (a grace period, an exporter's period): 8 min 36 s against 10 min 18 s with 2, the
## CPU time the same. TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 3

.PHONY: run shell test lint bench fmt clean venv dev proto chromium

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed-run: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) install --quiet -c constraints.txt -e '.[demo]'
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) install --quiet -c constraints.txt -e '.[dev,demo]'
	touch $@ $(VENV)/.installed-run

venv: $(VENV)/.installed-run
dev: $(VENV)/.installed-dev

## run: the main job on the built-in example, then what to try next
run: $(VENV)/.installed-run
	$(BIN)/knuma simulate
	@echo
	@echo "Installed in $(BIN): knuma, kubectl-numa and the pinned kubectl. Put them on PATH, then try:"
	@echo "  source $(BIN)/activate     # or: make shell"
	@echo "  knuma --version"
	@echo "  knuma schedule --pod examples/schedule/pod.yaml --nodes examples/schedule/nodes.yaml"
	@echo "  knuma up                       # a local cluster with simulated NUMA nodes; Ctrl-C stops it"
	@echo "See README.md for more."

## shell: a shell with knuma, kubectl and kubectl-numa on PATH (exit to leave)
shell: $(VENV)/.installed-run
	@echo "knuma $$($(BIN)/knuma --version) and the pinned kubectl are on PATH in this shell; 'exit' leaves it."
	@VIRTUAL_ENV="$(abspath $(VENV))" PATH="$(abspath $(BIN)):$$PATH" exec $${SHELL:-/bin/sh} -i

## test: lint, type-check and the whole test suite (installs chromium for the report's browser test when it can).
## Idle workers take tests queued on a busy one (--dist worksteal): the slow `knuma up` tests are neighbours in the
## collection order and otherwise ended the run on one worker while the other waited. Bytecode is written even where
## PYTHONDONTWRITEBYTECODE is set (into __pycache__, ignored by git): the suite starts hundreds of Python processes
## (each `knuma up` five), and without it each compiled knuma's modules from source again. The ten slowest tests
## are listed at the end, so that a change that slows the suite shows where.
test: $(VENV)/.installed-dev lint chromium
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} PYTHONDONTWRITEBYTECODE= \
	    $(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal --durations=10 $(PYTEST_ARGS)

## chromium: Debian's chromium for the browser test of `knuma simulate --report` (about 20 s, ~100 MB, once).
## Free when chromium is there or KNUMA_SKIP_BROWSER=1; without apt-get or root (or passwordless sudo) it says so and
## the rest of the suite still runs: the browser test then fails saying how to install chromium.
CHROMIUM_HINT := install it with 'apt-get install -y --no-install-recommends chromium' as root, set KNUMA_CHROMIUM to a Chrome/Chromium binary, or set KNUMA_SKIP_BROWSER=1 to skip the browser test
chromium:
	@if [ "$$KNUMA_SKIP_BROWSER" = 1 ] || [ -n "$$KNUMA_CHROMIUM" ] || command -v chromium >/dev/null 2>&1 \
	    || dpkg-query -W -f='$${Status}' chromium 2>/dev/null | grep -q ' installed$$'; then exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then \
	    echo "make: chromium is missing and apt-get is not available: $(CHROMIUM_HINT)" >&2; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; elif sudo -n true >/dev/null 2>&1; then sudo="sudo -n"; else \
	    echo "make: chromium is missing and installing it needs root (or passwordless sudo): $(CHROMIUM_HINT)" >&2; \
	    exit 0; fi; \
	echo "make: installing chromium for the browser test (apt-get, about 20 s, once)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null \
	    || { $$sudo apt-get update -qq && $$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
	    || echo "make: could not install chromium with apt-get: $(CHROMIUM_HINT)" >&2

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	$(BIN)/mypy

fmt: $(VENV)/.installed-dev
	$(BIN)/ruff format src tests
	$(BIN)/ruff check --fix src tests

## bench: benchmarks; writes docs/benchmarks.md
bench: $(VENV)/.installed-dev
	$(BIN)/python -m knuma.bench.report --output docs/benchmarks.md

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build src/*.egg-info
