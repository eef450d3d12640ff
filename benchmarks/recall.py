"""Recall views: folding rates in the sandbox, the time to rebuild a view, and answers through HTTP. Prints;
asserts nothing.

- **Folding** (one thread, `fold_page` as the recall host calls it, pages of up to 1,000 records and 2 s): events
  folded a second by the spec's first example over incidents of 19 suppliers (a view of about 5 KB), and by a
  filter-only view over `--events` events (100,000 by default): a `where` function that takes none of them, and a
  literal filter that takes none (decided on the host, no sandbox call). Beside them, in the same run, the
  sandbox's bare run rate: a fresh store running a trivial program through `evaluate`, one thread.
- **Rebuilding** (a real server, SQLite): `--rebuild-events` events published, then for each of two views, one
  that only counts and one that also keeps every event's id (a view that grows to about 40 bytes an event, written
  and read back as JSON after each fold), the view built, then a new version saved; the time until the new
  version is live again, and the events folded a second.
- **Answering** (the same server, `HTTP_CLIENTS` clients): `run_definition` of a live recall function with
  `answer`, runs a second, beside `GET /health` through the same server and clients.

Run from the repository root as `python -m benchmarks.recall` (a few minutes), or with smaller sizes, such as
`python -m benchmarks.recall --events 5000 --rebuild-events 500 --http-seconds 2`.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from auto_runtime.functions.recall.document import RecallDocument, parse_document
from auto_runtime.functions.recall.fold_page import PageItem, ViewState, fold_page
from auto_runtime.recall_host.page_items import program_of
from auto_runtime.recall_host.playbook_pass import PAGE_RECORDS
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.interruption import RunControl
from tests.conformance.helpers import new_playbook
from tests.conformance.recall.documents import INCIDENTS, counting, publish, recall, saved, standing_of, update
from tests.e2e.server_process import ServerProcess, start_server
from tests.sandbox_engine import on_big_stack

HTTP_CLIENTS = 4
SUPPLIERS = 19
INCIDENT = "com.acme.quality.incident-logged"


def document(source: str) -> RecallDocument:
    parsed = parse_document(source)
    assert isinstance(parsed, RecallDocument), parsed
    return parsed


def incident(index: int) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": f"inc-{index}",
        "type": INCIDENT,
        "source": "/quality/plant-7",
        "time": f"2026-10-02T07:{(index // 60) % 60:02d}:{index % 60:02d}.000Z",
        "data": {"supplier": f"supplier-{index % SUPPLIERS}", "severity": index % 5},
    }


def fold_rate(engine: SandboxEngine, source: str, items: list[PageItem], initial: str) -> tuple[float, int, int]:
    """Events a second folding `items` page by page; the events folded and the view's final size in bytes."""
    parsed = document(source)
    program = program_of(parsed)
    state = ViewState(initial, None, None, None, 0, 0)

    def fold_all() -> tuple[float, ViewState]:
        nonlocal state
        began = time.perf_counter()
        at = 0
        while at < len(items):
            page = items[at : at + PAGE_RECORDS]
            result = fold_page(engine, program, state, page, RunControl(time.monotonic() + 3600))
            assert result.stall is None, result.stall
            state = result.state
            at += max(result.examined, 1)
        return time.perf_counter() - began, state

    seconds, final = on_big_stack(fold_all)
    return len(items) / seconds, final.folded, len(final.view_json.encode())


def bare_rate(engine: SandboxEngine, seconds: float) -> float:
    evaluation = Evaluation("def main(input):\n    return input\n", 1, "1", 1_767_225_600_000, 1_048_320)

    def loop() -> float:
        count = 0
        until = time.monotonic() + seconds
        began = time.perf_counter()
        while time.monotonic() < until:
            evaluate(engine, evaluation, RunControl(time.monotonic() + 10))
            count += 1
        return count / (time.perf_counter() - began)

    rate: float = on_big_stack(loop)
    return rate


