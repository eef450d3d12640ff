"""Which SQLite errors are a full disk, a passing fault (`LedgerUnavailable`), rather than a failed write.

`SQLITE_FULL` is always one: SQLite answers it when a write to the database or its WAL meets `ENOSPC`.
Growing the WAL index (`-shm`) or a file by truncation, and writes refused with another errno, come back as
`SQLITE_IOERR_*` without the errno, so a disk I/O error counts as a full disk when the ledger's file system
has less than `LOW_SPACE_BYTES` left; any other I/O error stays an error.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Final

SQLITE_IOERR: Final = 10
SQLITE_FULL: Final = 13
LOW_SPACE_BYTES: Final = 1024 * 1024


def free_bytes(folder: Path) -> int | None:
    """The bytes this process may still write on the file system of `folder` (None when it cannot be asked)."""
    try:
        stats = os.statvfs(folder)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def full_disk_cause(error: BaseException, folder: Path) -> str | None:
    """The words of a full disk when `error` is one (see the module), else None."""
    if not isinstance(error, sqlite3.Error):
        return None
    code = getattr(error, "sqlite_errorcode", None)
    if not isinstance(code, int):
        return None
    primary = code & 0xFF
    if primary == SQLITE_FULL:
        return str(error)
    if primary == SQLITE_IOERR:
        free = free_bytes(folder)
        if free is not None and free < LOW_SPACE_BYTES:
            return f"{error}, with {free:,} bytes free"
    return None
