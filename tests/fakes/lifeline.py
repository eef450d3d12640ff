"""A process the tests start ends when the test process that started it does.

A test worker that dies (a crash, a SIGKILL) runs no fixture teardown: the fakes and servers it started would
live on, holding their ports and databases (they were found 18 minutes after a crash). Each of them calls
`end_with(pid)` as it starts: a thread waits on a pidfd of the test process (`os.pidfd_open`, readable once that
process has ended) and then sends this process `signum`, the signal it stops cleanly on.

A fake stops on SIGINT (a `KeyboardInterrupt` in its event loop), the signal its test sends it too
(`gateway_process`): `end_with_parent` puts Python's own SIGINT handler back first, since a process started from
one that ignores SIGINT ignores it too (a shell's background job does, and so every fake of a suite run that
way), and Trio and asyncio only turn SIGINT into `KeyboardInterrupt` when that handler is in place. Call it from
the main thread, before the event loop starts.
"""

from __future__ import annotations

import os
import select
import signal
import threading


def end_with(pid: int, signum: int = signal.SIGINT) -> None:
    """Send this process `signum` once process `pid` has ended (at once if it already has)."""
    try:
        ended = os.pidfd_open(pid)
    except ProcessLookupError:
        os.kill(os.getpid(), signum)
        return

    def watch() -> None:
        select.select([ended], [], [])
        os.kill(os.getpid(), signum)

    threading.Thread(target=watch, name=f"end-with-{pid}", daemon=True).start()


def end_with_parent() -> None:
    """Stop on SIGINT, and get it when the process that started this one (the test process) ends."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    end_with(os.getppid(), signal.SIGINT)
