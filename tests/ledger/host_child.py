"""A separate process doing a workflow host's ledger work; the lease and due-work tests run it.

`python -m tests.ledger.host_child claim <postgres-url> <holder>`: open the ledger, print `ready`, then
for each line `go <lease name>` read from stdin claim that lease for 60 s and print the answer as JSON
(`{"name", "holder", "fencing"}`); end at `end` or at the end of stdin.

`python -m tests.ledger.host_child hold <url-or-file> <holder>`: claim the workflow lease with a lapse
of 300 ms every 50 ms without end, printing each answer as JSON.

`python -m tests.ledger.host_child arm <url-or-file> <tasks>`: `tasks` Trio tasks apply inputs without
end, each an append to its run's log carrying the arm of one timer; each prints `<run id> <key>` once
its append returned (acknowledged), one per line.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta

import trio

from auto_runtime.ledger import DueEntry, DueWorkChanges, NewRecord, PlaybookScope, StreamWrite

from .appender import open_target

SCOPE = PlaybookScope("acme", "finance")


async def claim(where: str, holder: str) -> None:
    async with open_target(where) as ledger:
        print("ready", flush=True)
        while True:
            line = (await trio.to_thread.run_sync(sys.stdin.readline)).split()
            if not line or line[0] == "end":
                return
            state = await ledger.lease(line[1]).claim(holder, timedelta(seconds=60))
            print(json.dumps({"name": line[1], "holder": state.holder, "fencing": state.fencing}), flush=True)


async def hold(where: str, holder: str) -> None:
    async with open_target(where) as ledger:
        while True:
            state = await ledger.lease().claim(holder, timedelta(milliseconds=300))
            print(json.dumps({"name": state.name, "holder": state.holder, "fencing": state.fencing}), flush=True)
            await trio.sleep(0.05)


async def arm(where: str, tasks: int) -> None:
    async with open_target(where) as ledger:

        async def apply_forever(task: int) -> None:
            run_id = f"run{task}"
            stream = SCOPE.stream("run-logs", run_id)
            version = 0
            while True:
                key = f"t{version}"
                due_at = datetime(2030, 1, 1, tzinfo=UTC) + timedelta(seconds=version)
                await ledger.append(
                    [StreamWrite(stream, version, [NewRecord("input_applied", {"timer": key})])],
                    due_work=DueWorkChanges(arm=[DueEntry(SCOPE, run_id, key, due_at, {"task": task})]),
                )
                version += 1
                sys.stdout.write(f"{run_id} {key}\n")
                sys.stdout.flush()

        async with trio.open_nursery() as nursery:
            for task in range(tasks):
                nursery.start_soon(apply_forever, task)


def main() -> None:
    command, where, argument = sys.argv[1:]
    if command == "claim":
        trio.run(claim, where, argument)
    elif command == "hold":
        trio.run(hold, where, argument)
    elif command == "arm":
        trio.run(arm, where, int(argument))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
