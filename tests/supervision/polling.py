"""Waiting for state changed by another OS thread or process, where there is no Trio event to await."""

from __future__ import annotations

from collections.abc import Callable

import trio


async def wait_until(predicate: Callable[[], bool], *, timeout: float = 10.0) -> None:
    """Poll `predicate` until it holds; `timeout` only bounds a failure, it is not a measurement."""
    with trio.fail_after(timeout):
        while not predicate():  # noqa: ASYNC110 - the state changes in another OS thread or process
            await trio.sleep(0.005)
