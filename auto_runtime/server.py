"""The composition root: settings → ledger → supervision tree → one ASGI app → Hypercorn on Trio.

Nothing imports this module but the command line. A clean stop (SIGINT or SIGTERM) stops taking requests,
lets requests in flight finish within `GRACEFUL_STOP_SECONDS`, stops the supervision tree and exits 0.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from auto_runtime.auth.access import AccessGate
from auto_runtime.auth.api_keys import KeyEntry, KeyRing
from auto_runtime.auth.caller import Permission
from auto_runtime.functions.computation.computation_type import ComputationType
from auto_runtime.functions.registry import function_types
from auto_runtime.guides import load_guides
from auto_runtime.http.app import PublishedDocuments, create_app
from auto_runtime.http.openapi import build_openapi
from auto_runtime.ledger import open_ledger
from auto_runtime.logs import configure_logging
from auto_runtime.mcp_server.asgi import McpRoot
from auto_runtime.mcp_server.service import McpService
from auto_runtime.operations.dispatcher import Dispatcher
from auto_runtime.operations.runtime_catalog import build_catalog
from auto_runtime.operations.services import RuntimeServices
from auto_runtime.playbooks.analytics import PlaybookAnalytics
from auto_runtime.playbooks.definition_registry import DEFINITIONS_PROJECTION, DefinitionRegistry
from auto_runtime.playbooks.event_publishing import EventPublishing
from auto_runtime.playbooks.event_reads import EventReads
from auto_runtime.playbooks.playbook_registry import PLAYBOOKS_PROJECTION, PlaybookRegistry
from auto_runtime.playbooks.run_facts import RUNS_PROJECTION
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.sandbox import Checkers, SandboxEngine, SandboxPool
from auto_runtime.settings import LoadedSettings, Settings, SettingsError, is_local_mode, load_settings

log = logging.getLogger("auto_runtime.server")
GRACEFUL_STOP_SECONDS = 5.0
RUNTIME_PROJECTIONS = (PLAYBOOKS_PROJECTION, DEFINITIONS_PROJECTION, RUNS_PROJECTION)


def key_ring_of(settings: Settings) -> KeyRing:
    return KeyRing(
        KeyEntry(
            id=entry.id,
            org=entry.org,
            permissions=tuple(Permission(p) for p in entry.permissions),
            sha256=entry.sha256,
            playbooks=tuple(entry.playbooks) if entry.playbooks is not None else None,
        )
        for entry in settings.api_keys
    )


async def _stop_on_signal(stop: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for received in signals:
            log.info("received %s; stopping", signal.Signals(received).name)
            stop.set()
            return


def cache_folder_of(settings: Settings) -> Path:
    """Where the compiled sandbox module is cached between starts: beside a SQLite ledger, else the home's."""
    base = settings.ledger_file.parent if settings.ledger_file is not None else Path.home() / ".auto-runtime"
    return base / "cache"


@dataclass(frozen=True)
class Sandbox:
    engine: SandboxEngine
    pool: SandboxPool
    checkers: Checkers[Any]


@asynccontextmanager
async def open_sandbox(cache_folder: Path, workers: int) -> AsyncIterator[Sandbox]:
    """One engine, the run workers and the save-time checkers, for the life of the server."""
    engine = await trio.to_thread.run_sync(SandboxEngine, cache_folder)
    pool = SandboxPool(engine, workers)
    checkers: Checkers[Any] = Checkers()
    try:
        yield Sandbox(engine, pool, checkers)
    finally:
        pool.close()
        checkers.close()
        engine.close()


def tools_may_change_outside(settings: Settings) -> bool:
    """The † condition of spec mcp.md §4.2, read once at start: a tool server is configured, or people may add
    connections on a runtime where a person can add one (local mode, or sign-in on)."""
    person_may_add = settings.local_mode or settings.public_url is not None
    return bool(settings.tool_servers) or (settings.connections.people_may_add and person_may_add)


async def serve_runtime(loaded: LoadedSettings) -> None:
    settings = loaded.settings
    guides = load_guides()
    catalog = build_catalog(guides)
    documents = PublishedDocuments(
        openapi=json.dumps(build_openapi(catalog, guides), separators=(",", ":")).encode("utf-8"),
        guides=guides,
    )
    gate = AccessGate.build(
        local_mode=is_local_mode(settings.host, settings.public_url, settings.api_keys),
        keys=key_ring_of(settings),
        allowed_origins=settings.allowed_origins,
    )
    async with (
        open_ledger(
            ledger_file=None if settings.database_url else settings.ledger_file,
            database_url=settings.database_url,
            projections=RUNTIME_PROJECTIONS,
        ) as ledger,
        open_sandbox(cache_folder_of(settings), settings.computation_workers) as sandbox,
    ):
        types = function_types(ComputationType(sandbox.engine, sandbox.pool, sandbox.checkers))
        definitions = DefinitionRegistry(ledger, types)
        services = RuntimeServices(
            playbooks=PlaybookRegistry(ledger),
            definitions=definitions,
            runs=RunService(ledger, definitions, types),
            events=EventReads(ledger),
            publishing=EventPublishing(ledger),
            analytics=PlaybookAnalytics(ledger),
        )
        dispatcher = Dispatcher(services=services, playbooks=services.playbooks)
        app = create_app(
            catalog=catalog, dispatcher=dispatcher, gate=gate, documents=documents, public_url=settings.public_url
        )
        mcp = McpService(
            catalog=catalog,
            dispatcher=dispatcher,
            guides=guides,
            definition_types=types,
            outside_effects=tools_may_change_outside(settings),
            secrets_keys=[key for key in (settings.secrets_key, settings.secrets_key_previous) if key],
        )
        root = McpRoot(
            app=app, service=mcp, gate=gate, public_url=settings.public_url, identity_issuer=settings.identity_issuer
        )
        await _serve_http(root, settings)
    log.info("stopped")


async def _serve_http(app: McpRoot, settings: Settings) -> None:
    config = Config()
    config.bind = [f"{settings.host}:{settings.port}"]
    config.graceful_timeout = GRACEFUL_STOP_SECONDS
    config.accesslog = None
    config.errorlog = logging.getLogger("auto_runtime.hypercorn")
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_stop_on_signal, stop)
        log.info("listening on http://%s:%s", settings.host, settings.port)
        # Hypercorn's ASGI types and Starlette's (which McpRoot uses) describe the same protocol differently.
        await serve(cast(Any, app), config, shutdown_trigger=stop.wait)
        nursery.cancel_scope.cancel()


def run_server(environ: Mapping[str, str], cwd: Path) -> int:
    try:
        loaded = load_settings(environ, cwd)
    except SettingsError as error:
        print(str(error), file=sys.stderr)
        return 1
    configure_logging(loaded.settings.log_format, loaded.settings.log_level)
    for line in loaded.startup_lines():
        log.info(line)
    trio.run(serve_runtime, loaded)
    return 0
