"""What every forked test server would otherwise pay at its start, paid once in the forkserver instead.

`forked_server` preloads this module after the server's own: importing it runs the warm-up, in the forkserver
only (nothing else imports it). Each server forked afterwards inherits the result.

- The OpenAPI document (`build_openapi`): Pydantic builds each model's JSON Schema machinery on the first
  call, about 60 ms of CPU; later calls in the same process take about 2 ms. The server still builds its
  own document at each start, from its own catalog.
- The TLS context of the server's HTTP clients (`models.http_client.ssl_context`, made once a process):
  loading certifi's authorities costs about 25 ms of CPU, and a start made four clients.
- The collector: the imports leave about 190,000 objects the collector tracks, and a full collection walks
  them all (about 120 ms; the server collects once at its start, `freeze_startup_heap`, and the collector
  makes full passes of its own while the start allocates). Collected and frozen here (`gc.freeze`, as
  Python's documentation advises before forking), they are never walked again in a child, and the pages
  they sit on stay shared instead of being copied when a collection touches them.
"""

from __future__ import annotations

import gc

from auto_runtime.guides import load_guides
from auto_runtime.http.openapi import build_openapi
from auto_runtime.models.http_client import ssl_context
from auto_runtime.operations.runtime_catalog import build_catalog


def warm_up() -> None:
    """Build the OpenAPI document and the default TLS context once, then collect and freeze what the process
    holds."""
    guides = load_guides()
    build_openapi(build_catalog(guides), guides)
    ssl_context(None)
    gc.collect()
    gc.freeze()


warm_up()
