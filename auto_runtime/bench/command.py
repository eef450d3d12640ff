"""`auto-runtime bench`: the command line and its run.

Against `--url` (a server the operator runs; the key, when it needs one, from `AUTO_RUNTIME_KEY`), or against a
server it starts itself with `--settings` (`own_server`), or, with `--compare KEY=V1,V2,...`, against one such
server a value, started and stopped in turn. On each server: its own playbook is created, each path is
driven for `--seconds` by `--processes` load processes of `--connections` keep-alive sockets each (`load`),
with a progress bar on standard error, and the playbook is retired. The table goes to standard output.

Exit codes: 0 measured, 2 refused (a URL that is not loopback without `--yes`, a bad `--compare`), 1 the
server failed or refused the set-up.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from auto_runtime.bench.load import LoadFailed, LoadRun
from auto_runtime.bench.own_server import BenchFolder, OwnServer, ServerFailed
from auto_runtime.bench.table import PathFigures, render
from auto_runtime.bench.target import Target, TargetRefused, target_of
from auto_runtime.bench.workload import BenchPlaybook, SetupFailed

KEY_VARIABLE = "AUTO_RUNTIME_KEY"
BAR_WIDTH = 30


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = commands.add_parser(
        "bench",
        help="measure a server's paths: requests a second and latency, beside /health",
        description="Drive /health, computation runs and three-step workflow runs with raw keep-alive "
        "connections from several processes, and print per path the requests a second, p50/p95/p99 latency and "
        "the ratio to /health. Against --url (key from AUTO_RUNTIME_KEY), or a server it starts with --settings; "
        "--compare restarts its own server for each value of a setting. It creates a playbook of its own and "
        "retires it after, and sends load only to the URL given (a loopback one unless --yes).",
    )
    bench.add_argument("--url", help="the server to measure, such as http://127.0.0.1:5555 (default: start one)")
    bench.add_argument("--settings", type=Path, help="the settings of the server it starts: a YAML file or a .env")
    bench.add_argument("--compare", metavar="KEY=V1,V2,...", help="start a server for each value of KEY, in turn")
    bench.add_argument("--seconds", type=float, default=10.0, help="how long each path is driven (default 10)")
    bench.add_argument("--processes", type=int, default=2, help="load processes (default 2)")
    bench.add_argument("--connections", type=int, default=4, help="keep-alive connections a process (default 4)")
    bench.add_argument("--org", default="bench", help="the org its playbook is made in (the key's org with a key)")
    bench.add_argument("--yes", action="store_true", help="send the load to a URL that is not loopback too")


class Refused(ValueError):
    """Arguments the command will not run with."""


def compared_values(text: str) -> tuple[str, list[str]]:
    from auto_runtime.settings.variables import ALL_VARIABLE_NAMES

    name, equals, values = text.partition("=")
    name = name.strip()
    listed = [value.strip() for value in values.split(",") if value.strip()]
    if not equals or not listed:
        raise Refused("--compare: expects KEY=V1,V2,..., such as COMPUTATION_WORKERS=1,2,4")
    if name not in ALL_VARIABLE_NAMES:
        raise Refused(f"--compare: {name} is not a setting of the server")
    if name in ("PORT", "HOST", "LEDGER_FILE", "DATABASE_URL", "CONFIG_FILE"):
        raise Refused(f"--compare: the benchmark sets {name} itself")
    return name, listed


class Progress:
    """A bar on `stream`, redrawn in place: the share of the whole benchmark's load time gone."""

    def __init__(self, stream: TextIO, total_seconds: float) -> None:
        self.stream = stream
        self.total = total_seconds
        self.done = 0.0
        self.label = ""
        self.started = 0.0

    def phase(self, label: str) -> Callable[[], None]:
        self.label = label
        self.started = time.monotonic()
        return self.draw

    def draw(self) -> None:
        gone = min(self.done + time.monotonic() - self.started, self.total)
        share = gone / self.total if self.total else 1.0
        filled = round(share * BAR_WIDTH)
        self.stream.write(f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {share:4.0%} {self.label:<40}")
        self.stream.flush()

    def finish_phase(self, seconds: float) -> None:
        self.done += seconds
        self.draw()

    def end(self) -> None:
        self.stream.write("\r" + " " * (BAR_WIDTH + 48) + "\r")
        self.stream.flush()


def measure(
    target: Target, org: str, key: str | None, arguments: argparse.Namespace, progress: Progress, label: str
) -> list[PathFigures]:
    """Every path on one server, its own playbook made before and retired after."""
    playbook = BenchPlaybook(target.base_url, org, key)
    playbook.create()
    try:
        figures = []
        for route in playbook.routes():
            run = LoadRun(
                target.host, target.port, route, arguments.processes, arguments.connections, arguments.seconds
            )
            answers = run.answers(progress.phase(f"{label}{route.name}"))
            progress.finish_phase(arguments.seconds)
            figures.append(PathFigures.of(route.name, answers, arguments.seconds))
        return figures
    finally:
        playbook.retire()


@contextmanager
def own_server(place: BenchFolder, settings: Path | None, changed: dict[str, str]) -> Iterator[OwnServer]:
    server = OwnServer(place, settings, changed)
    try:
        server.wait_until_healthy()
        yield server
    finally:
        server.stop()


def run_bench(arguments: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    key = os.environ.get(KEY_VARIABLE) or None
    try:
        if arguments.seconds <= 0 or arguments.processes < 1 or arguments.connections < 1:
            raise Refused("--seconds, --processes and --connections must be above 0")
        if arguments.url and (arguments.compare or arguments.settings):
            raise Refused("--url measures the server given; --compare and --settings start servers of its own")
        target = target_of(arguments.url, confirmed=arguments.yes) if arguments.url else None
        compared = compared_values(arguments.compare) if arguments.compare else None
    except (Refused, TargetRefused) as refused:
        print(f"auto-runtime bench: {refused}", file=err)
        return 2
    runs = len(compared[1]) if compared else 1
    progress = Progress(err, runs * 3 * arguments.seconds)
    columns: list[tuple[str, Sequence[PathFigures]]] = []
    place = BenchFolder()
    try:
        if target is not None:
            columns.append((target.base_url, measure(target, arguments.org, key, arguments, progress, "")))
        elif compared is None:
            with own_server(place, arguments.settings, {}) as server:
                columns.append(("own server", measure(server.target, arguments.org, key, arguments, progress, "")))
        else:
            name, values = compared
            for value in values:
                with own_server(place, arguments.settings, {name: value}) as server:
                    label = f"{name}={value}"
                    figures = measure(server.target, arguments.org, key, arguments, progress, f"{label}: ")
                    columns.append((label, figures))
    except (ServerFailed, SetupFailed, LoadFailed, OSError) as failed:
        progress.end()
        print(f"auto-runtime bench: {failed}", file=err)
        return 1
    finally:
        place.remove()
    progress.end()
    print(
        f"{arguments.processes} load processes x {arguments.connections} connections, {arguments.seconds:g} s a path",
        file=out,
    )
    print(render(columns), file=out)
    return 0
