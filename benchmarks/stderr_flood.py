"""Stderr-flood benchmark (issue 37.9): `/health` latency of a real server while a stdio tool server floods its
stderr, beside the same server before the flood, in the same run.

Run: `python -m benchmarks.stderr_flood` from the repository root (about a minute). It starts the server (local
mode, SQLite, `LOG_LEVEL=info`, the image's default) with one stdio tool server, `flood`, a process that writes
100-byte lines to stderr as fast as the pipe takes them and never answers MCP, and `busy`, the same process
writing to /dev/null instead: the same load on the machine, with nothing for the server to read. Each runs in
a server of its own, one after the other: it times `ROUNDS` rounds of `REQUESTS` calls of `/health` while the
process runs (asking `search` for it starts it). It prints the median time of a `/health`
call of each, their ratio, and how many bytes the server's log grew by a second during the flood. It asserts
nothing.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import httpx

from tests.e2e.server_process import ServerProcess, start_server

ROUNDS = 5
REQUESTS = 100
FLOOD = "import sys\nline = 'x' * 99 + '\\n'\nwhile True:\n    sys.stderr.write(line)\n"
BUSY = "import sys\nsink = open('/dev/null', 'w')\nline = 'x' * 99 + '\\n'\nwhile True:\n    sink.write(line)\n"


def health_median(client: httpx.Client) -> float:
    medians: list[float] = []
    for _ in range(ROUNDS):
        times: list[float] = []
        for _ in range(REQUESTS):
            started = time.perf_counter()
            client.get("/health").raise_for_status()
            times.append(time.perf_counter() - started)
        medians.append(statistics.median(times))
    return statistics.median(medians)


def started(server: ServerProcess, name: str) -> None:
    """Ask `search` for the server (which starts its process, then waits out the connect limit), and give the
    process time to get going."""

    def ask() -> None:
        with server.client() as searching:
            searching.get("/v1/orgs/acme/tool-servers/search", params={"server": name})

    threading.Thread(target=ask, daemon=True).start()
    time.sleep(2.0)


def measured(program: str) -> tuple[float, float]:
    """The median `/health` call beside the program, and how fast the log grew (bytes a second) meanwhile."""
    with TemporaryDirectory() as folder:
        entry = {"command": sys.executable, "args": ["-c", program], "org": "acme"}
        server = start_server(Path(folder), {"TOOL_SERVERS": json.dumps({"noisy": entry}), "LOG_LEVEL": "info"})
        try:
            with server.client() as client:
                started(server, "noisy")
                size, since = server.log_path.stat().st_size, time.monotonic()
                median = health_median(client)
                grown = (server.log_path.stat().st_size - size) / (time.monotonic() - since)
        finally:
            server.stop()
    return median, grown


def main() -> None:
    before, _ = measured(BUSY)
    during, grown = measured(FLOOD)
    print(f"/health median beside a busy process writing elsewhere: {before * 1000:.2f} ms")
    print(f"/health median beside a process flooding its stderr: {during * 1000:.2f} ms (x{during / before:.2f})")
    print(f"the log grew by {grown / 1024:.1f} KiB a second during the flood")


if __name__ == "__main__":
    main()
