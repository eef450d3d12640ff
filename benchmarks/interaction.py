"""Interaction requests through the real server: open requests held and listed, and answers taken by workflows.
Prints medians and percentiles; asserts nothing.

    python -m benchmarks.interaction [--requests N] [--answers N] [--ledgers sqlite,postgres] [--database-url URL]

For each ledger (SQLite: a fresh file; PostgreSQL: a fresh database in `--database-url`'s server, dropped
afterwards) one server process is started (`WORKFLOW_SWEEP_INTERVAL` left at 1 s, `INTERACTION_OPEN_REQUESTS`
above the requests made) and driven over HTTP by httpx clients in threads of this process:

(a) `--requests` open requests in one playbook (questions to the inbox, started by 16 threads): the server's
    resident memory (`VmRSS`) before and with them held, then `list_interactions` read page by page (100 a
    page) beside `list_runs` pages of the same size: p50 and p99 of a page's time for each.
(b) `--answers` workflows, each waiting on one request: `answer_interaction` to the workflow's next step, the
    time from sending the answer to the workflow's `ended_at` (the same machine's clock), p50 and p99. The
    sweep (1 s by default) bounds it: the run takes its answer at the next sweep the answer wakes.

The default run takes a few minutes on a 2-core machine; the issue's sizes are `--requests 10000`.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from benchmarks.workflows import in_threads, ledger_server, ms, percentile, rss_mb
from tests.conformance.helpers import new_playbook
from tests.e2e.server_process import ServerProcess
from tests.e2e.test_workflow_crashes import send

THREADS = 16
PAGE = 100
BOUND_SECONDS = 600.0
QUESTION = """---
to: '{{ input.lead }}'
expires: P7D
input:
  schema: { type: object, required: [lead], properties: { lead: { type: string } } }
output:
  schema: { type: object, required: [decision], properties: { decision: { type: string, enum: [go, hold] } } }
---
May it go out, {{ input.lead }}?
"""
ASKING = """document: { dsl: '1.0.3', namespace: bench, name: asking, version: '1.0.0' }
do:
  - ask:
      call: run_definition
      with: { type: interaction, name: deploy, input: { lead: '${ data["lead"] }' } }
  - after: { set: '${ {"decision": data["decision"]} }' }
"""


def save(client: httpx.Client, playbook: str) -> None:
    for kind, name, source in (("interaction", "deploy", QUESTION), ("workflow", "asking", ASKING)):
        saved = client.post(f"{playbook}/definitions/{kind}", json={"name": name, "source": source})
        if saved.status_code != 201:
            raise AssertionError(saved.text)


def page_times(client: httpx.Client, url: str, key: str) -> tuple[list[float], int]:
    """The time (ms) of each page of a listing read to its end, and how many items it held."""
    times: list[float] = []
    items = 0
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": PAGE}
        if cursor is not None:
            params["cursor"] = cursor
        began = time.perf_counter()
        response = client.get(url, params=params)
        times.append((time.perf_counter() - began) * 1000)
        if response.status_code != 200:
            raise AssertionError(response.text)
        body = response.json()
        items += len(body[key])
        cursor = body["next_cursor"]
        if cursor is None:
            return times, items


def held_requests(server: ServerProcess, playbook: str, count: int) -> None:
    before = rss_mb(server.process.pid)

    def asker(number: int) -> None:
        with server.client() as client:
            for index in range(number, count, THREADS):
                body = {"input": {"lead": f"lead-{index}"}, "run_id": str(uuid.uuid4())}
                response = client.post(f"{playbook}/definitions/interaction/deploy/run", json=body)
                if response.status_code != 200:
                    raise AssertionError(response.text)

    began = time.monotonic()
    in_threads(THREADS, asker)
    elapsed = time.monotonic() - began
    held = rss_mb(server.process.pid)
    print(f"  {count:,} requests asked in {elapsed:.1f} s ({count / elapsed:,.0f}/s)")
    print(f"  server VmRSS {before:.0f} MB before, {held:.0f} MB with {count:,} open requests")
    with server.client() as client:
        listed, items = page_times(client, f"{playbook}/interactions", "interactions")
        runs, run_items = page_times(client, f"{playbook}/runs", "runs")
    print(
        f"  list_interactions: {items:,} items in {len(listed)} pages of {PAGE}, "
        f"p50 {percentile(listed, 0.5):.1f} ms, p99 {percentile(listed, 0.99):.1f} ms"
    )
    print(
        f"  list_runs (same page size): {run_items:,} items in {len(runs)} pages, "
        f"p50 {percentile(runs, 0.5):.1f} ms, p99 {percentile(runs, 0.99):.1f} ms"
    )


def answered_workflows(server: ServerProcess, playbook: str, count: int) -> None:
    """Starts `count` workflows, waits until each one's request is open, answers each and times its ending."""
    with server.client() as client:
        flows: dict[str, str] = {}
        for index in range(count):
            lead = f"flow-{index}-{uuid.uuid4().hex[:6]}"
            run_id = str(uuid.uuid4())
            body = {"input": {"lead": lead}, "run_id": run_id}
            started = send(client, "POST", f"{playbook}/definitions/workflow/asking/run", json=body)
            if started.status_code != 200:
                raise AssertionError(started.text)
            flows[lead] = run_id
        requests: dict[str, str] = {}
        deadline = time.monotonic() + BOUND_SECONDS
        for lead in flows:
            while lead not in requests:
                listed = client.get(f"{playbook}/interactions", params={"to": lead}).json()["interactions"]
                if listed:
                    requests[lead] = listed[0]["run_id"]
                elif time.monotonic() > deadline:
                    raise AssertionError(f"the workflow of {lead} asked nothing")
                else:
                    time.sleep(0.02)
        latencies: list[float] = []
        for lead, flow in flows.items():
            sent_at = time.time() * 1000
            answer = client.post(f"{playbook}/runs/{requests[lead]}/answer", json={"answer": {"decision": "go"}})
            if answer.status_code != 200:
                raise AssertionError(answer.text)
            while True:
                run = client.get(f"{playbook}/runs/{flow}").json()
                if run["status"] != "started":
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"the workflow {flow} did not end")
                time.sleep(0.01)
            if run["status"] != "succeeded":
                raise AssertionError(run)
            latencies.append(ms(run["ended_at"]) - sent_at)
    print(
        f"  answer_interaction to the workflow's end ({count} workflows, one at a time): "
        f"p50 {percentile(latencies, 0.5):.0f} ms, p99 {percentile(latencies, 0.99):.0f} ms"
    )


def bench_ledger(ledger: str, options: argparse.Namespace) -> None:
    print(f"\n== {ledger}", flush=True)
    with (
        tempfile.TemporaryDirectory() as folder,
        ledger_server(
            ledger,
            Path(folder),
            options.database_url,
            {"INTERACTION_OPEN_REQUESTS": str(options.requests + options.answers + 10)},
        ) as (server, _),
    ):
        with server.client() as client:
            held_playbook = new_playbook(client)
            save(client, held_playbook)
            answered_playbook = new_playbook(client)
            save(client, answered_playbook)
        print("(a) open requests held and listed")
        held_requests(server, held_playbook, options.requests)
        print("(b) answers taken by waiting workflows")
        answered_workflows(server, answered_playbook, options.answers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="open requests in one playbook (full: 10000)")
    parser.add_argument("--answers", type=int, default=50, help="workflows answered one at a time")
    parser.add_argument("--ledgers", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/test")
    options = parser.parse_args()
    for ledger in options.ledgers.split(","):
        bench_ledger(ledger.strip(), options)


if __name__ == "__main__":
    main()
