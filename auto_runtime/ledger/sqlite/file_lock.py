"""One server per SQLite ledger file, held for the server's life by an exclusive lock on `<file>.lock`.

SQLite in WAL mode lets several processes write one file, but this store relies on being the only one: its
lease is judged by one process's clock, and what it appended is all there is (`Ledger.sole_writer`), so the
caches kept current by its own commits are exact. The lock makes that true instead of assumed: a second
server on the same file stops at start with one line saying the file is in use.

The lock is `flock` on a file of its own beside the ledger (made 0600 like the ledger's other files), never on
the database file: SQLite holds POSIX locks there, and closing any other descriptor of that file would drop
them. The kernel releases the lock when the process ends, however it ends, so a killed server leaves no
stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..files import FILE_MODE, narrow_to_owner

LOCK_SUFFIX = ".lock"


class LedgerFileInUse(Exception):
    """Another process holds the ledger file's lock."""


def lock_path_of(ledger_file: Path) -> Path:
    return ledger_file.with_name(ledger_file.name + LOCK_SUFFIX)


def hold_ledger_file(ledger_file: Path) -> int:
    """Take the lock of `ledger_file` (its folder must exist) and return the descriptor that holds it; close
    that descriptor to let the file go. Raises `LedgerFileInUse` when another process holds it."""
    path = lock_path_of(ledger_file)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    narrow_to_owner(path)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise LedgerFileInUse(str(ledger_file)) from None
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor
