"""Shadow work (prediction-format §9, §10): a `shadowing` version predicts, without serving, beside the active
version (its comparator, `against`), is graded as the function's datasets reach the periods it predicted, and
passes or fails once enough new periods were seen.

Shadow work is due work `prediction-shadow/<function>/<cause>` of the pseudo-run `models`, carried out on the workflow
lease's holder like scoring, in model processes available to builds. It is armed by the append that ends a build
leaving its version `shadowing`, and by the reactions follower for each saved version of a prediction document
(`definition_updated`). Each time, for every `shadowing` version of the function, with the document's dataset:

1. a version whose contract no longer fits fails (`shadow_failed`, `contract_changed`);
2. a dataset the version already worked on changes nothing (so arming twice is harmless);
3. **grade**: every stored point (the points of its `shadow_predicted` records) not graded before whose
   target period the dataset holds is graded, both sides scaled by the version's build scales q_s (the walk of
   its build dataset): `shadow_graded` with the new count and the running MASE of both and the coverage;
4. **decide**, once the dataset's last period is at least `shadow.periods` past the build dataset's: it passes
   when at least one point is graded and its MASE is at most the comparator's (`shadow_passed`), else
   `shadow_failed`, `nothing_graded` or `worse`. A pass activates it (`version_activated`, `shadow_passed`),
   unless `approve` is named (it then waits `awaiting_approval`, and the same append arms its approving run,
   `approval`), or the active version is newer
   (`activation_refused`, `superseded`);
5. **predict**, when no verdict was reached: both versions predict from each walked series' last period
   (`shadow_predicted`); a shadowing prediction that is not finite or not in order fails the shadow at once.

The points of a prediction are kept as playbook content (compact JSON, an array of `{ series, origin, period,
horizon, value, low, high, against? }`, each number the double of the model's float32, without a fraction when
whole), and `shadow_predicted` holds their count (`predictions`) and
`predictions_bytes`, `predictions_sha256` (settled point 25), so the event stays small whatever the number of
series. A `shadow_predicted` recorded before holds the points themselves as `predictions`; grading reads both.

Every record goes to the function's `models/<function>` stream (no run), by `playbook:<id>`, its
`metadata.definition` naming the function. A model that cannot run leaves the version as it is (logged); the
next dataset tries again.
"""

from __future__ import annotations

import base64
import json
import logging
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import numpy as np
import trio

from auto_runtime.functions.prediction.approval import approval_entry
from auto_runtime.functions.prediction.candidates import tensor
from auto_runtime.functions.prediction.dataset_csv import DatasetReading
from auto_runtime.functions.prediction.document import PredictionDocument, parse_document
from auto_runtime.functions.prediction.model_pool import ModelJobFailed
from auto_runtime.functions.prediction.model_work import ModelWork, job_owner
from auto_runtime.functions.prediction.periods import ordinal_of, period_text
from auto_runtime.functions.prediction.questions import json_number
from auto_runtime.functions.prediction.versions import (
    ACTIVATION_REFUSED,
    SHADOW_FAILED,
    SHADOW_GRADED,
    SHADOW_PASSED,
    SHADOW_PREDICTED,
    VERSION_ACTIVATED,
)
from auto_runtime.functions.prediction.walk import walk
from auto_runtime.ledger import (
    ANY_VERSION,
    DueEntry,
    LeaseFence,
    Ledger,
    NewRecord,
    PlaybookScope,
    Record,
    StreamWrite,
)
from auto_runtime.ledger.due_work import DueWorkChanges

log = logging.getLogger("auto_runtime.prediction")

SHADOW_PREFIX: Final = "prediction-shadow/"
SHADOW_RUN: Final = "models"
MODEL_SECONDS: Final = 120.0
_DEFINITIONS_STREAM: Final = "/definitions/prediction"
_ACTIVATION_FACTS: Final = (VERSION_ACTIVATED, ACTIVATION_REFUSED)


def shadow_entry(scope: PlaybookScope, function: str, cause: str) -> DueEntry:
    """The due entry that runs the function's shadow work now, for one cause (a build's run id, or a saved
    document version): a key fires once, so each cause has its own, and the same cause arms it once."""
    key = f"{SHADOW_PREFIX}{function}/{cause}"
    return DueEntry(scope, SHADOW_RUN, key, datetime.now(UTC), {"function": function})


