"""A stdio tool server that never answers, a real process for the tests of a server that fails to start.

    python broken_stdio_server.py exit    # writes a traceback to stderr, its last line naming its key, exits 1
    python broken_stdio_server.py hang    # writes one line to stderr, then reads nothing and never answers

The last line of `exit` holds the value of `NOTES_API_KEY` and runs past 200 characters, so the words the
runtime shows of it are scrubbed and cut.
"""

from __future__ import annotations

import os
import sys
import time

FILLER = "x" * 300


def main() -> int:
    mode = sys.argv[1]
    key = os.environ.get("NOTES_API_KEY", "")
    if mode == "exit":
        print("Traceback (most recent call last):", file=sys.stderr)
        print('  File "server.py", line 1, in <module>', file=sys.stderr)
        print(f"ModuleNotFoundError: No module named 'notes_plugin' (key {key}) {FILLER}", file=sys.stderr)
        return 1
    print("starting up, reading nothing", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
