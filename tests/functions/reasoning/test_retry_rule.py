"""`tools_called` (seeds, "Retrying under a run id"): a run of a function with `tools` is not run again under its
id once it may have called a tool, on a real ledger with the real run service."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from auto_runtime.functions.reasoning import ReasoningType
from auto_runtime.functions.registry import function_types
from auto_runtime.json_limits import canonical_digest
from auto_runtime.ledger import Ledger, NewRecord, PlaybookScope, StreamWrite, open_ledger
from auto_runtime.models import ModelDirectory
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.problems import Rejection
from auto_runtime.runs.facts import RUN_REJECTED, RUN_STARTED, run_stream
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.settings import load_settings

SCOPE = PlaybookScope("acme", "pb-retry")
SOURCE = "---\nmodel: fake/m\ntools: [helpdesk/get_customer]\n---\nHello {{ input.name }}\n"
INPUT = {"name": "Ada"}


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[tuple[Ledger, RunService]]:
    settings = load_settings({"HOST": "127.0.0.1"}, tmp_path, mode="image").settings
    models = ModelDirectory.from_settings(settings)
    async with open_ledger(ledger_file=tmp_path / "ledger.db", projections=RUNTIME_PROJECTIONS) as ledger:
        types = function_types(ReasoningType(models, None, 2_000_000))
        definitions = DefinitionRegistry(ledger, types)
        try:
            async with definitions.actors.serving():
                await definitions.create(SCOPE, "reasoning", "helper", SOURCE, "tester")
                runs = RunService(ledger, definitions, types)
                yield ledger, runs
        finally:
            await models.aclose()


def _metadata(run_id: str) -> dict[str, object]:
    return {
        "correlation_id": run_id,
        "causation_id": None,
        "by": "tester",
        "run_id": run_id,
        "definition": {"type": "reasoning", "name": "helper", "version": 1},
    }


async def test_a_run_of_a_function_with_tools_still_started_answers_tools_called(
    services: tuple[Ledger, RunService],
) -> None:
    ledger, runs = services
    run_id = "0199a3c4-7d2e-7c1a-9b3f-2f1e0d9c8b7a"
    started = NewRecord(
        RUN_STARTED, {"input": INPUT, "input_digest": canonical_digest(INPUT), "calls_tools": True}, _metadata(run_id)
    )
    await ledger.append([StreamWrite(run_stream(SCOPE, run_id), 0, [started])])
    with pytest.raises(Rejection) as raised:
        await runs.run_definition(SCOPE, "reasoning", "helper", INPUT, run_id, "tester")
    assert raised.value.reason == "conflict" and raised.value.kind == "tools_called"
    assert raised.value.because is None


async def test_an_ended_run_that_only_read_answers_only_read(services: tuple[Ledger, RunService]) -> None:
    ledger, runs = services
    run_id = "0199a3c4-7d2e-7c1a-9b3f-2f1e0d9c8b7b"
    metadata = _metadata(run_id)
    facts = [
        NewRecord(
            RUN_STARTED, {"input": INPUT, "input_digest": canonical_digest(INPUT), "calls_tools": True}, metadata
        ),
        NewRecord("tool_call_started", {"number": 1, "server": "helpdesk", "tool": "t", "read_only": True}, metadata),
        NewRecord(RUN_REJECTED, {"reason": "unavailable", "detail": "gone", "kind": "tools_unfinished"}, metadata),
    ]
    await ledger.append([StreamWrite(run_stream(SCOPE, run_id), 0, facts)])
    with pytest.raises(Rejection) as raised:
        await runs.run_definition(SCOPE, "reasoning", "helper", INPUT, run_id, "tester")
    assert raised.value.kind == "tools_called" and raised.value.because == "only_read"


async def test_a_run_that_ended_before_its_first_call_runs_again(services: tuple[Ledger, RunService]) -> None:
    ledger, runs = services
    run_id = "0199a3c4-7d2e-7c1a-9b3f-2f1e0d9c8b7c"
    for attempt in (1, 2):
        with pytest.raises(Rejection) as raised:
            await runs.run_definition(SCOPE, "reasoning", "helper", INPUT, run_id, "tester")
        assert raised.value.kind in ("tool_not_offered", "model_not_offered"), attempt
    history = await ledger.read_stream(run_stream(SCOPE, run_id))
    started = [record for record in history if record.type == RUN_STARTED]
    assert len(started) == 2 and all(record.data["calls_tools"] for record in started)
