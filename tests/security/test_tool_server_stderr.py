"""A stdio tool server's process, hostile or broken, through the real server (local mode, SQLite), real processes.

Issue 37.9: a server that floods its stderr gets a bounded share of the log: a rate and a line length, with a
count of the lines dropped (the log's lines are counted, never timed). Issue 30.7: a server whose process fails
to start is not "could not be reached (ExceptionGroup)": `search`, `introspect` and `execute` say that it exited
with its status before it answered, with the last line it wrote to stderr (scrubbed, cut at 200 characters);
that its command was not found; or that it started but did not answer within the connect limit.

The server's clock is the test's (`tests/e2e/moved_clock.py`): the stderr rate, its quiet report and the connect
limit are server time, so the test moves the clock past them instead of waiting them out."""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_for_any
from pathlib import Path
from typing import Any

import httpx
import pytest

from auto_runtime.tools.stderr_log import BURST_LINES, LINE_BYTES, LINES_PER_SECOND, REPORT_SECONDS
from tests.conformance.helpers import problem
from tests.conformance.interactions.schedules import until
from tests.e2e.moved_clock import advance, now, start_server_with_test_clock
from tests.e2e.server_process import ServerProcess

FAKES = Path(__file__).resolve().parents[1] / "fakes"
ORG = "acme"
KEY = "notes-key-for-the-broken-one-0123456789"
FLOOD = 200_000
CUT = 200


def entries() -> dict[str, Any]:
    python = sys.executable
    broken = str(FAKES / "broken_stdio_server.py")
    return {
        "flood": {
            "command": python,
            "args": [str(FAKES / "mcp_stdio_server.py"), "--flood-stderr", str(FLOOD)],
            "org": ORG,
        },
        "exits": {"command": python, "args": [broken, "exit"], "env": {"NOTES_API_KEY": "${NOTES_KEY}"}, "org": ORG},
        "missing": {"command": "/no/such/command-for-the-test", "org": ORG},
        "hangs": {"command": python, "args": [broken, "hang"], "org": ORG},
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp("stdio-processes"))
    settings = {
        "LEDGER_FILE": str(folder / "data" / "ledger.db"),
        "TOOL_SERVERS": json.dumps(entries()),
        "NOTES_KEY": KEY,
    }
    process = start_server_with_test_clock(folder, settings)
    yield process
    assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def playbook(server: ServerProcess) -> str:
    name = f"pb-{secrets.token_hex(4)}"
    with server.client() as client:
        response = client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": name, "name": "Processes"})
    assert response.status_code == 201, response.text
    return name


def messages(server: ServerProcess) -> list[str]:
    found: list[str] = []
    for line in server.log().splitlines():
        try:
            found.append(str(json.loads(line)["message"]))
        except (ValueError, KeyError, TypeError):
            continue
    return found


def searched(client: httpx.Client, server: str) -> dict[str, Any]:
    response = client.get(f"/v1/orgs/{ORG}/tool-servers/search", params={"server": server})
    assert response.status_code == 200, response.text
    (found,) = response.json()["servers"]
    assert found["name"] == server
    result: dict[str, Any] = found
    return result


def moved_until(client: httpx.Client, done: Callable[[], bool], what: str) -> None:
    """Move the server's clock on by one report's time (`REPORT_SECONDS`) and look again, until `done` holds: a
    move made before the server began the wait it ends is not lost, the next one ends it."""

    def moved_then_done() -> bool:
        if done():
            return True
        advance(client, f"PT{REPORT_SECONDS:g}S")
        return done()

    until(moved_then_done, what)


def test_a_flood_on_stderr_is_logged_within_a_rate_and_a_line_length_and_the_rest_counted(
    server: ServerProcess,
) -> None:
    prefix = "tool server flood (stderr): "
    logged: list[str] = []
    counts: list[str] = []

    def all_accounted_for() -> bool:
        found = messages(server)
        logged[:] = [message for message in found if message.startswith(prefix + "flood line")]
        counts[:] = [message for message in found if message.startswith(prefix) and " lines dropped, " in message]
        return len(logged) + dropped() == FLOOD

    def dropped() -> int:
        return sum(int(message.removeprefix(prefix).split()[0]) for message in counts)

    with server.client() as client:
        started = now(client)
        assert searched(client, "flood")["tool_count"] == 6
        moved_until(client, all_accounted_for, "every line of the flood logged or counted")
        elapsed = (now(client) - started).total_seconds()
    assert dropped() > 0
    assert len(logged) <= BURST_LINES + LINES_PER_SECOND * elapsed
    first = logged[0]
    cut = len("flood line 0 ") + 100_000 - LINE_BYTES
    assert first == f"{prefix}flood line 0 {'y' * (LINE_BYTES - 13)} [{cut:,} more bytes cut]", first[-60:]
    assert all(message.endswith(f" lines dropped, past {LINES_PER_SECOND:g} lines a second") for message in counts)


def failures(client: httpx.Client, playbook: str, server: str) -> list[str]:
    """The words of search, introspect and execute for the server, each checked for its shape."""
    shown = searched(client, server)
    assert shown["because"] == "unreachable", shown
    words = [shown["unavailable"].removeprefix(f"The tool server {server} could not be used: ")]
    base = f"/v1/orgs/{ORG}/playbooks/{playbook}/tool-servers/{server}/tools/anything"
    for response in (client.get(base), client.post(f"{base}/execute", json={"arguments": {}})):
        body = problem(response, 503, "unavailable", "tool_server_failed")
        assert body["because"] == "unreachable", body
        words.append(body["detail"])
    return words


def test_a_process_that_exits_before_it_answers_says_its_status_and_its_last_stderr_line(
    server: ServerProcess, playbook: str
) -> None:
    with server.client() as client:
        said = failures(client, playbook, "exits")
    line = "ModuleNotFoundError: No module named 'notes_plugin' (key [redacted]) " + "x" * 300
    expected = f"The tool server exits exited with status 1 before it answered: {line[:CUT]}"
    assert said == [expected] * 3
    assert KEY not in server.log()


def test_a_command_that_is_not_found_says_so(server: ServerProcess, playbook: str) -> None:
    with server.client() as client:
        said = failures(client, playbook, "missing")
    assert said == ["The tool server missing could not be started: its command was not found."] * 3


def test_a_process_that_never_answers_is_cut_at_the_connect_limit_and_says_so(
    server: ServerProcess, playbook: str
) -> None:
    def asked() -> list[str]:
        with server.client() as client:
            return failures(client, playbook, "hangs")

    with ThreadPoolExecutor(1) as pool, server.client() as control:
        said = pool.submit(asked)
        until(lambda: "tool server hangs (stderr): starting up, reading nothing" in messages(server), "it started")
        moved_until(control, lambda: bool(wait_for_any([said], timeout=0.2).done), "the connect cut")
        words = said.result()
    expected = "The tool server hangs started, but did not answer within 10 seconds: starting up, reading nothing"
    assert words == [expected] * 3
