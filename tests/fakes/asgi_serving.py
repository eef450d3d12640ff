"""Serving a fake's ASGI app on a loopback port that the test reads from its first line of output."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

from hypercorn.asyncio import serve
from hypercorn.config import Config

from tests.fakes.lifeline import end_with_parent


def serve_on_loopback(app: Any, port: int, path: str = "", tls: tuple[Path, Path] | None = None) -> None:
    """Bind 127.0.0.1:`port` (0 for any), print ``listening on http://127.0.0.1:<port><path>``, serve forever.

    With `tls` (a certificate and its key, PEM) it serves https, and the line says so."""
    end_with_parent()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    config = Config()
    config.bind = [f"fd://{listener.fileno()}"]
    config.accesslog = None
    config.graceful_timeout = 1.0
    scheme = "http"
    if tls is not None:
        config.certfile, config.keyfile = str(tls[0]), str(tls[1])
        scheme = "https"

    async def main() -> None:
        task = asyncio.ensure_future(serve(app, config))
        await asyncio.sleep(0)
        print(f"listening on {scheme}://127.0.0.1:{listener.getsockname()[1]}{path}", flush=True)
        await task

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return
