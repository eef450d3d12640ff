"""Activating a version by hand (prediction-format §9, `activate_version`): any built version whose contract fits
the function's latest document, in any state; it records `version_activated` with `rule: by_hand` on the
function's `models/<function>` stream (no run), by the caller, and the `prediction_versions` projection makes
the previous active version `replaced` in the same append.

Refusals: `conflict`, `retired` for a retired function; `not_found` for a version the function did not build;
`conflict`, `already_active`; `conflict`, `contract_changed` for a version that no longer fits.
"""

from __future__ import annotations

from typing import Any

from auto_runtime.clock_text import iso_utc
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.document import parse_document
from auto_runtime.functions.prediction.versions import VERSION_ACTIVATED
from auto_runtime.ledger import ANY_VERSION, NewRecord, PlaybookScope, StreamWrite
from auto_runtime.problems import conflict, not_found


class Activation:
    def __init__(self, builds: Builds) -> None:
        self.builds = builds
        self.ledger = builds.ledger

    async def activate(self, scope: PlaybookScope, name: str, version: int, caller_id: str) -> dict[str, Any]:
        definition = await self.ledger.queries.definitions.row(scope.org, scope.playbook, "prediction", name)
        if definition is None:
            raise not_found(f"The playbook {scope.playbook} has no prediction definition {name}.")
        if definition["status"] == "retired":
            raise conflict(f"The prediction function {name} is retired, so no version of it activates.", kind="retired")
        versions = await self.ledger.queries.prediction_versions.oldest_first(scope.org, scope.playbook, name)
        chosen = next((row for row in versions if int(row["version"]) == version), None)
        if chosen is None:
            raise not_found(f"The prediction function {name} built no version {version}.")
        if chosen["state"] == "active":
            raise conflict(f"Version {version} of {name} is the active version already.", kind="already_active")
        document = parse_document(str(definition["source"]))
        contract = await self.builds.contract_of(scope, name, int(chosen["document_version"]))
        if isinstance(document, list) or contract != document.contract:
            raise conflict(
                f"Version {version} of {name} was built for a contract the function no longer has.",
                kind="contract_changed",
            )
        previous = next((int(row["version"]) for row in versions if row["state"] == "active"), None)
        metadata = {
            "correlation_id": None,
            "causation_id": None,
            "by": caller_id,
            "definition": {"type": "prediction", "name": name, "version": int(definition["version"])},
        }
        data = {"version": version, "rule": "by_hand", "previous": previous}
        (recorded,) = await self.ledger.append(
            [StreamWrite(scope.stream("models", name), ANY_VERSION, [NewRecord(VERSION_ACTIVATED, data, metadata)])]
        )
        return {"function": name, "version": version, "rule": "by_hand", "activated_at": iso_utc(recorded.recorded_at)}
