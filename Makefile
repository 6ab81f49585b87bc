# knuma — everything a fresh clone needs is installed from here.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
PYTEST_ARGS ?=

.PHONY: run test lint bench fmt clean venv dev proto

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed-run: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) install --quiet -c constraints.txt -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) install --quiet -c constraints.txt -e '.[dev]'
	touch $@ $(VENV)/.installed-run

venv: $(VENV)/.installed-run
dev: $(VENV)/.installed-dev

## run: the main job on the built-in example
run: $(VENV)/.installed-run
	$(BIN)/knuma simulate

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
