"""The save-time checks of a prediction document that need its playbook (prediction-format §3): the dataset is
uploaded to it, `period` is the dataset's, `target` and `features` are its number columns, and `trainer` and
`approve` name interaction functions as the fields' rules require.

The interaction functions are read from the `definitions` projection as their type saved them: `trainer` must
name an active one whose front matter has neither `call` nor `replies`; `approve` one whose `output_schema`
requires a string `decision` whose `enum` includes `approve`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.functions.prediction.document import PredictionDocument
from auto_runtime.functions.reasoning.front_matter import Problem, read_front_matter
from auto_runtime.ledger import Ledger, PlaybookScope

INTERACTION = "interaction"
KEPT = ("version", "status", "source", "document")
"""The columns of the definition's row `interaction_function` answers."""


async def interaction_function(ledger: Ledger, scope: PlaybookScope, name: str) -> Mapping[str, Any] | None:
    """The active interaction function `name` of the playbook as the projection keeps it (`source`, `document`,
    `version`), or None."""
    definition = await ledger.queries.definitions.row(scope.org, scope.playbook, INTERACTION, name)
    if definition is None or definition["status"] != "active":
        return None
    row = {column: definition[column] for column in KEPT}
    document = row["document"]
    if isinstance(document, str | bytes):
        row["document"] = json.loads(document)
    return row


def front_matter_keys(source: str) -> set[str]:
    """The top-level keys of an interaction document's front matter (empty when it does not read)."""
    lines = source.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return set()
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r") == "---":
            value = read_front_matter("\n".join(lines[1:index]), 2).value
            return set(value) if isinstance(value, dict) else set()
    return set()


def trainer_problem(function: Mapping[str, Any] | None, name: str) -> str | None:
    """Why `function` cannot be a trainer, or None (§3: an active interaction function, without `call` and
    without `replies`)."""
    if function is None:
        return f"trainer names no active interaction function of this playbook: {name}"
    keys = front_matter_keys(str(function["source"]))
    if "call" in keys:
        return f"trainer names {name}, an interaction function that calls a tool; a trainer has no call"
    if "replies" in keys:
        return f"trainer names {name}, an interaction function that reads replies; a trainer has no replies"
    return None


def approver_problem(function: Mapping[str, Any] | None, name: str) -> str | None:
    """Why `function` cannot approve versions, or None (§3: its `output.schema` requires a string `decision`
    whose `enum` includes `approve`)."""
    if function is None:
        return f"approve names no active interaction function of this playbook: {name}"
    schema = function["document"].get("output_schema")
    decision = schema.get("properties", {}).get("decision") if isinstance(schema, dict) else None
    if (
        not isinstance(schema, dict)
        or "decision" not in (schema.get("required") or [])
        or not isinstance(decision, dict)
        or decision.get("type") != "string"
        or "approve" not in (decision.get("enum") or [])
    ):
        return (
            f"approve names {name}, whose output.schema does not require a string decision whose enum includes approve"
        )
    return None


async def playbook_problems(
    document: PredictionDocument, scope: PlaybookScope, ledger: Ledger, datasets: Datasets
) -> list[Problem]:
    """Every problem of §3's playbook checks, each at its field's line."""
    problems: list[Problem] = []

    def refuse(field: str, words: str) -> None:
        problems.append(Problem(document.lines.get(field, 1), "", words))

    summary = await datasets.summary(scope, document.dataset)
    if summary is None:
        refuse("dataset", f"dataset names no dataset uploaded to this playbook: {document.dataset}")
    else:
        if summary["period"] != document.period:
            refuse("period", f"period is {document.period}, but the dataset's period is {summary['period']}")
        numbers = {column["name"] for column in summary["columns"] if column["kind"] == "number"}
        if document.target not in numbers:
            refuse("target", f"target names no number column of the dataset: {document.target}")
        for feature in document.features:
            if feature not in numbers:
                refuse("features", f"features names {feature}, which is not a number column of the dataset")
    problem = trainer_problem(await interaction_function(ledger, scope, document.trainer), document.trainer)
    if problem is not None:
        refuse("trainer", problem)
    if document.approve is not None:
        problem = approver_problem(await interaction_function(ledger, scope, document.approve), document.approve)
        if problem is not None:
            refuse("approve", problem)
    return sorted(problems, key=lambda found: found.line)
