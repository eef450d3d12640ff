"""The composition root: settings → ledger, sandbox, models → catalog and services → one ASGI app (HTTP and MCP)
→ Hypercorn on Trio, under one supervision tree.

The tree (design §4), built once the ledger and the sandbox's engine are open (a store or an engine that cannot
start is the start's one-line error) and logged once at `info`:

    root (one_for_one)
    ├─ ledger      (one_for_one) its store's actor (writer, or loop on PostgreSQL), stopped last: whatever is
    │              queued is committed before the actor ends
    ├─ secrets     (while `SECRETS_KEY_PREVIOUS` is set) seals again under `SECRETS_KEY` what the previous key
    │              sealed, before anything is served
    ├─ sandbox     (one_for_one) the worker pool's supervisor: worker-1 … worker-N, thread actors, transient
    ├─ tool-servers  (when `tool_servers` is set) the kept clients, and a supervisor of each stdio server's
    │              process; before the actors whose runs call tools
    ├─ playbooks   (one_for_one) the registries of keyed actors: `org-actors` (each org's playbook
    │              changes) and `playbook-actors` (each playbook's definitions), each actor spawned on its
    │              first message and passivated when idle; each playbook actor hosts its runs' actors
    │              (`run-actors[org/playbook]`: each run with a message in hand, its one writer, `runs.RunActor`;
    │              `playbooks.playbook_host`);
    │              and `recall-views` (each playbook's recall views, passed by the workflow host's keeper;
    │              each hosts one actor per view, `recall-view-actors[org/playbook]`: `recall_host.views_actor`);
    │              before the workflow host, which applies inputs through the run actors from its first sweep
    ├─ model-processes  (one_for_one) the prediction functions' model processes (`ModelPool`): a keeper that
    │              ends idle ones, and `PREDICTION_PROCESSES` permanent actors, each owning one process at a time
    ├─ workflows   (one_for_one) the workflow runtime's supervisor: timer-loop (it claims the lease first), then
    │              each follower a permanent child of its own, restarted alone: deliveries (the delivery attempts'
    │              calls), reply-reads (the conversations' reads), reactions (the ledger's feed: offers, triggers,
    │              schedules), recall-keeper (the recall views' passes)
    ├─ identity-keys  (where sign-in is on) the refresher of the identity service's signing keys, ready at once
    └─ http        Hypercorn, started last, stopped first

Services are built in dependency order, each with what it needs as constructor arguments; the two cycles (run
service and workflow runtime, workflow runtime and reactions) close through registration methods of the service
that receives (`RunService.serve_waiting` and `place_waiting_runs`, `WorkflowRuntime.add_due_handler` and
`add_follower`).

One clock (`server_clock`) is made at start and handed to the ledger (its records' times) and to every service
that arms, fires or stamps due work: the wall clock, or under `TEST_CLOCK` a test's `MovableClock`, whose control
route (`http.test_clock_route`) is then put in front of the app and whose moves wake the timer loop.

Nothing imports this module but the command line. A clean stop (SIGINT or SIGTERM) asks the root supervisor
to stop: its children stop in reverse start order, the HTTP server first stops taking requests and lets those
in flight finish within `GRACEFUL_STOP_SECONDS`; then the sandbox and the ledger close and the process exits 0.
"""

from __future__ import annotations

import errno
import gc
import json
import logging
import os
import signal
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, cast

