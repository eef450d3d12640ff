"""Starting a build and reading it (prediction-format §8.1–§8.5): the run service hands the runs whose input is
`{ "build": {} }` here (`RunService.serve_waiting` with `is_build_input`).

A start checks, in order, `build_in_progress`, `builds_of_the_day`, `builds_full` and the trainer (`unworkable`,
or `tool_not_offered` when its delivery tool is not offered), then assembles the rows, walks the baseline and
asks the trainer, all within the request: the rows and the brief are kept as playbook content first, then the
run's first facts are appended together (`run_started` with `waits`, `dataset_assembled`, `baseline_scored`,
`build_asked`), so a crash leaves either no build or a waiting one. A build no series of which is walked records
`baseline_not_walked`, `build_ended` and its end instead, and its request answers that ending.

A trainer with `deliver` gets the build's request through its tool: `build_asked` records its `delivery`
(`{ server, tool }`) and its `deliver` block as written, and arms the first attempt (`interaction:attempt:1`,
due at once) in the same append; the interaction host's delivery attempts carry it out on the lease holder and
record the interaction format's delivery facts on the build's run stream (`build_requests.BUILD_REQUEST_SOURCE`).

The start runs inside the build's run actor (the run service's `StartRun` handler) and records through the run's
writer (`decisions.BuildStart`): it appends nothing any other way.

Concurrency: one build at a time per function is the function's build slot (`playbooks.run_slots`). The start
claims it from the playbook's actor before any other check (one claim at a time in this process: refused
`build_in_progress` while another build of the function is starting here, or recorded and not ended), and
releases it once its start ended; a build that waits records its claim on the slot's stream in its first
append, at the version its decision read, so of two servers' builds at once one commits and the other is
refused `build_in_progress`. A build that ended within its start (`too_large`, `not_walked`) claims nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import trio
from cachetools import LRUCache
from liquid import Environment, StrictUndefined
from liquid.exceptions import LiquidError

from auto_runtime.clock_text import now_utc
from auto_runtime.functions.durations import duration_ms
from auto_runtime.functions.interaction.call_run import rendered_arguments, tools_not_offered
from auto_runtime.functions.interaction.document import InteractionDocument
from auto_runtime.functions.interaction.document import parse_document as parse_interaction
from auto_runtime.functions.interaction.request_sources import attempt_key
from auto_runtime.functions.prediction.brief import brief_text, request_message
from auto_runtime.functions.prediction.build_facts import (
    ANSWER_SCHEMA,
    BASELINE_NOT_WALKED,
    BASELINE_SCORED,
    BUILD_ASKED,
    BUILD_ENDED,
    CANCEL_KEY,
    DATASET_ASSEMBLED,
    DEADLINE_GRACE_MS,
    DEADLINE_KEY,
    EXPIRE_KEY,
    SCORE_KEY,
    BuildState,
    fold_build,
)
from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.functions.prediction.decisions import BuildStart, build_in_progress, build_slot
from auto_runtime.functions.prediction.document import PredictionDocument, parse_document
from auto_runtime.functions.prediction.inputs import question_issues
from auto_runtime.functions.prediction.playbook_checks import interaction_function, trainer_problem
from auto_runtime.functions.prediction.walk import (
    RowsTooLarge,
    backtest_points,
    baseline_forecasts,
    periods_needed,
    scores,
    training_rows,
    walk,
)
from auto_runtime.functions.reasoning.front_matter import read_front_matter
from auto_runtime.json_limits import canonical_digest
from auto_runtime.ledger import Ledger, NewRecord, PlaybookScope
from auto_runtime.ledger.due_work import DueEntry, DueWorkChanges
from auto_runtime.playbooks.definition_registry import DefinitionVersion, definitions_stream
from auto_runtime.playbooks.run_slots import SlotClaims
from auto_runtime.problems import Rejection, conflict, invalid_input, not_found, unavailable
from auto_runtime.runs import RunWriter
from auto_runtime.runs.cancels import CancelRun, record_cancel_request
from auto_runtime.runs.facts import RUN_REJECTED, run_stream
from auto_runtime.runs.ids import is_run_id
from auto_runtime.runs.prediction_messages import RecordBuildStart
from auto_runtime.runs.view import RunState
from auto_runtime.tools import ToolServers

BUILD_INPUT_DIGEST: Final = canonical_digest({"build": {}})
DAY_US: Final = 24 * 3600 * 1_000_000
KEPT_CONTRACTS: Final = 4096
_TEMPLATES: Final = Environment(undefined=StrictUndefined)


def brief_key(scope: PlaybookScope, run_id: str) -> str:
    """The content scope key that holds a build's brief, and nothing else."""
    return f"{scope.key}/builds/{run_id}/brief"


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TrainerUnworkable(Exception):
    def __init__(self, words: str) -> None:
        super().__init__(words)
        self.words = words


