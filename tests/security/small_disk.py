"""A real small disk for the full-disk tests: a tmpfs mounted for the test, and a filler file that takes every
byte left on it. Mounting needs root (as on CI); elsewhere the tests are skipped with the reason."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.postgres_support import ADMIN_URL, admin, drop_database, with_database

CHUNKS = (1024 * 1024, 4096, 1)


@contextlib.contextmanager
def small_disk(size: str) -> Iterator[Path]:
    """A folder on a tmpfs of `size` (such as `32m`), unmounted and removed when the block ends."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs for a full disk needs root (CI runs these tests as root)")
    folder = Path(tempfile.mkdtemp(prefix="full-disk-"))
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        if mounted.returncode != 0:
            pytest.skip(f"mounting a tmpfs is not permitted here: {mounted.stderr.strip()}")
        try:
            yield folder
        finally:
            subprocess.run(["umount", str(folder)], check=True)
    finally:
        folder.rmdir()


def fill(folder: Path) -> Path:
    """Write a filler file in `folder` until its disk has no byte left; answers the filler's path."""
    filler = folder / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in CHUNKS:
            block = b"\0" * size
            with contextlib.suppress(OSError):
                while True:
                    os.write(descriptor, block)
    finally:
        os.close(descriptor)
    assert os.statvfs(folder).f_bavail == 0, "the filler left space on the disk"
    return filler


@contextlib.contextmanager
def postgres_on(folder: Path) -> Iterator[str]:
    """The URL of a new database whose tables live in a tablespace in `folder`, dropped at the end.

    Needs the PostgreSQL server on this machine (it writes the tablespace's files itself) and a superuser;
    otherwise the test is skipped with the reason."""
    try:
        owner = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("no local postgres user: the PostgreSQL server is not on this machine, so it cannot use the tmpfs")
    os.chown(folder, owner.pw_uid, owner.pw_gid)
    name = f"full_disk_{secrets.token_hex(6)}"
    try:
        asyncio.run(admin(ADMIN_URL, f"CREATE TABLESPACE {name} LOCATION '{folder}'"))
    except (OSError, asyncpg.PostgresError) as error:
        pytest.skip(f"PostgreSQL cannot make a tablespace on the tmpfs: {error}")
    try:
        asyncio.run(admin(ADMIN_URL, f"CREATE DATABASE {name} TABLESPACE {name}"))
        try:
            yield with_database(ADMIN_URL, name)
        finally:
            drop_database(name)
    finally:
        asyncio.run(admin(ADMIN_URL, f"DROP TABLESPACE IF EXISTS {name}"))