async def arm_after_save(ledger: Ledger, record: Record, fence: LeaseFence | None) -> None:
    """The reactions follower's hook: a saved version of a prediction document arms its shadow work."""
    if record.type != "definition_updated" or not record.stream.endswith(_DEFINITIONS_STREAM):
        return
    name = record.data.get("name") if isinstance(record.data, dict) else None
    parts = record.stream.split("/")
    if not isinstance(name, str) or len(parts) < 3:
        return
    entry = shadow_entry(PlaybookScope(parts[1], parts[2]), name, f"v{record.data.get('version')}")
    await ledger.due_work.change(DueWorkChanges(arm=[entry]), fence)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


class Shadow(ModelWork):
    """See the module. `fire` is the due handler of `prediction-shadow/`."""

    async def fire(self, entry: DueEntry, fence: LeaseFence) -> None:
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        function = str(entry.payload["function"])
        records = await self._work(scope, function)
        decided = {int(record.data["version"]) for record in records if record.type in _ACTIVATION_FACTS}
        approvals = [
            approval_entry(scope, function, int(record.data["version"]))
            for record in records
            if record.type == SHADOW_PASSED and int(record.data["version"]) not in decided
        ]
        changes = DueWorkChanges(fire=[entry.due_key], arm=approvals)
        if not records:
            await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
            return
        stream = scope.stream("models", function)
        await self.ledger.append([StreamWrite(stream, ANY_VERSION, records)], due_work=changes, fence=fence)

    async def _work(self, scope: PlaybookScope, function: str) -> list[NewRecord]:
        definition = await self.ledger.queries.definitions.row(scope.org, scope.playbook, "prediction", function)
        if definition is None or definition["status"] == "retired":
            return []
        document = parse_document(str(definition["source"]))
        if isinstance(document, list):
            return []
        metadata = {
            "correlation_id": None,
            "causation_id": None,
            "by": f"playbook:{scope.playbook}",
            "definition": {"type": "prediction", "name": function, "version": int(definition["version"])},
        }
        versions = await self.ledger.queries.prediction_versions.oldest_first(scope.org, scope.playbook, function)
        active = next((row for row in versions if row["state"] == "active"), None)
        history = await self.ledger.read_stream(scope.stream("models", function))
        records: list[NewRecord] = []
        for row in versions:
            if row["state"] == "shadowing":
                data = await self._one(scope, function, document, row, active, history)
                records.extend(NewRecord(kind, fact, metadata) for kind, fact in data)
        return records

    async def _one(
        self,
        scope: PlaybookScope,
        function: str,
        document: PredictionDocument,
        row: Mapping[str, Any],
        active: Mapping[str, Any] | None,
        history: Sequence[Record],
    ) -> list[tuple[str, dict[str, Any]]]:
        version = int(row["version"])
        against = None if active is None else int(active["version"])
        mine = [record for record in history if record.data.get("version") == version]
        graded = [record.data for record in mine if record.type == SHADOW_GRADED]
        totals = _Totals.after(graded[-1] if graded else None)
        if await self.builds.contract_of(scope, function, int(row["document_version"])) != document.contract:
            return [(SHADOW_FAILED, totals.verdict(version, against, "contract_changed"))]
        worked_on = {record.data.get("dataset") for record in mine if record.type in (SHADOW_PREDICTED, SHADOW_GRADED)}
        if document.dataset in worked_on:
            return []
        reading = await self.datasets.reading(scope, document.dataset)
        built_on = await self.datasets.reading(scope, str(row["dataset"]))
        if reading is None or built_on is None or reading.last is None or built_on.last is None:
            return []
        built_document = await self.builds.document_version(scope, function, int(row["document_version"]))
        scales = {series.name: series.scale for series in walk(built_document, built_on).walked}
        facts: list[tuple[str, dict[str, Any]]] = []
        predicted = [record for record in mine if record.type == SHADOW_PREDICTED]
        if predicted:
            earlier = [
                seen
                for name in dict.fromkeys(str(data["dataset"]) for data in graded)
                if (seen := await self.datasets.reading(scope, name)) is not None
            ]
            stored = [point for record in predicted for point in await self._points(scope, record)]
            fresh = [
                point
                for point in stored
                if point["series"] in scales
                and _actual(reading, point, document.target) is not None
                and all(_actual(seen, point, document.target) is None for seen in earlier)
            ]
            totals = totals.graded(fresh, reading, scales, document.target)
            facts.append((SHADOW_GRADED, totals.graded_fact(version, against, document.dataset, len(fresh))))
        if reading.last - built_on.last >= document.shadow_periods:
            return facts + self._decided(document, version, against, totals)
        prediction = await self._predicted(scope, document, reading, row, active)
        if prediction is None:
            return facts
        because, points = prediction
        if because is not None:
            return [*facts, (SHADOW_FAILED, totals.verdict(version, against, because))]
        series = len({point["series"] for point in points})
        kept = await trio.to_thread.run_sync(_compact_json, points)
        shown = {
            "version": version,
            "against": against,
            "dataset": document.dataset,
            "series": series,
            "predictions": len(points),
            "predictions_bytes": len(kept),
            "predictions_sha256": await self.ledger.content.put(scope.key, kept),
        }
        return [*facts, (SHADOW_PREDICTED, shown)]

    async def _points(self, scope: PlaybookScope, record: Record) -> list[dict[str, Any]]:
        """The points of a `shadow_predicted`: kept as content by their SHA-256, or, recorded before they were,
        in the event itself. Points whose content is missing are left ungraded (logged)."""
        written = record.data.get("predictions")
        if isinstance(written, list):
            return written
        sha256 = str(record.data.get("predictions_sha256", ""))
        kept = await self.ledger.content.get(scope.key, sha256)
        if kept is None:
            log.warning("shadow work: the points %s of %s are missing; they are not graded", sha256, record.id)
            return []
        points: list[dict[str, Any]] = await trio.to_thread.run_sync(json.loads, kept)
        return points

    def _decided(
        self, document: PredictionDocument, version: int, against: int | None, totals: _Totals
    ) -> list[tuple[str, dict[str, Any]]]:
        if totals.count == 0:
            return [(SHADOW_FAILED, totals.verdict(version, against, "nothing_graded"))]
        if totals.against_mase is not None and totals.mase is not None and totals.mase > totals.against_mase:
            return [(SHADOW_FAILED, totals.verdict(version, against, "worse"))]
        facts: list[tuple[str, dict[str, Any]]] = [(SHADOW_PASSED, totals.verdict(version, against, None))]
        if against is not None and against > version:
            facts.append((ACTIVATION_REFUSED, {"version": version, "because": "superseded"}))
        elif document.approve is None:
            facts.append((VERSION_ACTIVATED, {"version": version, "rule": "shadow_passed", "previous": against}))
        return facts

    async def _predicted(
        self,
        scope: PlaybookScope,
        document: PredictionDocument,
        reading: DatasetReading,
        row: Mapping[str, Any],
        active: Mapping[str, Any] | None,
    ) -> tuple[str | None, list[dict[str, Any]]] | None:
        """The shadowing version's points (with the comparator's beside them) from each walked series' last
        period, or the `because` of a prediction that fails the shadow; None when a model could not run."""
        walked = walk(document, reading).walked
        if not walked:
            return None, []
        history = [list(series.values[-document.lags :]) for series in walked]
        inputs = {"history": tensor(history, document.lags)}
        if document.features:
            at_origin = [[series.features[feature][-1] for feature in document.features] for series in walked]
            inputs["covariates"] = tensor(at_origin, len(document.features))
        mine = await self._run(scope, str(row["candidate"]), inputs)
        theirs = None if active is None else await self._run(scope, str(active["candidate"]), inputs)
        if mine is None or (active is not None and theirs is None):
            return None
        points: list[dict[str, Any]] = []
        for index, series in enumerate(walked):
            origin = series.first + len(series.values) - 1
            for position, horizon in enumerate(document.horizons):
                value, low, high = (float(mine[name][index][position]) for name in ("value", "low", "high"))
                if not all(math.isfinite(number) for number in (value, low, high)):
                    return "not_finite", []
                if not low <= value <= high:
                    return "not_in_order", []
                point: dict[str, Any] = {
                    "series": series.name,
                    "origin": period_text(document.period, origin),
                    "period": period_text(document.period, origin + horizon),
                    "horizon": horizon,
                    "value": json_number(value),
                    "low": json_number(low),
                    "high": json_number(high),
                }
                if theirs is not None:
                    point["against"] = json_number(float(theirs["value"][index][position]))
                points.append(point)
        return None, points

    async def _run(self, scope: PlaybookScope, candidate: str, inputs: dict[str, Any]) -> dict[str, Any] | None:
        async def model_bytes() -> bytes | None:
            return await self.ledger.content.get(scope.key, candidate)

        path = await self.cache.ensure("models", candidate, model_bytes)
        if path is None:
            log.warning("shadow work: the model file %s is missing", candidate)
            return None
        try:
            job = {"op": "run", "model": str(path), "inputs": inputs}
            reply = await self.pool.build_work(job, MODEL_SECONDS, job_owner(scope))
        except ModelJobFailed as failed:
            log.warning("shadow work: the model %s could not run (%s)", candidate, failed.because)
            return None
        return {
            name: np.frombuffer(base64.b64decode(reply["outputs"][name]["data"]), dtype="<f4")
            .reshape(reply["outputs"][name]["shape"])
            .tolist()
            for name in ("value", "low", "high")
        }


