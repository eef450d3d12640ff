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

# One worker more than the cores, each test module on one worker, so a module's servers start once: the tests
# wait on their servers, so a third worker on two cores keeps both busy (14 min 48 s on two workers, 12 min 11 s
# on three; four were no faster, and a 30 s bound of a workflow test was missed under that load). With servers
# forked (tests/e2e/forked_server.py): 13 min 53 s on three, 12 min 31 s on four, but four missed a check's 2 s
# bound in one of two runs.
WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
pytest: install
	$(BIN)/pytest -n $(WORKERS) --dist loadfile

test: lint types pytest

bench: install
	$(BIN)/python -m benchmarks