def sandbox_half(events: int) -> None:
    engine = SandboxEngine(Path(tempfile.gettempdir()) / "auto-runtime-bench-sandbox")
    try:
        print(f"sandbox bare run rate (fresh store, trivial program): {bare_rate(engine, 2.0):,.0f} runs/s")
        example_items = [PageItem(f"1.{index}", "t", incident(index), (), True) for index in range(min(events, 2_000))]
        rate, folded, size = fold_rate(engine, INCIDENTS, example_items, "{}")
        print(f"first example, {SUPPLIERS} suppliers: {rate:,.0f} events folded/s ({folded} folded, view {size:,} B)")
        where_source = recall(
            f"source:\n  events:\n    - type: {INCIDENT}\n      where: never\nview:\n  initial: 0\n",
            "def never(data):\n    return data['severity'] > 99\n\ndef fold(view, event):\n    return view + 1\n",
        )
        where_items = [PageItem(f"1.{index}", "t", incident(index), (0,), False) for index in range(events)]
        rate, folded, _size = fold_rate(engine, where_source, where_items, "0")
        print(f"filter-only view, where takes none, {events:,} events: {rate:,.0f} events/s ({folded} folded)")
        literal_items = [PageItem(f"1.{index}", "t") for index in range(events)]
        rate, folded, _size = fold_rate(engine, where_source, literal_items, "0")
        print(f"filter-only view, no filter holds, {events:,} events: {rate:,.0f} events/s ({folded} folded)")
    finally:
        engine.close()


def until_live(client: httpx.Client, playbook: str, name: str, version: int, folded: int) -> None:
    while True:
        standing = standing_of(client, playbook, name)
        if standing["version"] == version and standing["state"] == "live" and standing["folded"] >= folded:
            return
        assert standing["state"] != "stalled", standing
        time.sleep(0.02)


def rate_of(server: ServerProcess, request: Callable[[httpx.Client], httpx.Response], seconds: float) -> float:
    counts = [0] * HTTP_CLIENTS
    until = time.monotonic() + seconds

    def client_loop(number: int) -> None:
        with server.client() as client:
            while time.monotonic() < until:
                response = request(client)
                assert response.status_code == 200, response.text
                counts[number] += 1

    threads = [threading.Thread(target=client_loop, args=(number,)) for number in range(HTTP_CLIENTS)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - began)


def count_only(kind: str) -> str:
    """A view of `kind` that only counts: its JSON stays a few bytes, so a rebuild shows the pass's own rate."""
    return recall(
        f"source:\n  events:\n    - type: {kind}\nview:\n  initial: 0\n",
        "def fold(view, event):\n    return view + 1\n",
    )


def rebuild_seconds(client: httpx.Client, playbook: str, name: str, source: str, events: int) -> float:
    """Builds the view of `source`, then saves a new version (its fold adds 2 in place of 1) and times the
    rebuild until that version is live again over all `events`."""
    saved(client, playbook, name, source)
    until_live(client, playbook, name, 1, events)
    began = time.perf_counter()
    update(client, playbook, name, source.replace("+= 1", "+= 2").replace("view + 1", "view + 2"))
    until_live(client, playbook, name, 2, events)
    return time.perf_counter() - began


def server_half(rebuild_events: int, http_seconds: float) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as folder:
        server = start_server(Path(folder), {"LOG_LEVEL": "warn"})
        try:
            with server.client() as client:
                playbook = new_playbook(client)
                kind = "com.acme.bench"
                for index in range(rebuild_events):
                    publish(client, playbook, kind, {"n": index})
                views = {"only counts": count_only(kind), "keeps every id": counting(kind)}
                for number, (what, source) in enumerate(views.items()):
                    rebuilt = rebuild_seconds(client, playbook, f"bench-rebuild-{number}", source, rebuild_events)
                    print(
                        f"rebuild after a new version, {rebuild_events:,} events, a view that {what}: "
                        f"{rebuilt:.2f} s ({rebuild_events / rebuilt:,.0f} events/s)"
                    )
                saved(client, playbook, "bench-answer", INCIDENTS)
                for index in range(20):
                    data = incident(index)["data"]
                    publish(client, playbook, INCIDENT, data, source="/quality/plant-7")
                until_live(client, playbook, "bench-answer", 1, 20)
            route = f"{playbook}/definitions/recall/bench-answer/run"
            answers = rate_of(server, lambda c: c.post(route, json={"input": {"supplier": "supplier-1"}}), http_seconds)
            health = rate_of(server, lambda c: c.get("/health"), http_seconds)
            print(
                f"answers through HTTP ({HTTP_CLIENTS} clients): {answers:,.0f}/s; GET /health: {health:,.0f}/s "
                f"(answers at {answers / health:.0%} of /health)"
            )
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rebuild-events", type=int, default=5_000)
    parser.add_argument("--http-seconds", type=float, default=5.0)
    arguments = parser.parse_args()
    sandbox_half(arguments.events)
    server_half(arguments.rebuild_events, arguments.http_seconds)


if __name__ == "__main__":
    main()
