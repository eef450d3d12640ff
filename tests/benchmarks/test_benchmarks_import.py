"""Every module of `benchmarks/` imports, and each benchmark `make bench` runs has a `main`: they reuse the
tests' helpers, so a renamed helper would otherwise break one silently (benchmarks run by hand, never in the
suite)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from benchmarks.__main__ import BENCHMARKS

FOLDER = Path(__file__).parents[2] / "benchmarks"
SCRIPTS = sorted(path.stem for path in FOLDER.glob("*.py") if not path.stem.startswith("__"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_benchmark_script_imports(script: str) -> None:
    module = importlib.import_module(f"benchmarks.{script}")
    if script in BENCHMARKS:
        assert callable(getattr(module, "main", None)), f"benchmarks/{script}.py has no main()"


def test_make_bench_runs_every_benchmark_script() -> None:
    assert set(BENCHMARKS) <= set(SCRIPTS)
