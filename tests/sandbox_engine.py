"""The sandbox's compiled module, made once for the test session and shared by every engine and server.

A `SandboxEngine` compiles the MicroPython artifact when its cache folder has no module for this Wasmtime,
engine configuration and artifact, and loads it otherwise (`auto_runtime/sandbox/engine.py`). The session
keeps one such folder (`session_cache_folder`, compiled on first use, under pytest's temporary folder):
the `engine` fixture of the test folders that run programs in the sandbox reads it, and `seed_cache` copies
what it holds into the folder a server started by the tests looks in, so no start compiles again.

Concurrency: the first use compiles under a lock, so servers started from several threads at once wait for
the one compile. A seeded file is written under a temporary name and renamed into place, and a file already
there is left alone, so a running server never sees a file change under it. The tests of the cache's own
behaviour (compile on the first start, load after) use a folder of their own (`tests/sandbox/test_artifact.py`).
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from auto_runtime.ledger.files import make_private_folder
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.workers import WORKER_STACK_BYTES

_lock = threading.Lock()
_base: Path | None = None
_compiled: Path | None = None


def keep_session_cache_under(base: Path) -> None:
    """Where the session's folder is made (the root conftest passes pytest's temporary folder); without this
    call (a benchmark importing the helpers) it is made in the system's temporary folder."""
    global _base
    with _lock:
        _base = base


def session_cache_folder() -> Path:
    """The session's cache folder, holding the compiled module (compiled here on the first call)."""
    global _compiled
    with _lock:
        if _compiled is None:
            if _base is not None:
                folder = _base / "compiled-sandbox"
                folder.mkdir(parents=True, exist_ok=True)
            else:
                folder = Path(tempfile.mkdtemp(prefix="auto-runtime-compiled-sandbox-"))
            SandboxEngine(folder).close()
            _compiled = folder
        return _compiled


def seed_cache(cache_folder: Path) -> None:
    """Copy the session's compiled module, with its modification time, into `cache_folder` (the folder a server
    will look in), making the folders above it as the server would (private, `make_private_folder`). A folder
    that cannot be made is left for the server to meet (the start-error tests), and so is a disk too full for
    the copy; files already there are kept."""
    source = session_cache_folder()
    try:
        make_private_folder(cache_folder.parent)
        cache_folder.mkdir(exist_ok=True)
    except OSError:
        return
    for compiled in source.iterdir():
        target = cache_folder / compiled.name
        if compiled.name.endswith(".partial") or target.exists():
            continue
        temporary = cache_folder / f".{compiled.name}.{os.getpid()}.{threading.get_ident()}.partial"
        try:
            shutil.copy2(compiled, temporary)
            os.replace(temporary, target)
        except OSError:
            temporary.unlink(missing_ok=True)
            return


@pytest.fixture(scope="session")
def engine() -> Iterator[SandboxEngine]:
    """One `SandboxEngine` a test folder for the session (a folder's conftest imports this fixture), loading
    the session's compiled module."""
    sandbox = SandboxEngine(session_cache_folder())
    yield sandbox
    sandbox.close()
    gc.collect()


T = TypeVar("T")


def on_big_stack(work: Callable[[], T]) -> T:
    """Run `work` on a thread with a sandbox worker's stack, as the pool does, and give back its result."""
    result: list[T] = []
    previous = threading.stack_size(WORKER_STACK_BYTES)
    try:
        thread = threading.Thread(target=lambda: result.append(work()))
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    return result[0]
