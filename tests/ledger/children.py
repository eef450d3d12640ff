"""Child processes of the ledger tests: a module of ``tests.ledger`` run with this interpreter from the
repository root, writing one line to its stdout for each thing it has acknowledged."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import trio

from .conftest import Target

ROOT = Path(__file__).resolve().parents[2]


def child_command(module: str, *arguments: str) -> list[str]:
    """``python -m tests.ledger.<module> <arguments>``."""
    return [sys.executable, "-m", f"tests.ledger.{module}", *arguments]


def where(target: Target) -> str:
    """The target's ledger as a child takes it on its command line: the database URL or the file."""
    return target.database_url or str(target.ledger_file)


async def acknowledged_before_sigkill(command: list[str], acknowledgements: int) -> list[bytes]:
    """Start ``command``, read its lines until it has written ``acknowledgements`` of them, SIGKILL it,
    and give every whole line it wrote."""
    process = await trio.lowlevel.open_process(command, cwd=ROOT, stdout=-1)
    assert process.stdout is not None
    received = b""
    with trio.fail_after(120):
        while received.count(b"\n") < acknowledgements:
            chunk = await process.stdout.receive_some()
            assert chunk, "the child ended before it was killed"
            received += chunk
    process.send_signal(signal.SIGKILL)
    with trio.fail_after(30):
        await process.wait()
    assert process.returncode == -signal.SIGKILL
    await process.stdout.aclose()
    return received.split(b"\n")[:-1]
