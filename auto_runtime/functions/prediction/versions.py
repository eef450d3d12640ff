"""A prediction function's model versions (prediction-format §9): the `prediction_versions` projection, kept from
`version_built` and `version_activated`, whichever stream records them (a build's run, or the function's
`models/<function>` stream).

A row per (org, playbook, function, version): its state (`shadowing`, `awaiting_approval`, `active`,
`replaced`, …), the candidate (the model file's SHA-256), the document version it was built under (whose
contract it answers), its scores, and its activation. `version_activated` makes its version `active` and the
version it names as `previous` `replaced`, in the append that records it, so at most one version is active;
a build's `build_ended` gives its version the state it ended in (`shadowing`, `awaiting_approval`, `active`);
shadow verdicts (`shadow`) move a `shadowing` version on: `shadow_passed` to `awaiting_approval` (then
`active` when `version_activated` follows in the same append), `shadow_failed` to `failed`,
`activation_refused` to `refused`.
"""

from __future__ import annotations

from typing import Any, Final

from auto_runtime.clock_text import iso_utc
from auto_runtime.functions.prediction.build_facts import BUILD_ENDED
from auto_runtime.ledger import Projection, Record, Row, TableSpec

VERSION_BUILT: Final = "version_built"
VERSION_ACTIVATED: Final = "version_activated"
SHADOW_PREDICTED: Final = "shadow_predicted"
SHADOW_GRADED: Final = "shadow_graded"
SHADOW_PASSED: Final = "shadow_passed"
SHADOW_FAILED: Final = "shadow_failed"
ACTIVATION_REFUSED: Final = "activation_refused"
_STATE_AFTER: Final = {SHADOW_PASSED: "awaiting_approval", SHADOW_FAILED: "failed", ACTIVATION_REFUSED: "refused"}
"""The state a shadow verdict leaves its version in; a pass activated in the same append ends `active`."""


def _function(record: Record) -> tuple[str, str, str] | None:
    definition = record.metadata.get("definition") or {}
    if definition.get("type") != "prediction":
        return None
    parts = record.stream.split("/")
    return parts[1], parts[2], str(definition.get("name"))


def _keys(record: Record) -> list[tuple[Any, ...]]:
    if record.type not in (VERSION_BUILT, VERSION_ACTIVATED, BUILD_ENDED, *_STATE_AFTER):
        return []
    if record.type == BUILD_ENDED and not isinstance(record.data.get("version"), int):
        return []
    function = _function(record)
    if function is None:
        return []
    keys = [(*function, int(record.data["version"]))]
    previous = record.data.get("previous")
    if record.type == VERSION_ACTIVATED and isinstance(previous, int):
        keys.append((*function, previous))
    return keys


def _row_after(row: Row | None, record: Record) -> Row | None:
    data = record.data
    at = iso_utc(record.recorded_at)
    if record.type == VERSION_BUILT:
        return {
            "state": "shadowing",
            "candidate": data["candidate"],
            "dataset": data["dataset"],
            "document_version": int((record.metadata.get("definition") or {}).get("version", 0)),
            "built_at": at,
            "rule": None,
            "activated_at": None,
            "mase": data["mase"],
            "msis": data["msis"],
            "coverage": data["coverage"],
            "baseline_mase": data["baseline_mase"],
            "baseline_msis": data["baseline_msis"],
        }
    if row is None:
        return None
    if record.type == BUILD_ENDED:
        return {**row, "state": data["state"]}
    if record.type in _STATE_AFTER:
        movable = ("shadowing", "awaiting_approval") if record.type == ACTIVATION_REFUSED else ("shadowing",)
        return {**row, "state": _STATE_AFTER[record.type]} if row["state"] in movable else row
    if row["version"] == data["version"]:
        return {**row, "state": "active", "rule": data["rule"], "activated_at": at}
    return {**row, "state": "replaced"}


VERSIONS_PROJECTION = Projection(
    name="prediction_versions",
    version=3,
    table=TableSpec(
        name="prediction_versions",
        columns={
            "org": "text",
            "playbook": "text",
            "function": "text",
            "version": "integer",
            "state": "text",
            "candidate": "text",
            "dataset": "text",
            "document_version": "integer",
            "built_at": "text",
            "rule": "text",
            "activated_at": "text",
            "mase": "real",
            "msis": "real",
            "coverage": "real",
            "baseline_mase": "real",
            "baseline_msis": "real",
        },
        primary_key=("org", "playbook", "function", "version"),
        indexes=(("org", "playbook", "function", "state"),),
    ),
    keys=_keys,
    row_after=_row_after,
)
