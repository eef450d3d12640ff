"""The ledger's files on disk are its owner's alone: a folder the server makes is 0700, its files 0600.

The ledger file holds every org's records, and `secrets.key` beside it the key their secrets are sealed
under, so no other local user may read them. A folder the server makes (each missing one of the path) is made
0700; a folder that was there already (a home, a mounted volume) is left as it is. The files are made 0600
before SQLite opens them, and SQLite gives its `-wal` and `-shm` the mode of the database file; files left
more open by an earlier version are narrowed to 0600 at start.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Final

FOLDER_MODE: Final = 0o700
FILE_MODE: Final = 0o600
SQLITE_COMPANIONS: Final = ("-wal", "-shm", "-journal")


def make_private_folder(folder: Path) -> None:
    """Make `folder` and each missing folder above it 0700; folders that exist are left alone."""
    missing: list[Path] = []
    at = folder
    while not at.exists():
        missing.append(at)
        if at.parent == at:
            break
        at = at.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=FOLDER_MODE)
            os.chmod(path, FOLDER_MODE)  # the umask may have taken bits away; it never adds any


def make_private_file(path: Path) -> None:
    """Create `path` empty with mode 0600 when missing; narrow an existing one to 0600 when it is more open."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        narrow_to_owner(path)
    else:
        os.close(descriptor)


def narrow_to_owner(path: Path) -> None:
    """Take away every permission of group and others from an existing file (nothing when it is missing)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if mode & 0o077:
        os.chmod(path, mode & 0o700)


def private_sqlite_file(path: Path) -> None:
    """Prepare a SQLite ledger file: its folder (see `make_private_folder`), the file and its companions 0600."""
    make_private_folder(path.parent)
    make_private_file(path)
    for suffix in SQLITE_COMPANIONS:
        narrow_to_owner(path.with_name(path.name + suffix))
