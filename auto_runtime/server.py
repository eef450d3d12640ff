"""The composition root: settings → ledger → supervision tree → one ASGI app → Hypercorn on Trio.

Nothing imports this module but the command line. A clean stop (SIGINT or SIGTERM) stops taking requests,
lets requests in flight finish within `GRACEFUL_STOP_SECONDS`, stops the supervision tree and exits 0.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from quart_trio import QuartTrio

from auto_runtime.auth.access import AccessGate
from auto_runtime.auth.api_keys import KeyEntry, KeyRing
from auto_runtime.auth.caller import Permission
from auto_runtime.functions.registry import function_types
from auto_runtime.guides import load_guides
from auto_runtime.http.app import PublishedDocuments, create_app
from auto_runtime.http.openapi import build_openapi
from auto_runtime.ledger import open_ledger
from auto_runtime.logs import configure_logging
from auto_runtime.models import ModelDirectory
from auto_runtime.models.providers import partly_configured
from auto_runtime.operations.dispatcher import Dispatcher
from auto_runtime.operations.runtime_catalog import build_catalog
from auto_runtime.operations.services import RuntimeServices
from auto_runtime.playbooks.definition_registry import DEFINITIONS_PROJECTION, DefinitionRegistry
from auto_runtime.playbooks.event_reads import EventReads
from auto_runtime.playbooks.playbook_registry import PLAYBOOKS_PROJECTION, PlaybookRegistry
from auto_runtime.playbooks.run_facts import RUNS_PROJECTION
from auto_runtime.playbooks.run_service import RunService
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


async def serve_runtime(loaded: LoadedSettings, environ: Mapping[str, str] | None = None) -> None:
    settings = loaded.settings
    for line in partly_configured(settings):
        log.info(line)
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
    async with open_ledger(
        ledger_file=None if settings.database_url else settings.ledger_file,
        database_url=settings.database_url,
        projections=RUNTIME_PROJECTIONS,
    ) as ledger:
        models = ModelDirectory.from_settings(settings, secrets=loaded.secret_values, environ=environ)
        types = function_types()
        definitions = DefinitionRegistry(ledger, types)
        services = RuntimeServices(
            playbooks=PlaybookRegistry(ledger),
            definitions=definitions,
            runs=RunService(ledger, definitions, types),
            events=EventReads(ledger),
            models=models,
        )
        dispatcher = Dispatcher(services=services, playbooks=services.playbooks)
        app = create_app(
            catalog=catalog, dispatcher=dispatcher, gate=gate, documents=documents, public_url=settings.public_url
        )
        try:
            await _serve_http(app, settings)
        finally:
            await models.aclose()
    log.info("stopped")


async def _serve_http(app: QuartTrio, settings: Settings) -> None:
    config = Config()
    config.bind = [f"{settings.host}:{settings.port}"]
    config.graceful_timeout = GRACEFUL_STOP_SECONDS
    config.accesslog = None
    config.errorlog = logging.getLogger("auto_runtime.hypercorn")
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_stop_on_signal, stop)
        log.info("listening on http://%s:%s", settings.host, settings.port)
        await serve(app, config, shutdown_trigger=stop.wait)
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
    trio.run(serve_runtime, loaded, environ)
    return 0
