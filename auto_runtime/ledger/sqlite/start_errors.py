"""The one line a SQLite ledger that cannot be opened at start prints, naming `LEDGER_FILE` and the cause."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Final

from ..errors import LedgerStartError
from ..migrations import SchemaTooNew
from .faults import full_disk_cause

SQLITE_BUSY: Final = 5
SQLITE_LOCKED: Final = 6
SQLITE_READONLY: Final = 8
SQLITE_CORRUPT: Final = 11
SQLITE_CANTOPEN: Final = 14
SQLITE_NOTADB: Final = 26
NO_SPACE: Final = frozenset({errno.ENOSPC, errno.EDQUOT})


def _full(path: Path) -> LedgerStartError:
    return LedgerStartError(f"LEDGER_FILE: the disk of {path} is full; free some space and start again")


def in_use(path: Path) -> LedgerStartError:
    """The line for a ledger file another process holds (its lock, or SQLite's own lock at start)."""
    return LedgerStartError(f"LEDGER_FILE: {path} is in use by another process (one server per ledger file)")


def start_error(error: OSError | sqlite3.Error | SchemaTooNew, path: Path) -> LedgerStartError:
    """The line for an error met while making the folder, opening the file or migrating it (see the module)."""
    if isinstance(error, SchemaTooNew):
        return LedgerStartError(f"LEDGER_FILE: {path} {error.refusal}")
    if isinstance(error, OSError):
        if error.errno in NO_SPACE:
            return _full(path)
        where = Path(error.filename) if error.filename else path
        what = "the folder" if where != path else "the file"
        return LedgerStartError(f"LEDGER_FILE: cannot make {what} {where} ({error.strerror or error})")
    if full_disk_cause(error, path.parent) is not None:
        return _full(path)
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        return in_use(path)
    if code == SQLITE_NOTADB:
        return LedgerStartError(f"LEDGER_FILE: {path} is not a SQLite database")
    if code == SQLITE_CORRUPT:
        return LedgerStartError(f"LEDGER_FILE: {path} is damaged ({error})")
    if code == SQLITE_READONLY:
        return LedgerStartError(f"LEDGER_FILE: {path} cannot be written ({error})")
    return LedgerStartError(f"LEDGER_FILE: {path} cannot be opened ({error})")
