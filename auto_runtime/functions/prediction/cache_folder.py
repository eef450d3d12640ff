"""The `PREDICTION_CACHE_DIR` folder (seeds, configuration; prediction-format §13): model files and rows kept by
digest on this server's own disk, for the model processes to read.

Layout: `models/<sha256>.onnx` and `rows/<sha256>.csv`, each written to a temporary name and renamed, so a
reader never sees half a file. At start (`prepare`) the folder and its subfolders are made when missing, readable
only by this user; a folder that cannot be made, belongs to another user or that others may write to stops the
start, naming the setting; every file found is read again and kept only when its bytes match its name. A missing
file is written again from the playbook's content (`ensure`). Each kind keeps at most `MAX_KIND_BYTES`, the least
recently used evicted first, by this server's own count.

Not a `cachetools` cache like the others: its bound is bytes on disk, the newest file stays even when it alone
passes `MAX_KIND_BYTES` (`LRUCache` with `getsizeof` refuses such an item), and an eviction deletes a file.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Final, Literal

import trio

from auto_runtime.ledger.content import SpooledContent
from auto_runtime.settings import SettingsError

Kind = Literal["models", "rows"]
SUFFIX: Final[dict[Kind, str]] = {"models": ".onnx", "rows": ".csv"}
MAX_KIND_BYTES: Final = 1024**3
SETTING: Final = "PREDICTION_CACHE_DIR"


def _checked_folder(path: Path) -> None:
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        found = path.stat()
    except OSError as error:
        raise SettingsError(f"{SETTING}: the folder {path} cannot be made ({error.strerror})") from None
    if not stat.S_ISDIR(found.st_mode):
        raise SettingsError(f"{SETTING}: {path} is not a folder")
    if found.st_uid != os.getuid():
        raise SettingsError(f"{SETTING}: the folder {path} belongs to another user")
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise SettingsError(f"{SETTING}: other users may write to the folder {path}; allow only its owner to")


def _digest_of_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


class CacheFolder:
    """See the module. `prepare` once at start (blocking: call it before serving or in a thread)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._kept: dict[Kind, OrderedDict[str, int]] = {"models": OrderedDict(), "rows": OrderedDict()}

    def prepare(self) -> None:
        _checked_folder(self.root)
        for kind in SUFFIX:
            folder = self.root / kind
            _checked_folder(folder)
            for entry in sorted(folder.iterdir()):
                if entry.name.startswith("."):
                    continue  # another process's file being written (a folder shared against the advice)
                name = entry.name.removesuffix(SUFFIX[kind])
                if not entry.is_file() or entry.name == name or _digest_of_file(entry) != name:
                    entry.unlink(missing_ok=True)
                    continue
                self._kept[kind][name] = entry.stat().st_size
            self._evict(kind)

    def path(self, kind: Kind, digest: str) -> Path:
        return self.root / kind / f"{digest}{SUFFIX[kind]}"

    async def ensure(self, kind: Kind, digest: str, content: Callable[[], Awaitable[bytes | None]]) -> Path | None:
        """The file of `digest`, written from `content()` when missing; None when the content is gone too."""
        path = self.path(kind, digest)
        kept = self._kept[kind]
        if digest in kept and await trio.to_thread.run_sync(path.exists):
            kept.move_to_end(digest)
            return path
        data = await content()
        if data is None:
            return None
        await trio.to_thread.run_sync(self._write, path, [data])
        kept[digest] = len(data)
        self._evict(kind)
        return path

    async def ensure_spooled(self, kind: Kind, spooled: SpooledContent) -> Path:
        """The file of the spooled bytes' digest, copied from the spool a chunk at a time when missing."""
        path = self.path(kind, spooled.sha256)
        kept = self._kept[kind]
        if spooled.sha256 in kept and await trio.to_thread.run_sync(path.exists):
            kept.move_to_end(spooled.sha256)
            return path
        await trio.to_thread.run_sync(self._write, path, spooled.checked_chunks())
        kept[spooled.sha256] = spooled.size
        self._evict(kind)
        return path

    def _write(self, path: Path, chunks: Iterable[bytes]) -> None:
        """Write under a temporary name and rename (worker thread); nothing is renamed when `chunks` raises."""
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as file:
            for chunk in chunks:
                file.write(chunk)
        temporary.replace(path)

    def _evict(self, kind: Kind) -> None:
        kept = self._kept[kind]
        while sum(kept.values()) > MAX_KIND_BYTES and len(kept) > 1:
            digest, _ = kept.popitem(last=False)
            self.path(kind, digest).unlink(missing_ok=True)
