# Two commands: `make serve` and `make test`. Both create .venv when it is missing and install into it, and build
# the sandbox's snapshots (Node.js and npm on the machine: `npm ci` fetches the two pinned packages they are made
# from, auto_runtime/sandbox/build.py makes them).
PYTHON ?= python3
NPM ?= npm
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SANDBOX_PACKAGES := sandbox-build/node_modules/.package-lock.json
SANDBOX_STAMP := auto_runtime/sandbox/built/.built
SANDBOX_SOURCES := $(addprefix auto_runtime/sandbox/,artifact.py build.py snapshot.py wasm_binary.py guest.py \
	prelude.py expression_prelude.py fold_prelude.py host_imports.py c_api.py bridge.py)

.PHONY: serve test install lint types pytest bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(SANDBOX_PACKAGES): sandbox-build/package.json sandbox-build/package-lock.json
	cd sandbox-build && $(NPM) ci --ignore-scripts --no-audit --no-fund
	touch $@

$(SANDBOX_STAMP): $(STAMP) $(SANDBOX_PACKAGES) $(SANDBOX_SOURCES)
	$(BIN)/python -m auto_runtime.sandbox.build
	touch $@

install: $(STAMP) $(SANDBOX_STAMP)

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
# A worker that dies is not replaced: pytest-xdist 3.8 hands a replacement worker, under `loadfile`, units of work
# already done and then waits for ever (pytest-xdist issues 1323 and 1378); without it the run ends at once, the test
# the worker died in failed.
WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
pytest: install
	$(BIN)/pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder --max-worker-restart=0

test: lint types pytest

bench: install
	$(BIN)/python -m benchmarks