import httpx
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from auto_runtime import __version__
from auto_runtime.asgi_messages import AsgiApp
from auto_runtime.auth.access import AccessGate
from auto_runtime.auth.access_tokens import AccessTokens
from auto_runtime.auth.api_keys import KeyEntry, KeyRing
from auto_runtime.auth.caller import Permission
from auto_runtime.auth.issuer_keys import IssuerKeys
from auto_runtime.aws.credentials import AwsDefaultChain
from auto_runtime.functions.computation.computation_type import ComputationType
from auto_runtime.functions.interaction import InteractionType
from auto_runtime.functions.prediction.approval import APPROVAL_PREFIX, Approval
from auto_runtime.functions.prediction.build_facts import DUE_PREFIX, is_build_input
from auto_runtime.functions.prediction.build_requests import BUILD_REQUEST_SOURCE, BuildRequests
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.cache_folder import CacheFolder
from auto_runtime.functions.prediction.candidates import Candidates
from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.functions.prediction.model_pool import ModelPool
from auto_runtime.functions.prediction.prediction_type import PredictionType
from auto_runtime.functions.prediction.questions import Questions
from auto_runtime.functions.prediction.run_handlers import serve_builds
from auto_runtime.functions.prediction.scoring import Scoring
from auto_runtime.functions.prediction.shadow import SHADOW_PREFIX, Shadow, arm_after_save
from auto_runtime.functions.prediction.versions import VERSIONS_PROJECTION
from auto_runtime.functions.reasoning import ReasoningType
from auto_runtime.functions.recall.recall_type import RecallType
from auto_runtime.functions.registry import function_types
from auto_runtime.functions.workflow.run_state import WORKFLOW_RUNS_PROJECTION
from auto_runtime.functions.workflow.workflow_type import WorkflowType
from auto_runtime.guides import Guide, load_guides
from auto_runtime.http.app import PublishedDocuments, create_app
from auto_runtime.http.framing import RequestFraming
from auto_runtime.http.openapi import build_openapi
from auto_runtime.http.test_clock_route import TestClockRoute
from auto_runtime.interaction_host.interaction_runtime import KEY_PREFIX as INTERACTION_KEY_PREFIX
from auto_runtime.interaction_host.interaction_runtime import InteractionRuntime
from auto_runtime.interaction_host.open_requests import INTERACTION_SOURCE, open_requests_projection
from auto_runtime.ledger import Ledger, LedgerStartError
from auto_runtime.ledger.object_content import S3ContentObjects
from auto_runtime.ledger.opening import LedgerStore, ledger_store
from auto_runtime.ledger.s3_requests import S3Endpoint, S3Requests
from auto_runtime.ledger.secrets_key import SecretsKeyError, secrets_key_of
from auto_runtime.ledger.serving import ledger_supervisor
from auto_runtime.logs import configure_logging
from auto_runtime.mcp_server.asgi import McpRoot
from auto_runtime.mcp_server.service import McpService
from auto_runtime.metrics import install_metrics
from auto_runtime.models import ModelDirectory
from auto_runtime.models.http_client import model_http_client, ssl_context
from auto_runtime.models.providers import partly_configured
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.dispatcher import Dispatcher
from auto_runtime.operations.runtime_catalog import build_catalog
from auto_runtime.operations.services import RuntimeServices
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.playbooks.analytics import PlaybookAnalytics
from auto_runtime.playbooks.definition_registry import DEFINITIONS_PROJECTION, DefinitionRegistry
from auto_runtime.playbooks.event_publishing import EventPublishing
from auto_runtime.playbooks.event_reads import EventReads
from auto_runtime.playbooks.playbook_registry import PLAYBOOKS_PROJECTION, PlaybookRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.recall_host.keeper import ViewKeeper
from auto_runtime.runs.facts import RUNS_PROJECTION
from auto_runtime.sandbox.artifact import ArtifactMismatchError, verify_artifacts
from auto_runtime.sandbox.lifetime import Sandbox, open_sandbox
from auto_runtime.server_clock import TEST_CLOCK_PATH, WALL_CLOCK, MovableClock, ServerClock
from auto_runtime.settings import LoadedSettings, Settings, SettingsError, is_local_mode, load_settings
from auto_runtime.settings.variables import Mode
from auto_runtime.start_banner import Announcer
from auto_runtime.supervision import ChildContext, ChildSpec, Restart, Supervisor, describe_tree
from auto_runtime.telemetry import install_tracing
from auto_runtime.telemetry.asgi import RequestTelemetry
from auto_runtime.telemetry.server_log import ServerLog
from auto_runtime.tools import ToolServers
from auto_runtime.tools.connection_servers import ConnectionServers
from auto_runtime.tools.connections import Connections, Who
from auto_runtime.tools.playbook_servers import PlaybookServers
from auto_runtime.tools.playbook_tools import PlaybookTools
from auto_runtime.tools.scrubbing import ScrubbingFilter, SecretSet
from auto_runtime.tools.secret_store import SecretSealer, SecretStore
from auto_runtime.tools.tool_server_set import ToolServerSet
from auto_runtime.workflow_host.reactions import REACTION_PROJECTIONS, Reactions
from auto_runtime.workflow_host.schedules import TRIGGER_KEY_PREFIX
from auto_runtime.workflow_host.workflow_runtime import WorkflowRuntime

