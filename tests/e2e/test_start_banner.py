"""`auto-runtime serve` as a person starts it (the installed console script, in a folder and a home of its own):
the banner once it listens and the line once it stopped, on standard error whatever `LOG_LEVEL` says, on each
ledger; `serve --quiet` prints neither (issue 30, item 6)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from importlib import metadata
from pathlib import Path

import httpx
import pytest

from tests.e2e.server_process import START_TIMEOUT_SECONDS, STOP_TIMEOUT_SECONDS, base_environment, free_port
from tests.e2e.server_process import sandbox_cache_of as cache_folder_for
from tests.postgres_support import fresh_database, server_on
from tests.sandbox_engine import seed_cache

COMMAND = str(Path(sys.executable).parent / "auto-runtime")
BANNER_LINES = 6
STOP_LINE = "Auto Runtime stopped."
PASSWORD = "banner-password-not-to-print"


@contextmanager
def serving(folder: Path, settings: Mapping[str, str], *arguments: str) -> Iterator[subprocess.Popen[str]]:
    """`auto-runtime serve` started in `folder` (also its home), its standard error piped; killed at the end if it
    is still running (and after the start's bound, so that a server that never prints cannot hang the test)."""
    folder.mkdir(parents=True, exist_ok=True)
    environment = base_environment(folder)
    environment.pop("LOG_LEVEL")
    environment.pop("LOG_FORMAT")
    environment.update(settings)
    if (cache := cache_folder_for(environment, folder)) is not None:
        seed_cache(cache)
    process = subprocess.Popen(
        [COMMAND, "serve", *arguments],
        cwd=folder,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(START_TIMEOUT_SECONDS + STOP_TIMEOUT_SECONDS, process.kill)
    watchdog.start()
    try:
        yield process
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
        process.wait()
        assert process.stderr is not None
        process.stderr.close()


def banner_of(process: subprocess.Popen[str]) -> list[str]:
    """The banner's lines, read from standard error as they come (whatever comes before them is skipped)."""
    assert process.stderr is not None
    seen: list[str] = []
    for line in process.stderr:
        seen.append(line.rstrip("\n"))
        if seen[-1].startswith("Auto Runtime "):
            banner = [seen[-1]] + [process.stderr.readline().rstrip("\n") for _ in range(BANNER_LINES - 1)]
            return banner
    raise AssertionError(f"the server ended without its banner, exit {process.wait()}:\n" + "\n".join(seen))


def stop(process: subprocess.Popen[str], number: signal.Signals) -> str:
    """Send `number`, wait for the exit (code 0), and return the rest of standard error."""
    process.send_signal(number)
    assert process.stderr is not None
    rest = process.stderr.read()
    assert process.wait(STOP_TIMEOUT_SECONDS) == 0, rest
    return rest


def fields_of(banner: list[str]) -> dict[str, str]:
    """The banner's indented lines by their label: `API`, `MCP`, `OpenAPI`, `Ledger`, `Access`."""
    fields: dict[str, str] = {}
    for line in banner[1:]:
        assert line.startswith("  "), banner
        label, _, value = line.strip().partition(" ")
        fields[label] = value.strip()
    return fields


def test_serve_prints_where_it_listens_its_ledger_and_local_mode_then_that_it_stopped(tmp_path: Path) -> None:
    port = free_port()
    with serving(tmp_path, {"PORT": str(port)}) as process:
        banner = banner_of(process)
        base = f"http://127.0.0.1:{port}"
        version = metadata.version("auto-runtime")
        assert banner[0] == f"Auto Runtime {version} is listening on {base} (press Ctrl+C to stop)"
        fields = fields_of(banner)
        assert fields == {
            "API": f"{base}/v1",
            "MCP": f"{base}/mcp",
            "OpenAPI": f"{base}/v1/openapi.json",
            "Ledger": f"SQLite, {tmp_path / '.auto-runtime' / 'ledger.db'}",
            "Access": "local mode: no credential is asked, and only this machine may call",
        }
        assert (tmp_path / ".auto-runtime" / "ledger.db").is_file()
        document = httpx.get(fields["OpenAPI"], timeout=30.0)
        assert document.status_code == 200 and document.json()["info"]["version"] == version
        assert httpx.get(f"{fields['API']}/orgs/local/playbooks", timeout=30.0).status_code == 200
        mcp = httpx.post(fields["MCP"], json={}, headers={"Accept": "application/json, text/event-stream"})
        assert mcp.status_code != 404, mcp.text
        rest = stop(process, signal.SIGINT)
    assert rest.splitlines()[-1] == STOP_LINE, rest


def test_the_banner_names_a_postgresql_ledger_without_its_password_at_any_log_level(tmp_path: Path) -> None:
    port = free_port()
    with ExitStack() as stack:
        url = stack.enter_context(fresh_database("banner_test"))
        with_password = url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@", 1)
        assert PASSWORD in with_password, url
        settings = {**server_on(with_password), "PORT": str(port), "LOG_LEVEL": "info", "LOG_FORMAT": "json"}
        with serving(tmp_path, settings) as process:
            banner = banner_of(process)
            database = url.rpartition("/")[2]
            server = url.partition("@")[2].partition("/")[0]
            assert fields_of(banner)["Ledger"] == f"PostgreSQL, database {database} on {server}"
            rest = stop(process, signal.SIGTERM)
        assert rest.splitlines()[-1] == STOP_LINE, rest
        assert PASSWORD not in "\n".join(banner) + rest


def wait_for_health(process: subprocess.Popen[str], port: int) -> None:
    """Poll `/health` until the server answers, within the start's bound."""
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"the server did not answer /health within {START_TIMEOUT_SECONDS} s")


@pytest.mark.slow(seconds=11)
def test_serve_quiet_prints_neither_the_banner_nor_the_stop_line(tmp_path: Path) -> None:
    port = free_port()
    with serving(tmp_path, {"PORT": str(port)}, "--quiet") as process:
        wait_for_health(process, port)
        rest = stop(process, signal.SIGTERM)
    assert "Auto Runtime" not in rest and STOP_LINE not in rest, rest
    assert (tmp_path / ".auto-runtime" / "ledger.db").is_file()
