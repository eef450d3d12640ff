"""PostgreSQL's passing faults and start errors: `disk_full` (SQLSTATE 53100) is a full disk, as SQLite's
`SQLITE_FULL` is, and an error at start becomes the one line that names `DATABASE_URL` and the cause.

The line names the host, port and database of the URL, never its user's password: the URL is cut after the
`@` that ends its credentials.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit

import asyncpg

from ..errors import LedgerStartError
from ..migrations import SchemaTooNew

DISK_FULL: Final = "53100"


def full_disk_cause(error: BaseException) -> str | None:
    """The words of a full disk when `error` is PostgreSQL's `disk_full`, else None."""
    if isinstance(error, asyncpg.PostgresError) and getattr(error, "sqlstate", None) == DISK_FULL:
        return f"{getattr(error, 'message', None) or error} (SQLSTATE {DISK_FULL})"
    return None


def server_of(url: str) -> str:
    """The host (or hosts) and port of `url`, without its credentials; `localhost` when it names none."""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return "the server it names"
    return netloc.rpartition("@")[2] or "localhost"


def database_of(url: str) -> str:
    try:
        return urlsplit(url).path.lstrip("/") or "(the user's default)"
    except ValueError:
        return "(unknown)"


def _without_password(text: str, url: str) -> str:
    """`text` with the URL's password masked, should a driver's message ever quote it."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return text
    return text.replace(password, "***") if password else text


def start_error(error: BaseException, url: str) -> LedgerStartError | None:
    """The line for an error met while connecting and preparing the tables; None for an error of our own."""
    line = _start_line(error, url)
    return None if line is None else LedgerStartError(_without_password(" ".join(line.splitlines()), url))


def _start_line(error: BaseException, url: str) -> str | None:
    server = server_of(url)
    if isinstance(error, SchemaTooNew):
        return f"DATABASE_URL: the database {database_of(url)} on {server} {error.refusal}"
    if isinstance(error, asyncpg.InvalidCatalogNameError):
        return f"DATABASE_URL: the database {database_of(url)} does not exist on {server}"
    if isinstance(error, asyncpg.InvalidAuthorizationSpecificationError):
        return f"DATABASE_URL: {server} refused the credentials ({error})"
    if full_disk_cause(error) is not None:
        return f"DATABASE_URL: the disk of the database on {server} is full ({error})"
    if isinstance(error, asyncpg.PostgresError):
        return f"DATABASE_URL: {server} refused to open the ledger ({error})"
    if isinstance(error, TimeoutError):
        return f"DATABASE_URL: {server} did not answer in time"
    if isinstance(error, ConnectionRefusedError):
        return f"DATABASE_URL: cannot connect to {server} (nothing listens there)"
    if isinstance(error, OSError):
        return f"DATABASE_URL: cannot connect to {server} ({error.strerror or error})"
    if isinstance(error, asyncpg.InterfaceError):
        return f"DATABASE_URL: cannot use {server} ({error})"
    return None
