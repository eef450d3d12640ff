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

# Four workers, each test module on one worker, so a module's servers start once. Most of the suite waits on
# servers (sweeps, expiries of a minute, restarts), not on the CPU, so even two cores keep four workers busy.
pytest: install
	$(BIN)/pytest -n 4 --dist loadfile

test: lint types pytest

bench: install
	$(BIN)/python -m benchmarks