def _front_matter(source: str) -> dict[str, Any]:
    lines = source.split("\n")
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r") == "---":
            value = read_front_matter("\n".join(lines[1:index]), 2).value
            return value if isinstance(value, dict) else {}
    return {}


def rendered_trainer(source: str, function: str, run_id: str) -> tuple[str, int]:
    """The trainer's party (`to` rendered with `input = { function, run_id }`) and its `expires` in ms."""
    fields = _front_matter(source)
    template = fields.get("to")
    if not isinstance(template, str):
        raise TrainerUnworkable("its to is not a template")
    try:
        party = _TEMPLATES.from_string(template).render(input={"function": function, "run_id": run_id})
    except LiquidError as error:
        raise TrainerUnworkable(f"its to cannot be rendered: {str(error).splitlines()[0]}") from None
    expires = duration_ms(fields.get("expires"))
    if not isinstance(expires, int) or expires <= 0:
        raise TrainerUnworkable("its expires is not a duration")
    if not party.strip():
        raise TrainerUnworkable("its to renders to nothing")
    return party, expires


@dataclass(frozen=True)
class Trainer:
    """What a build's `build_asked` records of its trainer: the party, the trainer's `expires` in ms, and for a
    trainer that delivers through a tool its `delivery` (`{ server, tool }`) and its `deliver` block as written."""

    party: str
    expires_ms: int
    delivery: dict[str, str] | None = None
    deliver: dict[str, Any] | None = None


def _delivery_words(rejection: Rejection) -> str:
    """Why the trainer's `deliver.with` cannot be rendered for a build, from the rejection its render gave."""
    if rejection.errors:
        return rejection.errors[0].detail
    return rejection.detail


