"""The prediction type as the generic layer sees it (prediction-format §2–§3, §7): documents checked alone and
then against their playbook, the input schema the runtime writes, and questions.

Builds are the run service's waiting runs (`builds`); questions are answered here by the active version
(`questions`).
"""

from __future__ import annotations

from typing import Any, Final

from auto_runtime.functions.documents import no_longer_parses
from auto_runtime.functions.function_type import CheckedDocument, Rejected, RunEnding, RunRequest, Use
from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.functions.prediction.document import PredictionDocument, parse_document, refusal
from auto_runtime.functions.prediction.inputs import question_issues
from auto_runtime.functions.prediction.playbook_checks import playbook_problems
from auto_runtime.functions.prediction.questions import Questions
from auto_runtime.functions.shapes import SERIES_SCHEMA
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.problems import Rejection, conflict, invalid_input

MEDIA_TYPE: Final = "text/markdown"
TRAINS: Final = "sends it builds to train"
APPROVES: Final = "asks it to approve a version"


def input_schema(document: PredictionDocument) -> dict[str, Any]:
    """A question `{ series, horizon? }` or a build `{ build: {} }` (§7)."""
    return {
        "type": "object",
        "oneOf": [
            {
                "title": "question",
                "type": "object",
                "required": ["series"],
                "additionalProperties": False,
                "properties": {
                    "series": {"type": "string", "minLength": 1, "maxLength": 64, "description": "The series asked"},
                    "horizon": {"enum": list(document.horizons), "description": "One of the function's horizons"},
                },
            },
            {
                "title": "build",
                "type": "object",
                "required": ["build"],
                "additionalProperties": False,
                "properties": {"build": {"type": "object", "maxProperties": 0, "description": "Asks for a build"}},
            },
        ],
    }


def overview(document: PredictionDocument) -> str:
    horizons = ", ".join(str(h) for h in document.horizons)
    features = ", ".join(f"`{f}`" for f in document.features) or "none"
    approve = (
        f"The interaction function `{document.approve}` approves each version before it is activated.\n"
        if document.approve
        else ""
    )
    return (
        f"{document.description or 'A prediction function.'}\n\n"
        "## What it needs\n\n"
        'A question `{ "series": <name>, "horizon"?: <h> }` about a series of its dataset, or '
        '`{ "build": {} }` to build a new model version.\n\n'
        "## What it produces\n\n"
        f"It answers the `series` output shape: the `observed` line of the series' last {document.observed} "
        f"periods, and the `predicted` line for horizons {horizons} with `value`, `low` and `high`, an interval "
        f"meant to hold the observed value with probability {document.coverage:g}.\n\n"
        "## What it does\n\n"
        f"It forecasts `{document.target}` by {document.period}, {document.lags} lags, features {features}, "
        f"from the dataset `{document.dataset}`. Its builds ask the interaction function `{document.trainer}` "
        "for candidate ONNX models, score them against a seasonal-naive baseline and keep the best that beats it "
        f"as a new version, shadowed for {document.shadow_periods} periods before activation.\n{approve}"
    )


class PredictionType:
    """Documents, checked alone (`check`) and within their playbook (`check_in`), and their runs."""

    name = "prediction"

    def __init__(self, ledger: Ledger, datasets: Datasets, questions: Questions) -> None:
        self.ledger = ledger
        self.datasets = datasets
        self.questions = questions

    def _checked(self, document: PredictionDocument) -> CheckedDocument:
        uses = [Use("interaction", document.trainer, TRAINS)]
        if document.approve is not None and document.approve != document.trainer:
            uses.append(Use("interaction", document.approve, APPROVES))
        return CheckedDocument(
            media_type=MEDIA_TYPE,
            description=document.description,
            input_schema=input_schema(document),
            output_schema=SERIES_SCHEMA,
            shape="series",
            overview=overview(document),
            uses=tuple(uses),
            extra={"contract": document.contract},
        )

    async def check(self, source: str) -> CheckedDocument:
        parsed = parse_document(source)
        if isinstance(parsed, list):
            raise refusal(parsed)
        return self._checked(parsed)

    async def check_in(self, scope: PlaybookScope, source: str) -> CheckedDocument:
        parsed = parse_document(source)
        if isinstance(parsed, list):
            raise refusal(parsed)
        problems = await playbook_problems(parsed, scope, self.ledger, self.datasets)
        if problems:
            raise refusal(problems)
        return self._checked(parsed)

    async def parse(self, source: str) -> PredictionDocument | Rejection:
        parsed = parse_document(source)
        if isinstance(parsed, list):
            return no_longer_parses(refusal(parsed).detail)
        return parsed

    async def run(self, request: RunRequest) -> RunEnding:
        document = request.document if request.document is not None else await self.parse(request.source)
        if isinstance(document, Rejection):
            return Rejected(document)
        issues = question_issues(document, request.input)
        if issues:
            return Rejected(invalid_input(issues))
        if "build" in request.input:
            return Rejected(
                conflict("A build starts through run_definition, which hands it to the builds.", kind="unworkable")
            )
        return await self.questions.answer(request, document)
