"""A question to a prediction function (prediction-format §7, §12): answered within its request by the active
version, from the latest document version's dataset, as a `series` output.

Endings, in the order they are found: `invalid_input` at `/input/series` for a series the dataset lacks;
`conflict`, `no_version` without an active version (`because: contract_changed` when it no longer fits);
`conflict`, `unworkable`, `too_short` for a series shorter than `lags`; `unavailable`, `model_process_busy`
(`Retry-After: 1`) when no process was free within 10 s (its turn in the pool's fair queue, by org, did not come);
`unavailable` (`Retry-After: 1`) past the model's own 10 s, counted from the moment it holds its process;
`conflict`, `unworkable`, `failed_to_run` or `out_of_memory`; `unavailable`, `model_unfit`, `not_finite` or
`not_in_order` for an answer that cannot be given.
"""

from __future__ import annotations

import base64
import math
import time
from typing import Any, Final

import numpy as np

from auto_runtime.functions.function_type import Rejected, RunEnding, RunRequest, Succeeded
from auto_runtime.functions.prediction.candidates import tensor
from auto_runtime.functions.prediction.document import PredictionDocument
from auto_runtime.functions.prediction.model_pool import ModelJobFailed, ModelProcessBusy
from auto_runtime.functions.prediction.model_work import ModelWork, job_owner
from auto_runtime.functions.prediction.periods import period_text
from auto_runtime.ledger import PlaybookScope
from auto_runtime.problems import InputIssue, conflict, invalid_input, unavailable

MODEL_SECONDS: Final = 10.0
NO_PROCESS_FREE: Final = "No model process was free within 10 seconds; ask again shortly."
"""A question that waited its turn for a model process for `QUESTION_WAIT` seconds (§12, `model_process_busy`)."""
RAN_TOO_LONG: Final = "The model ran longer than 10 seconds; its process is ended."
"""A question whose model ran past `MODEL_SECONDS`, however long it waited for its process first (§12)."""


def json_number(value: float) -> int | float:
    """A double as JSON writes it, without a fraction when whole."""
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def float32_number(value: float) -> int | float:
    """The shortest decimal that reads back as the same float32 (§7), as a JSON number."""
    return json_number(float(np.format_float_positional(np.float32(value), unique=True, trim="-")))


class Questions(ModelWork):
    async def answer(self, request: RunRequest, document: PredictionDocument) -> RunEnding:
        began = time.monotonic()
        scope = PlaybookScope(request.org, request.playbook)
        asked: dict[str, Any] = request.input
        reading = await self.datasets.reading(scope, document.dataset)
        if reading is None:
            return Rejected(conflict("The function's dataset is not kept by the playbook.", kind="unworkable"))
        series = reading.series.get(asked["series"])
        if series is None:
            issue = InputIssue(f"series: the dataset has no series {asked['series']}.", "/input/series")
            return Rejected(invalid_input([issue]))
        active = await self.ledger.queries.prediction_versions.active(scope.org, scope.playbook, request.name)
        if active is None:
            return Rejected(
                conflict(
                    f"No version of the prediction function {request.name} is active; ask a build with "
                    '{ "build": {} } first.',
                    kind="no_version",
                )
            )
        if await self.builds.contract_of(scope, request.name, int(active["document_version"])) != document.contract:
            return Rejected(
                conflict(
                    f"Version {active['version']} is active but was built for another contract; build a new one.",
                    kind="no_version",
                    because="contract_changed",
                )
            )
        values = series.columns[document.target]
        if len(values) < document.lags:
            return Rejected(
                conflict(
                    f"The series {asked['series']} has {len(values)} periods, fewer than the {document.lags} lags.",
                    kind="unworkable",
                    because="too_short",
                )
            )
        candidate = str(active["candidate"])

        async def model_bytes() -> bytes | None:
            return await self.ledger.content.get(scope.key, candidate)

        path = await self.cache.ensure("models", candidate, model_bytes)
        if path is None:
            raise RuntimeError(f"the model file {candidate} of version {active['version']} is missing")
        inputs = {"history": tensor([list(values[-document.lags :])], document.lags)}
        if document.features:
            at_origin = [series.columns[feature][-1] for feature in document.features]
            inputs["covariates"] = tensor([at_origin], len(document.features))
        try:
            job = {"op": "run", "model": str(path), "inputs": inputs}
            reply = await self.pool.question(job, MODEL_SECONDS, job_owner(scope))
        except ModelProcessBusy:
            return Rejected(unavailable(NO_PROCESS_FREE, kind="model_process_busy", retry_after=1))
        except ModelJobFailed as failed:
            if failed.because == "timed_out":
                return Rejected(unavailable(RAN_TOO_LONG, retry_after=1))
            because = "out_of_memory" if failed.because == "out_of_memory" else "failed_to_run"
            return Rejected(
                conflict(
                    f"The active version's model could not answer: {failed.detail}"[:1024],
                    kind="unworkable",
                    because=because,
                )
            )
        outputs = {
            name: np.frombuffer(base64.b64decode(reply["outputs"][name]["data"]), dtype="<f4").tolist()
            for name in ("value", "low", "high")
        }
        horizons = [asked["horizon"]] if "horizon" in asked else list(document.horizons)
        positions = [document.horizons.index(h) for h in horizons]
        triples = [(outputs["value"][p], outputs["low"][p], outputs["high"][p]) for p in positions]
        if not all(math.isfinite(number) for triple in triples for number in triple):
            return Rejected(
                unavailable(
                    "The active version answered a value that is not finite.", kind="model_unfit", because="not_finite"
                )
            )
        if not all(low <= value <= high for value, low, high in triples):
            return Rejected(
                unavailable(
                    "The active version answered an interval that does not hold its value.",
                    kind="model_unfit",
                    because="not_in_order",
                )
            )
        origin = series.first + len(values) - 1
        shown = values[-document.observed :]
        first_shown = origin - len(shown) + 1
        output = {
            "series": asked["series"],
            "period": document.period,
            "lines": [
                {
                    "name": "observed",
                    "points": [
                        {"period": period_text(document.period, first_shown + index), "value": json_number(value)}
                        for index, value in enumerate(shown)
                    ],
                },
                {
                    "name": "predicted",
                    "points": [
                        {
                            "period": period_text(document.period, origin + h),
                            "horizon": h,
                            "value": float32_number(value),
                            "low": float32_number(low),
                            "high": float32_number(high),
                        }
                        for h, (value, low, high) in zip(horizons, triples, strict=True)
                    ],
                },
            ],
        }
        record = {
            "version": int(active["version"]),
            "coverage": document.coverage,
            "dataset": document.dataset,
            "origin": period_text(document.period, origin),
            "candidate": candidate,
            "duration_ms": int((time.monotonic() - began) * 1000),
        }
        return Succeeded(output=output, record=record, output_shape="series")