log = logging.getLogger("auto_runtime.server")
GRACEFUL_STOP_SECONDS = 5.0
S3_DEFAULT_REGION = "us-east-1"
"""The region S3 requests are signed for when `AWS_REGION` is not set."""
CLOSE_SECONDS = 30.0
"""How long the ledger and the sandbox may take to close (the writer commits what is queued; a sandbox job is
bounded by its deadline) before their child is cancelled."""
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
RUNTIME_PROJECTIONS = (
    PLAYBOOKS_PROJECTION,
    DEFINITIONS_PROJECTION,
    RUNS_PROJECTION,
    WORKFLOW_RUNS_PROJECTION,
    open_requests_projection((INTERACTION_SOURCE, BUILD_REQUEST_SOURCE)),
    *REACTION_PROJECTIONS,
    VERSIONS_PROJECTION,
)


def server_id_of() -> str:
    """This process's name in the workflow lease: host, process id and a random part (a restarted process with
    the same pid is another holder)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


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


def issuer_keys_of(settings: Settings, clock: ServerClock) -> IssuerKeys | None:
    """Where sign-in is on, the identity service's keys, fetched through the outbound proxy and certificate
    authorities the settings give (the client model calls use), spaced and aged on the server's `clock`."""
    if settings.public_url is None:
        return None
    return IssuerKeys(settings.identity_issuer, partial(model_http_client, settings), clock=clock)


def cache_folder_of(settings: Settings) -> Path:
    """Where the compiled sandbox module is cached between starts: beside a SQLite ledger, else the home's."""
    base = settings.ledger_file.parent if settings.ledger_file is not None else Path.home() / ".auto-runtime"
    return base / "cache"


def tools_may_change_outside(settings: Settings) -> bool:
    """The † condition of spec mcp.md §4.2, read once at start: a tool server is configured, or people may add
    connections on a runtime where a person can add one (local mode, or sign-in on)."""
    person_may_add = settings.local_mode or settings.public_url is not None
    return bool(settings.tool_servers) or (settings.connections.people_may_add and person_may_add)


def secret_store_of(ledger: Ledger, settings: Settings) -> SecretStore:
    """The secret store over the ledger: sealed under `SECRETS_KEY` (or a SQLite ledger's `secrets.key`),
    opening what `SECRETS_KEY_PREVIOUS` sealed while it is set."""
    key = secrets_key_of(settings.secrets_key, settings.ledger_file)
    return SecretStore(ledger, SecretSealer(key, previous=settings.secrets_key_previous))


def runtime_origin(settings: Settings) -> str:
    """The origin of Studio's connect links: `PUBLIC_URL`, or the server's own address."""
    if settings.public_url is not None:
        return settings.public_url.rstrip("/")
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    return f"http://{host}:{settings.port}"


def connection_servers_of(
    ledger: Ledger,
    settings: Settings,
    secret_set: SecretSet,
    environ: Mapping[str, str],
    clock: ServerClock = WALL_CLOCK,
) -> ConnectionServers:
    """The connections people add, and the org's connections as tool servers (their limits on `clock`); the
    variables a reference may name are read now, at start (seeds, `connections.variables`)."""
    policy = settings.connections
    connections = Connections(
        ledger,
        secret_store_of(ledger, settings),
        policy,
        who=Who(local_mode=settings.local_mode, signs_people_in=settings.public_url is not None),
        origin=runtime_origin(settings),
        configured_names=frozenset(settings.tool_servers),
        providers=frozenset(gateway.name for gateway in settings.model_gateways),
        secret_set=secret_set,
    )
    values = {variable: environ[variable] for variable in policy.variables if environ.get(variable)}
    servers = ConnectionServers(connections, reference_values=values, clock=clock)
    connections.on_removed = servers.forget
    return servers


