"""The liveness probe itself: it passes on a server that answers and fails on one that cannot answer."""

from __future__ import annotations

import signal

import httpx
import pytest

from tests.e2e.server_process import ServerProcess
from tests.security.liveness import kept_live


def test_a_server_that_answers_is_kept_live(server: ServerProcess, client: httpx.Client) -> None:
    with kept_live(server):
        assert client.get("/health").status_code == 200


def test_a_stopped_server_fails_the_probe(server: ServerProcess) -> None:
    try:
        with pytest.raises(AssertionError, match="a probe got no answer"), kept_live(server, timeout=2.0):
            server.process.send_signal(signal.SIGSTOP)
    finally:
        server.process.send_signal(signal.SIGCONT)