def _compact_json(points: list[dict[str, Any]]) -> bytes:
    return json.dumps(points, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _actual(reading: DatasetReading, point: Mapping[str, Any], target: str) -> float | None:
    """The observed target of a stored point in `reading`, or None when it does not hold that period."""
    series = reading.series.get(str(point["series"]))
    if series is None or reading.period is None:
        return None
    ordinal = ordinal_of(reading.period, str(point["period"]))
    values = series.columns.get(target)
    if ordinal is None or values is None:
        return None
    index = ordinal - series.first
    return float(values[index]) if 0 <= index < len(values) else None


class _Totals:
    """The running sums of a version's grading: scaled absolute errors of both sides, covered points, count."""

    def __init__(self, count: int, mine: float, theirs: float | None, covered: float) -> None:
        self.count = count
        self._mine = mine
        self._theirs = theirs
        self._covered = covered

    @classmethod
    def after(cls, last: Mapping[str, Any] | None) -> _Totals:
        if last is None or not last.get("graded_total"):
            return cls(0, 0.0, 0.0, 0.0)
        count = int(last["graded_total"])
        theirs = last.get("against_mase")
        return cls(
            count,
            float(last["mase"]) * count,
            None if theirs is None else float(theirs) * count,
            float(last["coverage"]) * count,
        )

    @property
    def mase(self) -> float | None:
        return self._mine / self.count if self.count else None

    @property
    def against_mase(self) -> float | None:
        return self._theirs / self.count if self.count and self._theirs is not None else None

    @property
    def coverage(self) -> float | None:
        return self._covered / self.count if self.count else None

    def graded(
        self, points: Sequence[Mapping[str, Any]], reading: DatasetReading, scales: Mapping[str, float], target: str
    ) -> _Totals:
        mine, theirs, covered = self._mine, self._theirs, self._covered
        for point in points:
            actual = _actual(reading, point, target)
            assert actual is not None
            scale = scales[str(point["series"])]
            mine += abs(actual - float(point["value"])) / scale
            if theirs is not None and "against" in point:
                theirs += abs(actual - float(point["against"])) / scale
            elif "against" not in point:
                theirs = None
            covered += 1.0 if float(point["low"]) <= actual <= float(point["high"]) else 0.0
        return _Totals(self.count + len(points), mine, theirs, covered)

    def graded_fact(self, version: int, against: int | None, dataset: str, new: int) -> dict[str, Any]:
        return {
            "version": version,
            "against": against,
            "dataset": dataset,
            "graded": new,
            "graded_total": self.count,
            "mase": _round(self.mase),
            "against_mase": _round(self.against_mase),
            "coverage": _round(self.coverage),
        }

    def verdict(self, version: int, against: int | None, because: str | None) -> dict[str, Any]:
        fact = {
            "version": version,
            "against": against,
            "graded_total": self.count,
            "mase": _round(self.mase),
            "against_mase": _round(self.against_mase),
            "coverage": _round(self.coverage),
        }
        return fact if because is None else {**fact, "because": because}
