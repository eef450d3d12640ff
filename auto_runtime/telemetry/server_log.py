"""Hypercorn's log as the server keeps it: its errors through `auto_runtime.hypercorn`, no access log, and one line
for a request whose client went away before its answer was sent whole.

Hypercorn tells its logger of every request it ends (`access`); it gives no response when the connection closed
before the answer's last byte was handed to the socket: the client disconnected while the answer was computed or
while it streamed. That is one `info` line here, with the method and the path (`logged_path`), and never a
traceback. Hypercorn may tell it twice for one request (a failed write and the read side each see the close, and
its handling of the first awaits before it forgets the stream), so the request's scope is marked once logged.

An error Hypercorn reports from the app (`exception`) that is only the connection breaking under the answer
(`CLIENT_GONE`, alone or in a group) is one `info` line too; any other error keeps its traceback.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, cast

import trio
from hypercorn.logging import Logger
from hypercorn.typing import ResponseSummary, WWWScope

from auto_runtime.telemetry.logged_paths import logged_path

log = logging.getLogger("auto_runtime.http")
LOGGED_MARK = "auto_runtime.client_gone_logged"
"""The key set in a request's scope once its client's going is logged."""

CLIENT_GONE: tuple[type[BaseException], ...] = (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError)
"""What sending to a client that has gone raises, from the socket up."""


def only_client_gone(error: BaseException) -> bool:
    """Whether `error` (or every leaf of a group) is the connection breaking, not a fault of the server."""
    if isinstance(error, BaseExceptionGroup):
        return all(only_client_gone(inner) for inner in error.exceptions)
    return isinstance(error, CLIENT_GONE)


def log_client_gone(method: str, path: str) -> None:
    log.info(
        "%s %s: the client went away before the answer was sent whole",
        method,
        path,
        extra={"method": method, "path": path, "client_gone": True},
    )


class ServerLog(Logger):
    """The logger Hypercorn is configured with (`Config.logger_class`); see the module docstring."""

    async def access(self, request: WWWScope, response: ResponseSummary | None, request_time: float) -> None:
        scope = cast(dict[str, Any], request)
        if response is None and scope["type"] == "http" and not scope.get(LOGGED_MARK):
            scope[LOGGED_MARK] = True
            log_client_gone(scope.get("method", ""), logged_path(scope.get("path", "")))

    async def exception(self, message: str, *args: Any, **kwargs: Any) -> None:
        error = sys.exc_info()[1]
        if error is not None and only_client_gone(error):
            log.info("%s: the client went away (%s)", message, type(error).__name__, extra={"client_gone": True})
            return
        await super().exception(message, *args, **kwargs)
