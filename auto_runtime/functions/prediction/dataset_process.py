"""Reading an uploaded dataset where the event loop never waits for it: a small one in a worker thread, a
large one in a process of its own.

`dataset_csv` reads in pure Python: a 29 MB dataset takes seconds of a core. In a worker thread it holds the
interpreter's lock (GIL) in turns of 5 ms, and the event loop, which gives the lock up at every system call,
waits for a turn each time it wants it back: every request slowed for the whole read, `/health` by up to a
second. So a dataset larger than `READ_IN_THREAD_BYTES` is read by a child process
(`python -m auto_runtime.functions.prediction.dataset_process`), from the spooled file as its standard input,
a line at a time, as the thread reads it; the child writes what the upload needs (the problems, `because` and
the summary's facts, never the values) as one JSON document, and the server only waits for it. The child
runs at a lower priority, so on a busy machine the server's requests still come first. A smaller
dataset is read in a worker thread, in less time than a process takes to start.

Concurrency: at most `READ_AT_ONCE` datasets are read at once (the caller's `trio.CapacityLimiter`, shared by
both ways); the others wait their turn without holding the event loop. A child that fails (killed, or its
reading raised) is `DatasetReaderFailed`, an incident, never a reading.
"""

from __future__ import annotations

import json
import os
import sys
from typing import IO, Any, Final

import trio

from auto_runtime.functions.prediction.dataset_csv import DatasetReading, read_dataset
from auto_runtime.problems import InputIssue

READ_IN_THREAD_BYTES: Final = 1_048_576
"""The largest dataset read in a worker thread: a fifth of a second of reading at most."""
READ_AT_ONCE: Final = 2
"""How many datasets are read at once, each on a core of its own at most."""
READER_NICENESS: Final = 10
"""How much lower the reading process's priority is than the server's: where they share a core, the server's
requests go first and the reading takes the time they leave."""
READER_COMMAND: Final = (sys.executable, "-m", "auto_runtime.functions.prediction.dataset_process")


class DatasetReaderFailed(RuntimeError):
    """The reading process ended without a reading: its exit status and the end of what it wrote to stderr."""


def reading_as_json(reading: DatasetReading) -> dict[str, Any]:
    """What the upload needs of a reading without values (`reading_from_json` takes it back)."""
    return {
        "errors": [issue.as_json() for issue in reading.errors],
        "error_count": reading.error_count,
        "because": reading.because,
        "rows": reading.rows,
        "columns": reading.columns,
        "period": reading.period,
        "first": reading.first,
        "last": reading.last,
        "series_count": reading.series_count,
    }


def reading_from_json(document: dict[str, Any]) -> DatasetReading:
    return DatasetReading(
        errors=[InputIssue(issue["detail"], issue["pointer"]) for issue in document["errors"]],
        error_count=document["error_count"],
        because=document["because"],
        rows=document["rows"],
        columns=document["columns"],
        period=document["period"],
        first=document["first"],
        last=document["last"],
        series_count=document["series_count"],
    )


async def read_spooled(spool: IO[bytes], size: int, limiter: trio.CapacityLimiter) -> DatasetReading:
    """The reading of the `size` bytes of `spool`, rewound to its start (see the module)."""
    if size <= READ_IN_THREAD_BYTES:
        return await trio.to_thread.run_sync(read_dataset, spool, limiter=limiter)
    async with limiter:
        done = await trio.run_process(
            READER_COMMAND, stdin=spool.fileno(), capture_stdout=True, capture_stderr=True, check=False
        )
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", errors="replace")[-2000:]
        raise DatasetReaderFailed(f"the dataset reader ended with status {done.returncode}: {said}")
    document: dict[str, Any] = json.loads(done.stdout)
    return reading_from_json(document)


def main() -> None:
    """The child's work: read standard input as a dataset, write the reading as JSON to standard output, at a
    lower priority than the server (`READER_NICENESS`)."""
    os.nice(READER_NICENESS)
    reading = read_dataset(sys.stdin.buffer)
    sys.stdout.write(json.dumps(reading_as_json(reading)))


if __name__ == "__main__":
    main()