def actor_limits_of(settings: Settings) -> ActorLimits:
    return ActorLimits(
        idle_seconds=settings.playbook_idle_time.total_seconds(),
        max_live=settings.playbook_actors_live,
        capacity=settings.actor_mailbox_capacity,
    )


def compose_services(
    ledger: Ledger,
    sandbox: Sandbox,
    models: ModelDirectory,
    settings: Settings,
    server_id: str,
    tools: ToolServerSet | None = None,
    connections: ConnectionServers | None = None,
    clock: ServerClock | None = None,
) -> RuntimeServices:
    """The services over the ledger, the sandbox and the models, each reading `clock` (the wall clock unless a
    test's) for the times it records and arms due work at; a move of the clock wakes the timer loop."""
    clock = clock or ServerClock()
    reached: ToolServers | None = tools
    if connections is not None:
        reached = PlaybookServers(tools, connections, connections.secret_set)
    datasets = Datasets(ledger)
    cache = CacheFolder(settings.prediction_cache_dir)
    model_pool = ModelPool(
        settings.prediction_processes, settings.prediction_builds_at_once, settings.prediction_process_memory
    )
    builds = Builds(
        ledger,
        datasets,
        settings.prediction_builds_per_day,
        settings.prediction_builds_at_once,
        tools=reached,
        clock=clock.now,
    )
    types = function_types(
        ComputationType(sandbox.engine, sandbox.pool, sandbox.checkers),
        ReasoningType(models, reached, settings.reasoning_max_input_tokens),
        InteractionType(reached),
        WorkflowType(sandbox.engine, sandbox.checkers, settings.workflow_max_duration),
        RecallType(sandbox.engine, sandbox.pool, sandbox.checkers, ledger),
        PredictionType(ledger, datasets, Questions(builds, datasets, model_pool, cache)),
    )
    limits = actor_limits_of(settings)
    most_active = {"recall": settings.recall_max_functions, "prediction": settings.prediction_max_functions}
    definitions = DefinitionRegistry(ledger, types, limits, most_active)
    runs = RunService(ledger, definitions, types)
    serve_builds(builds, definitions.actors)
    run_actors = definitions.actors.runs
    workflows = WorkflowRuntime(
        ledger,
        sandbox.engine,
        runs,
        server_id=server_id,
        runtime_version=__version__,
        max_duration=settings.workflow_max_duration,
        sweep=settings.workflow_sweep_interval,
        nested_runs=settings.workflow_nested_runs,
        max_open_calls=settings.workflow_max_open_calls,
        workers=sandbox.pool.workers,
        limits=limits,
        clock=clock,
    )
    clock.on_moved(workflows.loop.wake)
    runs.serve_waiting("workflow", workflows)
    runs.place_waiting_runs(workflows.new_run_id)
    interactions = InteractionRuntime(
        ledger,
        runs,
        open_limit=settings.interaction_open_requests,
        tools=reached,
        wake=workflows.loop.wake,
        clock=clock.now,
    )
    runs.serve_waiting("interaction", interactions)
    interactions.answer_for("prediction", BuildRequests(builds, run_actors), BUILD_REQUEST_SOURCE)
    workflows.add_due_handler(INTERACTION_KEY_PREFIX, interactions.fire)
    workflows.add_follower("deliveries", interactions.deliveries.follow)
    workflows.add_follower("reply-reads", interactions.deliveries.reads.follow)
    runs.serve_waiting("prediction", builds, is_build_input)
    builds.wake_with(workflows.loop.wake)
    workflows.add_due_handler(
        DUE_PREFIX, Scoring(builds, datasets, model_pool, cache, run_actors, workflows.fences).fire
    )
    workflows.add_due_handler(SHADOW_PREFIX, Shadow(builds, datasets, model_pool, cache).fire)
    approval = Approval(builds, runs)
    workflows.add_due_handler(APPROVAL_PREFIX, approval.fire)
    reactions = Reactions(
        workflows.store,
        definitions,
        sandbox.engine,
        clock=clock.now_ms,
        on_applied=workflows.after_applied,
        record_hooks=[partial(arm_after_save, ledger), approval.decided_after_run],
        fences=workflows.fences,
    )
    workflows.add_due_handler(TRIGGER_KEY_PREFIX, reactions.fire)
    workflows.add_follower("reactions", reactions.follow)
    views = ViewKeeper(
        ledger,
        sandbox.pool,
        max_rebuilds=settings.recall_max_rebuilds,
        playbooks_at_once=settings.recall_playbooks_at_once,
        sweep=settings.workflow_sweep_interval,
        limits=limits,
    )
    workflows.add_follower("recall-keeper", views.follow)
    return RuntimeServices(
        playbooks=PlaybookRegistry(ledger, limits),
        definitions=definitions,
        runs=runs,
        events=EventReads(ledger),
        publishing=EventPublishing(ledger, clock.now),
        analytics=PlaybookAnalytics(ledger, clock.now),
        models=models,
        workflows=workflows,
        tools=PlaybookTools(tools, ledger, connections, connections.secret_set if connections else None, clock),
        connections=connections.connections if connections is not None else None,
        interactions=interactions,
        recall_views=views.actors,
        prediction_datasets=datasets,
        model_pool=model_pool,
        prediction_builds=builds,
        prediction_cache=cache,
        prediction_candidates=Candidates(builds, model_pool, cache, run_actors),
    )


