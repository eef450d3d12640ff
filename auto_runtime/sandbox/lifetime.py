"""The sandbox for the life of the server: one engine, the run workers and the two save-time checkers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from auto_runtime.sandbox.checker import Checkers
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.pool import SandboxPool


@dataclass(frozen=True)
class Sandbox:
    engine: SandboxEngine
    pool: SandboxPool
    checkers: Checkers[Any]


@asynccontextmanager
async def open_sandbox(cache_folder: Path, workers: int) -> AsyncIterator[Sandbox]:
    """Verifies the pinned artifact and loads (or compiles once) the module; closes everything at the end, so no
    store outlives the engine."""
    engine = await trio.to_thread.run_sync(SandboxEngine, cache_folder)
    pool = SandboxPool(engine, workers)
    checkers: Checkers[Any] = Checkers()
    try:
        yield Sandbox(engine, pool, checkers)
    finally:
        pool.close()
        checkers.close()
        engine.close()
