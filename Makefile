# Two commands: `make serve` and `make test`. Both create .venv when it is missing and install into it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test install lint types pytest bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

serve: install
	$(BIN)/auto-runtime serve

lint: install
	$(BIN)/ruff check auto_runtime tests benchmarks
	$(BIN)/ruff format --check auto_runtime tests benchmarks

types: install
	$(BIN)/mypy auto_runtime

# One worker per core, each test module on one worker, so a module's servers start once. (Four workers on two
# cores were no faster, and a 30 s bound of a workflow test was missed under the load.)
pytest: install
	$(BIN)/pytest -n auto --dist loadfile

test: lint types pytest

bench: install
	$(BIN)/python -m benchmarks