def workflows_child(workflows: WorkflowRuntime) -> ChildSpec:
    """The workflow runtime's supervisor (its timer loop, then its followers) as a child of the root, started before
    the HTTP child (the partitions are claimed before the first request) and stopped after it. The server marks it
    stopping as soon as it is asked to stop, so requests still in flight while HTTP drains answer starts and sent
    events `unavailable`; its children stop in reverse order, the timer loop last, which releases its partitions
    for the other servers."""
    return workflows.child_spec(shutdown=GRACEFUL_STOP_SECONDS)


def ledger_child(ledger: LedgerStore) -> ChildSpec:
    """The ledger as the root's first child: opened before the tree starts (a start error is the one-line
    `LedgerStartError`), it runs the ledger's supervisor, whose child serves the store's actor (the SQLite writer,
    the PostgreSQL loop; `ledger.serving`), and is closed when the tree stops it, after every other child: the
    actor commits what is queued first. The supervisor failing (its actor crashing too often) fails this child,
    so the root restarts the subtree or gives up in turn."""
    supervisor = ledger_supervisor(ledger)

    async def run(context: ChildContext) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            context.started()
            await context.wait_stop_requested()
            await supervisor.stop()
        await ledger.stop()

    return ChildSpec("ledger", run, restart=Restart.PERMANENT, shutdown=CLOSE_SECONDS, subtree=supervisor.tree)


def secrets_child(store: SecretStore) -> ChildSpec:
    """The re-seal of `SECRETS_KEY_PREVIOUS` as a child of the root, after the ledger (whose writer it needs) and
    before anything is served: it reports started once every value sealed under the previous key is sealed again
    under the current one, then holds nothing until it is stopped."""

    async def run(context: ChildContext) -> None:
        await store.reseal()
        context.started()
        await context.wait_stop_requested()

    return ChildSpec("secrets", run, restart=Restart.TRANSIENT, shutdown=GRACEFUL_STOP_SECONDS)


def _resealing(services: RuntimeServices) -> list[ChildSpec]:
    """The `secrets` child, while `SECRETS_KEY_PREVIOUS` is set (else there is nothing to seal again)."""
    connections = services.connections
    if connections is None or connections.store.sealer.previous is None:
        return []
    return [secrets_child(connections.store)]


def sandbox_child(sandbox: Sandbox) -> ChildSpec:
    """The sandbox's worker pool as a child of the root, after the ledger: a supervisor (one_for_one) of its
    worker thread actors, which reports started once every worker runs, before the services that submit jobs
    start; it is stopped after them (each worker ends once its job has). `open_sandbox` closes it again."""
    return sandbox.pool.child_spec(shutdown=CLOSE_SECONDS)


