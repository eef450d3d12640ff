"""Playbooks with interaction functions, written into a ledger before the prediction tests' server starts.

A prediction function names an interaction function as its `trainer` (prediction-format §3), and its save reads
that function from the `definitions` projection. Until the interaction type is served, its functions are saved
here through the real definition registry, with `InteractionDocuments` standing in for the interaction type's
save-time check: it keeps what the projection shows of a document (its `output.schema`) and checks nothing.
Once interaction functions can be created over HTTP, `seed` can create these documents with `create_definition`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
import yaml

from auto_runtime.functions.function_type import CheckedDocument, Rejected, RunEnding, RunRequest
from auto_runtime.ledger import PlaybookScope, open_ledger
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.playbook_registry import PlaybookRegistry
from auto_runtime.problems import Rejection
from auto_runtime.server import RUNTIME_PROJECTIONS

ORG = "acme"
TRAINER = """---
description: Trains forecasts
to: '{{ input.function }}-trainers'
expires: P2D
output:
  schema:
    type: object
---
Please train {{ input.function }}.
"""
CALLS_A_TOOL = """---
call:
  server: models
  tool: train
output:
  schema:
    type: object
---
"""
READS_REPLIES = """---
to: data-team
expires: P1D
deliver:
  server: chat
  tool: post
  sent:
    conversation: /channel
    id: /ts
replies:
  read:
    list: /messages
    order: oldest_first
    each: { id: /ts, sender: /user, text: /text }
output:
  schema:
    type: object
---
Train it.
"""
APPROVER = """---
to: lead
expires: P1D
output:
  schema:
    type: object
    required: [decision]
    properties:
      decision: { type: string, enum: [approve, reject] }
---
Approve {{ input.version }}?
"""
NO_DECISION = """---
to: lead
expires: P1D
output:
  schema:
    type: object
    properties:
      note: { type: string }
---
Look at it.
"""
UNRENDERABLE = """---
to: '{{ input.team }}'
expires: P1D
output:
  schema:
    type: object
---
Train it.
"""
QUICK = """---
to: quick-team
expires: PT1M
output:
  schema:
    type: object
---
Train it within the minute.
"""
INTERACTIONS = {
    "train-forecasts": TRAINER,
    "call-tool": CALLS_A_TOOL,
    "read-replies": READS_REPLIES,
    "approve-versions": APPROVER,
    "no-decision": NO_DECISION,
    "unrenderable": UNRENDERABLE,
    "quick-trainer": QUICK,
}


class InteractionDocuments:
    """Stands in for the interaction type's save: the document's `output.schema` as its output schema."""

    name = "interaction"

    async def check(self, source: str) -> CheckedDocument:
        front = yaml.safe_load(source.split("---")[1]) or {}
        schema: Any = (front.get("output") or {}).get("schema")
        return CheckedDocument(
            media_type="text/markdown",
            description=front.get("description"),
            input_schema=None,
            output_schema=schema,
            shape=None,
            overview="An interaction function.\n",
        )

    async def parse(self, source: str) -> Any:
        return source

    async def run(self, request: RunRequest) -> RunEnding:
        return Rejected(Rejection("unavailable", "interaction functions do not run in these tests"))


async def _seed(ledger_file: Path | None, database_url: str | None, playbooks: list[str]) -> None:
    async with open_ledger(ledger_file, database_url, RUNTIME_PROJECTIONS) as ledger:
        registry = PlaybookRegistry(ledger)
        definitions = DefinitionRegistry(ledger, {"interaction": InteractionDocuments()})  # type: ignore[dict-item]
        async with registry.actors.serving(), definitions.actors.serving():
            for playbook in playbooks:
                await registry.create(ORG, playbook, "Forecasts", "", "local")
                for name, source in INTERACTIONS.items():
                    await definitions.create(PlaybookScope(ORG, playbook), "interaction", name, source, "local")


def seed(ledger_file: Path | None, database_url: str | None, playbooks: list[str]) -> None:
    """Creates `playbooks` in the org `acme`, each with the interaction functions of `INTERACTIONS`."""
    trio.run(_seed, ledger_file, database_url, playbooks)
