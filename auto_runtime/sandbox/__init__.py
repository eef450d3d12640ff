"""The Wasmtime + MicroPython-WASI sandbox shared by computation, recall and workflow expressions.

Start one `SandboxEngine` per process (it verifies the pinned artifact and caches the compiled module),
one `SandboxPool` of `COMPUTATION_WORKERS` workers for runs, and one `Checkers` for save-time checks.
Close the pool and the checkers, then the engine, before the interpreter exits. A run's outcome is a
`SandboxOutcome`; its cases (`Returned`, `Raised`, ...) are in `auto_runtime.sandbox.outcomes`.
"""

from auto_runtime.sandbox.artifact import SOURCE_SHA256, Artifact, ArtifactMismatchError, load_artifact
from auto_runtime.sandbox.checker import (
    CheckBroken,
    Checkers,
    CheckerUnavailable,
    CheckTimedOut,
    compile_pass,
)
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.outcomes import SandboxOutcome
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.sandbox.program_rules import EntryRule, check_program
from auto_runtime.sandbox.workers import NoWorkerFree

__all__ = [
    "SOURCE_SHA256",
    "Artifact",
    "ArtifactMismatchError",
    "CheckBroken",
    "CheckTimedOut",
    "CheckerUnavailable",
    "Checkers",
    "EntryRule",
    "Evaluation",
    "NoWorkerFree",
    "RunControl",
    "SandboxEngine",
    "SandboxOutcome",
    "SandboxPool",
    "check_program",
    "compile_pass",
    "evaluate",
    "load_artifact",
]