def playbooks_supervisor(services: RuntimeServices) -> Supervisor:
    """The supervisor of the keyed actors: the org actors (each org's playbook stream) and the playbook actors
    (each playbook's definitions, each hosting its playbook's run id actors and workflow run actors), and the
    recall views actors (each playbook's recall views, each hosting one actor per view: `recall_host.views_actor`),
    one registry each, every actor spawned on its first message. A registry's graceful stop passivates its live
    actors after the message each has in flight (a playbook actor's run actors first). It starts before the
    workflow host, whose first sweep already applies inputs through the run actors, and stops after it."""
    return Supervisor(
        "playbooks",
        [
            services.playbooks.actors.child_spec(),
            services.definitions.actors.child_spec(),
            *([services.recall_views.child_spec()] if services.recall_views is not None else []),
        ],
    )


def root_supervisor(
    ledger: LedgerStore,
    sandbox: Sandbox,
    services: RuntimeServices,
    http: ChildSpec,
    issuer_keys: IssuerKeys | None = None,
) -> Supervisor:
    """The root of the tree, one_for_one, its children in start order (see the module docstring)."""
    return Supervisor(
        "root",
        [
            ledger_child(ledger),
            *_resealing(services),
            sandbox_child(sandbox),
            *([services.tools.servers.child_spec()] if services.tools and services.tools.servers else []),
            playbooks_supervisor(services).child_spec(),
            *([services.model_pool.child_spec()] if services.model_pool is not None else []),
            workflows_child(services.workflows),
            *([issuer_keys.child_spec()] if issuer_keys is not None else []),
            http,
        ],
    )


def compose_app(
    settings: Settings,
    catalog: Catalog,
    guides: Mapping[str, Guide],
    services: RuntimeServices,
    issuer_keys: IssuerKeys | None = None,
    clock: ServerClock | None = None,
) -> AsgiApp:
    """One ASGI callable: the request's id and span, the framing checks, then the MCP endpoints in front of the
    Quart-Trio app, both over one dispatcher. With `issuer_keys` (sign-in on), access tokens are taken beside
    API keys. With a test's `MovableClock`, its control route comes first (`http.test_clock_route`)."""
    documents = PublishedDocuments(
        openapi=json.dumps(build_openapi(catalog, guides), separators=(",", ":")).encode("utf-8"),
        guides=guides,
    )
    gate = AccessGate.build(
        local_mode=is_local_mode(settings.host, settings.public_url, settings.api_keys),
        keys=key_ring_of(settings),
        allowed_origins=settings.allowed_origins,
        tokens=(
            AccessTokens(audience=settings.public_url, issuer=settings.identity_issuer, keys=issuer_keys)
            if issuer_keys is not None and settings.public_url is not None
            else None
        ),
    )
    dispatcher = Dispatcher(services=services, playbooks=services.playbooks)
    app = create_app(
        catalog=catalog,
        dispatcher=dispatcher,
        gate=gate,
        documents=documents,
        public_url=settings.public_url,
        metrics_served=settings.metrics == "on",
    )
    mcp = McpService(
        catalog=catalog,
        dispatcher=dispatcher,
        guides=guides,
        definition_types=services.definitions.types,
        outside_effects=tools_may_change_outside(settings),
        secrets_keys=[
            key
            for key in (secrets_key_of(settings.secrets_key, settings.ledger_file), settings.secrets_key_previous)
            if key
        ],
    )
    served = RequestTelemetry(
        RequestFraming(
            McpRoot(
                app=app,
                service=mcp,
                gate=gate,
                public_url=settings.public_url,
                identity_issuer=settings.identity_issuer,
            )
        )
    )
    return TestClockRoute(served, clock) if isinstance(clock, MovableClock) else served


def http_child(app: AsgiApp, settings: Settings) -> ChildSpec:
    """Hypercorn as a child of the root: started once it listens, stopped by finishing requests in flight."""
    config = Config()
    config.bind = [f"{settings.host}:{settings.port}"]
    config.graceful_timeout = GRACEFUL_STOP_SECONDS
    config.accesslog = None
    config.errorlog = logging.getLogger("auto_runtime.hypercorn")
    config.logger_class = ServerLog

    async def run(context: ChildContext) -> None:
        stopping = trio.Event()
        context.on_stop_requested(stopping.set)
        async with trio.open_nursery() as nursery:
            # Hypercorn's ASGI types and Starlette's (which the root uses) describe the same protocol differently.
            await nursery.start(partial(serve, cast(Any, app), config, shutdown_trigger=stopping.wait))
            log.info("listening on http://%s:%s", settings.host, settings.port)
            context.started()

    return ChildSpec("http", run, restart=Restart.TRANSIENT, shutdown=GRACEFUL_STOP_SECONDS + 1)


