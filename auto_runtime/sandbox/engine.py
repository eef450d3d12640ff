"""One Wasmtime engine per process, the snapshots compiled and cached on disk, and one shared `InstancePre` each.

The engine's configuration is fixed (fuel, epoch interruption, WebAssembly exceptions, a 512 KiB wasm
stack, linear memories from a pool of slots kept partly resident: `memory_slots`). Each snapshot (one per heap
size, `artifact.HEAPS`) is compiled once and kept in `cache_dir` as a `.cwasm` named by the Wasmtime version,
the configuration and the snapshot's digest, so a new Wasmtime, a new configuration or a new snapshot never
reads an old file; a miss compiles once and writes the file atomically.

The linker answers the snapshot's imports with `host_imports.define_host` (output kept, files refused, the run's
clock, the bridge, every JavaScript-proxy import a trap). These host functions find their run through
`bridge.active_bridge()`, a thread-local, since a store runs on one thread from start to end. The
`InstancePre`s are shared by every worker thread.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import wasmtime

from auto_runtime.sandbox.artifact import HEAPS, WASMTIME_VERSION, Artifact, load_artifact
from auto_runtime.sandbox.host_imports import define_host
from auto_runtime.sandbox.interruption import EpochTicker
from auto_runtime.sandbox.memory_slots import SLOTS_DESCRIPTION, use_memory_slots
from auto_runtime.sandbox.wasm_binary import read_tail

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
    """The `.cwasm` name for this Wasmtime, engine configuration and snapshot."""
    key = hashlib.sha256(f"{WASMTIME_VERSION}|{_CONFIG_DESCRIPTION}|{artifact.sha256}".encode()).hexdigest()
    return f"micropython-{artifact.heap}-{artifact.sha256[:12]}-{key[:16]}.cwasm"


class SandboxEngine:
    """The process's engine, module and `InstancePre`, and its epoch ticker. Thread-safe to share.

    Close it before the interpreter exits, after every store is gone (wasmtime's exit-time panic).
    """

    def __init__(self, cache_dir: Path, artifacts: dict[str, Artifact] | None = None) -> None:
        self.artifacts = artifacts if artifacts is not None else {heap: load_artifact(heap) for heap in HEAPS}
        self.artifact = self.artifacts["240M"]
        self.engine = wasmtime.Engine(_config())
        self.compiled_now = False
        self.modules = {heap: self._load_module(cache_dir, artifact) for heap, artifact in self.artifacts.items()}
        self.module = self.modules["240M"]
        self.tails = {
            heap: tuple((segment.offset, segment.data) for segment in read_tail(artifact.wasm))
            for heap, artifact in self.artifacts.items()
        }
        """Per heap, the bytes each instance gets written at those offsets (`snapshot.py`: the tail)."""
        self.pres: dict[str, Any] = {}
        for heap, module in self.modules.items():
            linker = wasmtime.Linker(self.engine)
            define_host(linker, module)
            self.pres[heap] = linker.instantiate_pre(module)
        self.ticker = EpochTicker(self.engine)
        """Advances the epoch while a store runs: `run_store` runs guest code inside `ticker.running()`."""
        self.ticker.start()

    @property
    def sandbox_name(self) -> str:
        return self.artifact.sandbox_name

    def _load_module(self, cache_dir: Path, artifact: Artifact) -> wasmtime.Module:
        cache_dir.mkdir(parents=True, exist_ok=True)
        cached = cache_dir / cache_file_name(artifact)
        if cached.is_file():
            try:
                return wasmtime.Module.deserialize_file(self.engine, str(cached))
            except wasmtime.WasmtimeError:
                cached.unlink(missing_ok=True)
        module = wasmtime.Module(self.engine, artifact.wasm)
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
