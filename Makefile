# knuma — everything a fresh clone needs is installed from here.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
PYTEST_ARGS ?=

.PHONY: run shell test lint bench fmt clean venv dev proto

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

## test: lint, type-check and the whole test suite
test: $(VENV)/.installed-dev lint
	$(BIN)/pytest $(PYTEST_ARGS)

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
