"""Hypercorn's logger as the server configures it (`telemetry.server_log.ServerLog`): an error that is only the
client's connection breaking is one line without a traceback, any other error keeps its traceback, and a
request whose client went away is one line however many times Hypercorn reports it."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
from hypercorn.config import Config

from auto_runtime.telemetry.server_log import ServerLog


def server_log() -> ServerLog:
    config = Config()
    config.accesslog = None
    config.errorlog = logging.getLogger("auto_runtime.hypercorn")
    return ServerLog(config)


async def report(log: ServerLog, error: BaseException) -> None:
    try:
        raise error
    except BaseException:
        await log.exception("Error in ASGI Framework")


@pytest.mark.parametrize(
    "error",
    [
        trio.BrokenResourceError(),
        trio.ClosedResourceError(),
        ConnectionResetError(),
        BaseExceptionGroup("sending", [trio.BrokenResourceError(), BrokenPipeError()]),
    ],
    ids=["broken", "closed", "reset", "group"],
)
async def test_the_connection_breaking_is_one_line_without_a_traceback(
    caplog: pytest.LogCaptureFixture, error: BaseException
) -> None:
    with caplog.at_level(logging.DEBUG):
        await report(server_log(), error)
    assert [(r.name, r.levelno, r.exc_info) for r in caplog.records] == [("auto_runtime.http", logging.INFO, None)]
    assert caplog.records[0].getMessage().startswith("Error in ASGI Framework: the client went away")


async def test_any_other_error_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        await report(server_log(), BaseExceptionGroup("app", [trio.BrokenResourceError(), KeyError("x")]))
    (record,) = caplog.records
    assert record.name == "auto_runtime.hypercorn" and record.levelno == logging.ERROR and record.exc_info


async def test_a_request_whose_client_went_away_is_one_line(caplog: pytest.LogCaptureFixture) -> None:
    log = server_log()
    scope: Any = {"type": "http", "method": "GET", "path": "/v1/orgs/acme/connections/c1/link/secret-token"}
    with caplog.at_level(logging.DEBUG):
        await log.access(scope, None, 0.1)
        await log.access(scope, None, 0.1)
        await log.access({**scope, "path": "/health"}, {"type": "http.response.start", "status": 200}, 0.1)
    assert [r.getMessage() for r in caplog.records] == [
        "GET /v1/orgs/acme/connections/c1/link/[redacted]: the client went away before the answer was sent whole"
    ]
