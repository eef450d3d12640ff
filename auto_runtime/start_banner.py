"""What `auto-runtime serve` tells the person who started it, whatever `LOG_LEVEL` says: a short banner once the
server listens, and one line once it stopped cleanly. Both go to standard error, as uvicorn's "Uvicorn running
on ..." and "Finished server process" do; `serve --quiet` prints neither.

The banner says what `temporal server start-dev` says of itself (the version, then where each part listens) and
what a first minute needs besides: the ledger the server opened and whether it is in local mode, and, loudly,
a test's clock (`TEST_CLOCK`) with its control route. It never prints a secret: a `DATABASE_URL` is shown as its
host, port and database, without its user or password.
"""

from __future__ import annotations

from importlib import metadata
from typing import TextIO
from urllib.parse import urlsplit

from auto_runtime import __version__
from auto_runtime.server_clock import TEST_CLOCK_PATH
from auto_runtime.settings import Settings

PACKAGE = "auto-runtime"
PRODUCT = "Auto Runtime"
STOP_LINE = f"{PRODUCT} stopped."
TEST_CLOCK_LINE = "TEST CLOCK: this server's clock is a test's, moved by any caller on this machine at"


def package_version() -> str:
    """The version of the installed package (its metadata), or the source's own when it is not installed."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return __version__


def listening_url(host: str, port: int) -> str:
    """The base URL of the address the server listens on (an IPv6 address in brackets)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def ledger_description(settings: Settings) -> str:
    """The ledger the server opens, without a secret: the SQLite file, or PostgreSQL's host, port and database."""
    if settings.database_url is None:
        return f"SQLite, {settings.ledger_file}"
    try:
        parts = urlsplit(settings.database_url)
        server = parts.netloc.rpartition("@")[2] or "localhost"
        database = parts.path.lstrip("/") or "the user's default database"
    except ValueError:
        return "PostgreSQL, at DATABASE_URL"
    return f"PostgreSQL, database {database} on {server}"


def access_description(settings: Settings) -> str:
    """Local mode, or the credentials a caller sends instead (out of local mode, the settings hold API keys or a
    `PUBLIC_URL`, or the server does not start)."""
    if settings.local_mode:
        return "local mode: no credential is asked, and only this machine may call"
    credentials = [f"an API key ({len(settings.api_keys)} in API_KEYS)"] if settings.api_keys else []
    if settings.public_url is not None:
        credentials.append(f"a sign-in token for {settings.public_url}")
    return "not local mode: callers send " + " or ".join(credentials)


def start_banner(settings: Settings, version: str) -> list[str]:
    """The lines printed once the server listens."""
    base = listening_url(settings.host, settings.port)
    lines = [
        f"{PRODUCT} {version} is listening on {base} (press Ctrl+C to stop)",
        f"  API      {base}/v1",
        f"  MCP      {base}/mcp",
        f"  OpenAPI  {base}/v1/openapi.json",
        f"  Ledger   {ledger_description(settings)}",
        f"  Access   {access_description(settings)}",
    ]
    if settings.test_clock:
        lines.append(f"  {TEST_CLOCK_LINE} {base}{TEST_CLOCK_PATH}")
    return lines


class Announcer:
    """Prints the banner and the stop line to `out`, or nothing when `out` is None (`serve --quiet`)."""

    def __init__(self, out: TextIO | None) -> None:
        self.out = out

    def _print(self, lines: list[str]) -> None:
        if self.out is None:
            return
        self.out.write("".join(line + "\n" for line in lines))
        self.out.flush()

    def started(self, settings: Settings) -> None:
        self._print(start_banner(settings, package_version()))

    def stopped(self) -> None:
        self._print([STOP_LINE])