def freeze_startup_heap() -> None:
    """Collect once, then move every object left into the collector's permanent generation (`gc.freeze`); called
    once the supervision tree has started.

    A full collection walks every object the collector tracks, and the imports and the start leave about
    185,000 of them, nearly all kept for the process's life: walking them held the interpreter for about
    110 ms on a 2-core machine, a pause of every request, run and timer in flight each time the collector
    made a full pass. Frozen, they are never walked again; what the server makes afterwards is collected as
    before, and an object of the start that is dropped later is still freed when its last reference goes."""
    gc.collect()
    gc.freeze()


async def _wait_for_signal(ready: Callable[[], None]) -> None:
    """Return at the first SIGINT or SIGTERM; `ready` is called once both are caught, so that whatever it tells
    the person (the banner) holds: a signal from then on stops the server cleanly."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        ready()
        async for received in signals:
            log.info("received %s; stopping", signal.Signals(received).name)
            return


async def serve_runtime(
    loaded: LoadedSettings, environ: Mapping[str, str] | None = None, announcer: Announcer | None = None
) -> None:
    """Serve until SIGINT or SIGTERM; `announcer` prints the banner once the supervision tree has started."""
    settings = loaded.settings
    for line in partly_configured(settings):
        log.info(line)
    guides = load_guides()
    catalog = build_catalog(guides)
    clock = MovableClock() if settings.test_clock else ServerClock()
    if clock.movable:
        log.warning("TEST_CLOCK is on: any caller on this machine may move this server's clock (%s)", TEST_CLOCK_PATH)
    async with content_objects_of(settings, os.environ if environ is None else environ) as content_objects:
        ledger = ledger_store(
            ledger_file=None if settings.database_url else settings.ledger_file,
            database_url=settings.database_url,
            projections=RUNTIME_PROJECTIONS,
            database_credentials=settings.database_credentials,
            environ=environ,
            content_objects=content_objects,
            partitions=settings.workflow_partitions,
        )
        ledger.recorded_clock = clock.now_us
        await ledger.start()
        partitioning = ledger.partitioning
        if partitioning.disagrees:
            log.warning(
                "WORKFLOW_PARTITIONS is %d but the ledger keeps %d partitions, fixed when it was made; keeping %d",
                partitioning.asked,
                partitioning.count,
                partitioning.count,
            )
        try:
            await _serve_on(ledger, loaded, environ, guides, catalog, announcer or Announcer(None), clock)
        finally:
            await ledger.stop()  # the tree stopped it already, unless something failed before the tree ran
    log.info("stopped")


@asynccontextmanager
async def content_objects_of(settings: Settings, environ: Mapping[str, str]) -> AsyncIterator[S3ContentObjects]:
    """The object store of the ledger's content for the life of the block: new content goes to
    `CONTENT_STORE_URL` when it is set, and content a row says is in S3 is read from there whether it is set or
    not (see `ledger.content`). Requests go through the settings' proxy and certificate authorities, signed
    for `AWS_REGION` (else `S3_DEFAULT_REGION`), to `AWS_ENDPOINT_URL` when set, with the AWS default
    credential chain read from `environ`."""
    location = settings.content_store_url
    if location is None:
        log.info("content is kept in the ledger's database")
    else:
        log.info("content is kept in s3://%s/%s", location.bucket, location.prefix)
    client = model_http_client(settings)
    # credential endpoints: link-local, never proxied
    local_client = httpx.AsyncClient(trust_env=False, verify=ssl_context(None))
    try:
        endpoint = S3Endpoint(settings.aws_region or S3_DEFAULT_REGION, settings.aws_endpoint_url)
        requests = S3Requests(client, AwsDefaultChain(local_client, environ), endpoint)
        if location is None:
            yield S3ContentObjects(requests, None)
        else:
            yield S3ContentObjects(requests, location.bucket, location.prefix)
    finally:
        with trio.CancelScope(shield=True):
            await client.aclose()
            await local_client.aclose()


async def _serve_on(
    ledger: LedgerStore,
    loaded: LoadedSettings,
    environ: Mapping[str, str] | None,
    guides: Mapping[str, Guide],
    catalog: Catalog,
    announcer: Announcer,
    clock: ServerClock,
) -> None:
    settings = loaded.settings
    async with open_sandbox(cache_folder_of(settings), settings.computation_workers) as sandbox:
        models = ModelDirectory.from_settings(settings, secrets=loaded.secret_values, environ=environ)
        secret_set = SecretSet(loaded.secret_values)
        for handler in logging.getLogger().handlers:
            handler.addFilter(ScrubbingFilter(secret_set))
        connections = connection_servers_of(
            ledger, settings, secret_set, os.environ if environ is None else environ, clock
        )
        tools = (
            ToolServerSet.from_settings(loaded, Path.cwd(), secret_set=secret_set, clock=clock)
            if settings.tool_servers
            else None
        )
        if tools is not None:
            try:
                await tools.prepare()  # an HTTP API's document refused stops the start, naming its entry
            except SettingsError:
                await tools.aclose()
                raise
        try:
            services = compose_services(ledger, sandbox, models, settings, server_id_of(), tools, connections, clock)
            if services.prediction_cache is not None:
                await trio.to_thread.run_sync(services.prediction_cache.prepare)
            issuer_keys = issuer_keys_of(settings, clock)
            app = compose_app(settings, catalog, guides, services, issuer_keys, clock)
            root = root_supervisor(ledger, sandbox, services, http_child(app, settings), issuer_keys)
            async with trio.open_nursery() as nursery:
                await nursery.start(root.run)
                freeze_startup_heap()
                tree = root.tree()
                log.info("supervision tree: %s", describe_tree(tree), extra={"tree": tree})
                await _wait_for_signal(partial(announcer.started, settings))
                services.workflows.stopping = True
                await root.stop()
        finally:
            await connections.aclose()
            await models.aclose()


def run_server(environ: Mapping[str, str], cwd: Path, mode: Mode = "command_line", *, quiet: bool = False) -> int:
    """Serve until SIGINT or SIGTERM; ``mode`` picks the command line's defaults or the image's. The banner and the
    stop line go to standard error whatever the log level, unless ``quiet`` (`start_banner`)."""
    announcer = Announcer(None if quiet else sys.stderr)
    try:
        loaded = load_settings(environ, cwd, mode)
    except SettingsError as error:
        print(str(error), file=sys.stderr)
        return 1
    try:
        verify_artifacts()
    except ArtifactMismatchError as error:
        print(str(error), file=sys.stderr)
        return 1
    configure_logging(loaded.settings.log_format, loaded.settings.log_level)
    for line in loaded.startup_lines():
        log.info(line)
    settings = loaded.settings
    tracing = install_tracing(settings.otel_exporter_otlp_endpoint, settings.telemetry_content, __version__, environ)
    metrics = install_metrics(settings.metrics == "on", settings.otel_exporter_otlp_endpoint, __version__, environ)
    try:
        trio.run(serve_runtime, loaded, environ, announcer)
    except (SecretsKeyError, LedgerStartError, SettingsError) as error:
        print(str(error), file=sys.stderr)
        return 1
    except OSError as error:
        if error.errno not in NO_SPACE:
            raise
        print(full_disk_line(error, loaded.settings), file=sys.stderr)
        return 1
    finally:
        metrics.shutdown()
        tracing.shutdown()
        gc.collect()
    announcer.stopped()
    return 0


def full_disk_line(error: OSError, settings: Settings) -> str:
    """The one line for a start that met a full disk outside the ledger itself (the key file, the sandbox's
    cache): it names `LEDGER_FILE` when the file is in its folder, where those are kept."""
    where = Path(error.filename) if error.filename else cache_folder_of(settings)
    ledger_file = settings.ledger_file
    if settings.database_url is None and ledger_file is not None and where.is_relative_to(ledger_file.parent):
        return f"LEDGER_FILE: the disk of {ledger_file.parent} is full; free some space and start again"
    return f"{where}: the disk is full; free some space and start again"
