"""The pinned sandbox artifact: MicroPython's WebAssembly port from npm, and the snapshots built from it.

`SOURCE_SHA256` pins the module npm `@micropython/micropython-webassembly-pyscript` 1.27.0 publishes
(`micropython.wasm`): the record of every run names it (`sandbox_name`). `make install` builds one snapshot per
heap size from it (`build.py`) into `BUILT_FOLDER`, beside this file and ignored by git; `SNAPSHOT_SHA256` pins
each one's bytes. Work is counted by these exact bytes, so the runtime refuses to start with any others, or with
another Wasmtime.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

SOURCE_PACKAGE = "@micropython/micropython-webassembly-pyscript"
SOURCE_VERSION = "1.27.0"
SOURCE_SHA256 = "06338c955b03c5700aa0069015d3e392d76836ef8e2ce25bedbe59b88ccd373c"
BINARYEN_VERSION = "132.0.0"
WASMTIME_VERSION = "50.0.1"
BUILT_FOLDER = Path(__file__).with_name("built")

HEAPS: dict[str, int] = {"240M": 240 * 1024 * 1024, "64M": 64 * 1024 * 1024}
"""The snapshots' heap sizes: 240 MiB for computation runs, recall and the compile pass; 64 MiB for workflow
expressions (workflow-format.md 4.5)."""

SNAPSHOT_SHA256: dict[str, str] = {
    "240M": "b5d641c4f27ace59e2e5afb5302509dbefee9911f6608b5d46d4d9315128bff5",
    "64M": "c0097f3e11cf4222079613852609e534d0e59411068b90ac5957bff27913d5de",
}

REBUILD = "run `make install` (or `python -m auto_runtime.sandbox.build`), which needs Node.js and npm"


class ArtifactMismatchError(RuntimeError):
    """A snapshot on disk is missing or not the pinned build, or the installed Wasmtime is not the pinned version."""


def snapshot_path(heap: str, folder: Path = BUILT_FOLDER) -> Path:
    return folder / f"micropython-{SOURCE_SHA256[:12]}-{heap}.wasm"


@dataclass(frozen=True)
class Artifact:
    """The verified bytes of one snapshot, their SHA-256, and the heap it was started with."""

    path: Path
    wasm: bytes
    sha256: str
    heap: str

    @property
    def sandbox_name(self) -> str:
        """The name a run's record gives the sandbox: the source module's digest, as `06338c955b03/wasmtime-50.0.1`."""
        return f"{SOURCE_SHA256[:12]}/wasmtime-{WASMTIME_VERSION}"


def load_artifact(heap: str = "240M", path: Path | None = None, expected_sha256: str | None = None) -> Artifact:
    """Read one snapshot, check its digest and the Wasmtime version; else raise `ArtifactMismatchError`."""
    installed = version("wasmtime")
    if installed != WASMTIME_VERSION:
        raise ArtifactMismatchError(
            f"The sandbox needs wasmtime {WASMTIME_VERSION}, but wasmtime {installed} is installed"
        )
    wasm_path = path if path is not None else snapshot_path(heap)
    expected = expected_sha256 if expected_sha256 is not None else SNAPSHOT_SHA256[heap]
    try:
        wasm = wasm_path.read_bytes()
    except OSError as error:
        raise ArtifactMismatchError(f"The sandbox snapshot {wasm_path} cannot be read ({error}); {REBUILD}") from error
    digest = hashlib.sha256(wasm).hexdigest()
    if digest != expected:
        raise ArtifactMismatchError(
            f"The sandbox snapshot {wasm_path} has SHA-256 {digest}, not the pinned {expected}; {REBUILD}"
        )
    return Artifact(path=wasm_path, wasm=wasm, sha256=digest, heap=heap)


def verify_artifacts() -> None:
    """Check every snapshot and the Wasmtime version before the server starts: `ArtifactMismatchError`, whose
    text is the one line the server prints, when one is missing or not the pinned build."""
    for heap in HEAPS:
        load_artifact(heap)