class Builds:
    """Build starts (`start`, `cancel`: the run service's `WaitingRuns`) and reads of builds."""

    runs_once = True
    """A build that ended without a final result is not asked again under its run id: its request reached the
    trainer once already."""

    def __init__(
        self,
        ledger: Ledger,
        datasets: Datasets,
        builds_per_day: int,
        builds_at_once: int = 2,
        *,
        tools: ToolServers | None = None,
        clock: Callable[[], datetime] = now_utc,
    ) -> None:
        self.ledger = ledger
        self.datasets = datasets
        self.builds_per_day = builds_per_day
        self.builds_at_once = builds_at_once
        self.tools = tools
        """The tool servers a trainer's delivery goes through (checked by name at a build's start)."""
        self.clock = clock
        """The time a build starts at, and arms its due work from (a test's own clock)."""
        self._wake: Callable[[], None] = lambda: None
        self._slots: SlotClaims | None = None
        self._assembling = 0
        """Builds of this process between their checks and their first append."""
        self._contracts: LRUCache[tuple[str, str, int], dict[str, Any]] = LRUCache(KEPT_CONTRACTS)

    def wake_with(self, wake: Callable[[], None]) -> None:
        """The timer loop's wake, called once a build arms its first delivery attempt or its cancellation (both
        due at once), so neither waits for the next sweep. Set once, when the server is composed: the loop is
        made after the function types, which hold this object."""
        self._wake = wake

    def claim_slots_with(self, slots: SlotClaims) -> None:
        """How a start claims its function's build slot: from the playbook's actor (`run_handlers.serve_builds`).
        Set once, when the server is composed: the playbooks' actors are made after the function types."""
        self._slots = slots

    async def state(self, scope: PlaybookScope, run_id: str) -> BuildState | None:
        return fold_build(run_id, await self.ledger.read_stream(run_stream(scope, run_id)))

    async def _builds_of(self, scope: PlaybookScope, name: str) -> list[dict[str, Any]]:
        rows = await self.ledger.queries.runs.with_input(
            scope.org, scope.playbook, "prediction", name, BUILD_INPUT_DIGEST
        )
        return [dict(row) for row in rows]

    async def started_builds(self, scope: PlaybookScope, name: str) -> list[str]:
        """The run ids of the function's builds that have not ended."""
        return [str(row["run_id"]) for row in await self._builds_of(scope, name) if row["status"] == "started"]

    async def builds_of_the_day(self, scope: PlaybookScope, name: str, now: datetime) -> int:
        """The builds the function asked in the trailing 24 hours that recorded `dataset_assembled`."""
        since = int(now.timestamp() * 1_000_000) - DAY_US
        builds = await self._builds_of(scope, name)
        return sum(1 for row in builds if int(row["first_started_us"]) >= since and not _too_large(row["ending"]))

    async def _check_asking(self, scope: PlaybookScope, name: str, now: datetime) -> None:
        """The checks after the build slot's (`builds_of_the_day`, then `builds_full`)."""
        if await self.builds_of_the_day(scope, name, now) >= self.builds_per_day:
            raise unavailable(
                f"The prediction function {name} asked {self.builds_per_day} builds in the last 24 hours, the most "
                "it may ask (PREDICTION_BUILDS_PER_DAY).",
                kind="builds_full",
                because="builds_of_the_day",
            )
        queued = await self.ledger.queries.due_work.armed_with_key(SCORE_KEY)
        if queued + self._assembling >= self.builds_at_once:
            raise unavailable(
                f"{self.builds_at_once} builds are assembling, queued or scoring, the most at once "
                "(PREDICTION_BUILDS_AT_ONCE); ask again in a minute.",
                kind="builds_full",
                retry_after=60,
            )

    async def _trainer(
        self, scope: PlaybookScope, document: PredictionDocument, name: str, run_id: str, now: datetime
    ) -> Trainer:
        """The trainer the build asks (§8.1 step 4): `unworkable` when it no longer fits or its party or delivery
        cannot be rendered with `input = { function, run_id }`, `tool_not_offered` when its delivery tool is not
        offered (checked by name, as for interaction functions). Its document is read and its `deliver.with`
        rendered on a worker thread: the templates are the user's."""
        function = await interaction_function(self.ledger, scope, document.trainer)
        problem = trainer_problem(function, document.trainer)
        try:
            if problem is not None:
                raise TrainerUnworkable(problem)
            assert function is not None
            trainer = await trio.to_thread.run_sync(parse_interaction, str(function["source"]))
            if not isinstance(trainer, InteractionDocument):
                raise TrainerUnworkable("its latest version no longer reads as an interaction function")
            if trainer.deliver is not None:
                refused = await tools_not_offered(self.tools, scope, trainer.deliver.server, [trainer.deliver.tool])
                if refused is not None:
                    raise refused
            party, expires = rendered_trainer(str(function["source"]), name, run_id)
            if trainer.deliver is None:
                return Trainer(party, expires)
            moment = _utc(now)
            values = {
                "input": {"function": name, "run_id": run_id},
                "today": moment[:10],
                "now": moment,
                "to": party,
                "message": request_message(scope.org, scope.playbook, run_id, name),
                "run_id": run_id,
                "function": name,
                "expires_at": _utc(now + timedelta(milliseconds=expires)),
                "answer_schema": ANSWER_SCHEMA,
            }
            arguments = await trio.to_thread.run_sync(
                rendered_arguments, trainer.deliver.arguments, values, "The arguments of its deliver"
            )
            if isinstance(arguments, Rejection):
                raise TrainerUnworkable(_delivery_words(arguments))
            delivery = {"server": trainer.deliver.server, "tool": trainer.deliver.tool}
            return Trainer(party, expires, delivery, trainer.deliver_written)
        except TrainerUnworkable as unworkable:
            raise conflict(
                f"The build cannot ask its trainer {document.trainer}: {unworkable.words}.", kind="unworkable"
            ) from None

    async def start(
        self,
        writer: RunWriter,
        scope: PlaybookScope,
        definition: DefinitionVersion,
        value: Any,
        run_id: str,
        caller_id: str,
        metadata: Mapping[str, Any] | None,
    ) -> None:
        """Start the build `run_id` in its run's actor (see the module's rules)."""
        document = parse_document(definition.source)
        if isinstance(document, list):
            raise conflict("The saved document of this function no longer parses on this server.", kind="unworkable")
        issues = question_issues(document, value)
        if issues:
            raise invalid_input(issues)
        name = definition.name
        now = self.clock()
        slots = self._slots
        if slots is None:
            raise RuntimeError("the builds claim no build slot: serve them first (run_handlers.serve_builds)")
        slot = build_slot(name)
        if await slots.claim(scope, slot, run_id) is not None:
            raise build_in_progress(name)
        try:
            await self._check_asking(scope, name, now)
            trainer = await self._trainer(scope, document, name, run_id, now)
            self._assembling += 1
            try:
                await self._assemble(
                    writer, scope, definition, document, value, run_id, caller_id, metadata, now, trainer
                )
            finally:
                self._assembling -= 1
        finally:
            slots.release(scope, slot, run_id)

    async def _assemble(
        self,
        writer: RunWriter,
        scope: PlaybookScope,
        definition: DefinitionVersion,
        document: PredictionDocument,
        value: Any,
        run_id: str,
        caller_id: str,
        metadata: Mapping[str, Any] | None,
        now: datetime,
        trainer: Trainer,
    ) -> None:
        name = definition.name
        expires = trainer.expires_ms
        reading = await self.datasets.reading(scope, document.dataset)
        if reading is None:
            raise conflict(
                f"The dataset {document.dataset} of the function is not kept by the playbook.", kind="unworkable"
            )
        walked = await trio.to_thread.run_sync(walk, document, reading)
        base_metadata = {
            "correlation_id": run_id,
            "causation_id": None,
            **(metadata or {}),
            "by": caller_id,
            "run_id": run_id,
            "definition": {"type": "prediction", "name": name, "version": definition.version},
        }

        def fact(kind: str, data: Mapping[str, Any]) -> NewRecord:
            return NewRecord(kind, dict(data), base_metadata)

        started = fact("run_started", {"input": value, "input_digest": BUILD_INPUT_DIGEST, "waits": True})
        try:
            rows = await trio.to_thread.run_sync(training_rows, document, walked.walked)
        except RowsTooLarge:
            ending = conflict(
                "The build's training rows pass 1,000,000 rows or 256 MiB, the most a build assembles.",
                kind="too_large",
            )
            if await self._record(writer, name, [started, fact(RUN_REJECTED, ending.as_record())], caller_id):
                raise ending from None
            return
        points = backtest_points(document, walked.walked)
        assembled = fact(
            DATASET_ASSEMBLED,
            {
                "dataset": document.dataset,
                "rows": reading.rows,
                "series": reading.series_count,
                "series_walked": len(walked.walked),
                "series_too_short": walked.too_short,
                "series_flat": walked.flat,
                "training_rows": rows.count,
                "points": len(points),
                "rows_bytes": len(rows.data),
                "rows_sha256": rows.sha256,
            },
        )
        if not walked.walked:
            because = walked.because_not_walked()
            ending = conflict(
                f"No series of the dataset can be walked ({because}): each needs {periods_needed(document)} periods "
                "that do not all hold one value.",
                kind="not_walked",
                because=because,
            )
            not_walked = {
                "because": because,
                "series": reading.series_count,
                "periods_needed": periods_needed(document),
            }
            ended = [
                started,
                assembled,
                fact(BASELINE_NOT_WALKED, not_walked),
                fact(BUILD_ENDED, {"outcome": "not_walked", "because": because}),
                fact(RUN_REJECTED, ending.as_record()),
            ]
            if await self._record(writer, name, ended, caller_id):
                raise ending
            return
        baseline = scores(document, walked.walked, points, baseline_forecasts(document, walked.walked, points))
        baseline_data = {"method": "seasonal_naive", "season": document.season, **baseline.shown()}
        brief = brief_text(
            org=scope.org,
            playbook=scope.playbook,
            run_id=run_id,
            name=name,
            document=document,
            walked=walked.walked,
            training_rows=rows.count,
            baseline=baseline_data,
        ).encode("utf-8")
        await self.ledger.content.put(scope.key, rows.data)
        await self.ledger.content.put(brief_key(scope, run_id), brief)
        asked: dict[str, Any] = {
            "to": trainer.party,
            "delivery": trainer.delivery,
            "expires_at": _utc(now + timedelta(milliseconds=expires)),
            "brief_bytes": len(brief),
            "rows_bytes": len(rows.data),
            "training_rows": rows.count,
        }
        if trainer.deliver is not None:
            asked["deliver"] = trainer.deliver
        due = [
            DueEntry(scope, run_id, EXPIRE_KEY, now + timedelta(milliseconds=expires), {"run_id": run_id}),
            DueEntry(
                scope,
                run_id,
                DEADLINE_KEY,
                now + timedelta(milliseconds=expires + DEADLINE_GRACE_MS),
                {"run_id": run_id},
            ),
        ]
        if trainer.delivery is not None:
            due.append(DueEntry(scope, run_id, attempt_key(1), now, {}))
        first = [started, assembled, fact(BASELINE_SCORED, baseline_data), fact(BUILD_ASKED, asked)]
        recorded = await self._record(writer, name, first, caller_id, DueWorkChanges(arm=due), claims_slot=True)
        if recorded and trainer.delivery is not None:
            self._wake()

    @staticmethod
    async def _record(
        writer: RunWriter,
        name: str,
        records: list[NewRecord],
        caller_id: str,
        due_work: DueWorkChanges | None = None,
        *,
        claims_slot: bool = False,
    ) -> bool:
        """Append the build's first facts through the run's writer; False when another request recorded the run
        meanwhile (its run service answers the run as recorded)."""
        message = RecordBuildStart(name, tuple(records), due_work or DueWorkChanges(), claims_slot, caller_id)
        written = await writer.write(BuildStart(name, claims_slot), message, kept_moving=_same_moment)
        return written.reply

    async def cancel(self, writer: RunWriter, scope: PlaybookScope, state: RunState, message: CancelRun) -> None:
        """Records the request to cancel a build, whether it waits for its trainer, is queued or is being scored:
        `run_cancel_requested` and, in the same append, the due entry `prediction-build/cancel` (due at once) by
        which the lease holder ends it (`Scoring.fire`: `build_ended`, `cancelled`, then `rejected`,
        `cancelled`, with the kind asked), then wakes the timer loop. The run is answered as it stands, still
        `started`. A build being scored sees the request and ends its model process; a second request records
        nothing."""

        def entry_of(record: NewRecord) -> DueEntry:
            return DueEntry(scope, state.run_id, CANCEL_KEY, self.clock(), {"run_id": state.run_id})

        if await record_cancel_request(writer, message, entry_of):
            self._wake()

    async def waiting(self, scope: PlaybookScope, run_id: str) -> BuildState:
        """The build waiting for its answer, as the three build routes need it (§8.6): `not_found` for a run the
        playbook lacks, `not_a_build`, `build_ended` once it took its answer, was asked to cancel or ended, and
        `unavailable` (`Retry-After: 1`) before it asked its trainer."""
        state = await self.state(scope, run_id) if is_run_id(run_id) else None
        if state is None:
            raise not_found(f"The playbook {scope.playbook} has no run {run_id}.")
        if not state.is_build:
            raise conflict(f"The run {run_id} is not a build of a prediction function.", kind="not_a_build")
        if state.took_answer_or_ended:
            raise conflict(
                f"The build {run_id} took its answer or ended, so it takes no more candidates.", kind="build_ended"
            )
        if state.asked is None:
            raise unavailable(f"The build {run_id} has not asked its trainer yet.", retry_after=1)
        return state

    async def document_version(self, scope: PlaybookScope, name: str, version: int) -> PredictionDocument:
        """Document version `version` of the function `name`."""
        source: str | None = None
        definition = await self.ledger.queries.definitions.row(scope.org, scope.playbook, "prediction", name)
        if definition is not None and int(definition["version"]) == version:
            source = str(definition["source"])
        else:
            for record in await self.ledger.read_stream(definitions_stream(scope, "prediction")):
                if record.data.get("name") == name and record.data.get("version") == version:
                    source = record.data.get("source", source)
        document = parse_document(source or "")
        if isinstance(document, list):
            raise conflict(f"Version {version} of the function {name} no longer parses.", kind="unworkable")
        return document

    async def document_of(self, scope: PlaybookScope, state: BuildState) -> PredictionDocument:
        """The document version the build started under."""
        return await self.document_version(scope, state.name, state.version)

    async def contract_of(self, scope: PlaybookScope, name: str, version: int) -> dict[str, Any]:
        """The contract of document version `version` (§6), kept once read: a version never changes."""
        key = (scope.key, name, version)
        contract = self._contracts.get(key)
        if contract is None:
            contract = (await self.document_version(scope, name, version)).contract
            self._contracts[key] = contract
        return contract

    async def rows_of(self, scope: PlaybookScope, state: BuildState) -> bytes | None:
        if state.assembled is None:
            return None
        return await self.ledger.content.get(scope.key, str(state.assembled["rows_sha256"]))

    async def brief(self, scope: PlaybookScope, run_id: str) -> bytes | None:
        key = brief_key(scope, run_id)
        digest = await self.ledger.queries.content.digest(key)
        if digest is None:
            return None
        return await self.ledger.content.get(key, digest)


def _same_moment() -> Exception:
    return conflict("Another request under this run id was made at the same moment; send it again.")


def _too_large(ending: Any) -> bool:
    if isinstance(ending, str):
        ending = json.loads(ending)
    return isinstance(ending, dict) and ending.get("kind") == "too_large"
