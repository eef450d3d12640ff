"""A separate process that opens a ledger and says what its migration did; the migration tests run two.

`python -m tests.ledger.migrating_child <url-or-file>`: print `opening`, open the ledger (which migrates it),
print the `SchemaReport` as JSON, and end.
"""

from __future__ import annotations

import dataclasses
import json
import sys

import trio

from .appender import open_target


async def open_once(where: str) -> None:
    print("opening", flush=True)
    async with open_target(where) as ledger:
        assert ledger.schema is not None
        print(json.dumps(dataclasses.asdict(ledger.schema)), flush=True)


if __name__ == "__main__":
    trio.run(open_once, sys.argv[1])
