"""A separate process that appends to a ledger; the concurrency and durability tests run it.

`python -m tests.ledger.appender contend <url-or-file> <label> <count>`: append `count` records to the
shared stream, reloading and retrying on every version clash, then print `done`.

`python -m tests.ledger.appender forever <url-or-file> <tasks>`: `tasks` Trio tasks append without end;
each prints the id of every record once its append returned (acknowledged), one per line.
"""

from __future__ import annotations

import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import trio

from auto_runtime.ledger import Ledger, NewRecord, PlaybookScope, StreamWrite, VersionConflict, open_ledger

SCOPE = PlaybookScope("acme", "finance")
SHARED = SCOPE.stream("runs", "shared")


def open_target(where: str) -> AbstractAsyncContextManager[Ledger]:
    if where.startswith("postgresql://"):
        return open_ledger(database_url=where)
    return open_ledger(ledger_file=Path(where))


async def append_with_retry(ledger: Ledger, label: str, number: int) -> None:
    while True:
        version = await ledger.stream_version(SHARED)
        try:
            await ledger.append([StreamWrite(SHARED, version, [NewRecord("counted", {"by": label, "n": number})])])
            return
        except VersionConflict:
            continue


async def contend(where: str, label: str, count: int) -> None:
    async with open_target(where) as ledger:
        for number in range(count):
            await append_with_retry(ledger, label, number)
    print("done", flush=True)


async def forever(where: str, tasks: int) -> None:
    async with open_target(where) as ledger:

        async def append_forever(task: int) -> None:
            stream = SCOPE.stream("durable", str(task))
            version = 0
            while True:
                records = [NewRecord("kept", {"task": task, "pad": "p" * 200}) for _ in range(1 + version % 3)]
                await ledger.append([StreamWrite(stream, version, records)])
                version += len(records)
                sys.stdout.write("".join(f"{record.id}\n" for record in records))
                sys.stdout.flush()

        async with trio.open_nursery() as nursery:
            for task in range(tasks):
                nursery.start_soon(append_forever, task)


def main() -> None:
    command, where, *rest = sys.argv[1:]
    if command == "contend":
        trio.run(contend, where, rest[0], int(rest[1]))
    elif command == "forever":
        trio.run(forever, where, int(rest[0]))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
