"""Calls out of the server: tool servers' tools by outcome, models by provider and outcome (`ok`, or the
error's class, for an exception that left the call: a call refused by its server within an answer is `ok`
here). Counted by the spans placed around each call (`telemetry.spans`)."""

from __future__ import annotations

from auto_runtime.metrics.state import METERING

OUTCOME = "auto_runtime.call.outcome"
PROVIDER = "gen_ai.provider.name"


def tool_called(error: BaseException | None) -> None:
    if METERING.on:
        METERING.instruments.tool_calls.add(1, {OUTCOME: _outcome(error)})


def model_called(provider: str, error: BaseException | None) -> None:
    if METERING.on:
        METERING.instruments.model_calls.add(1, {PROVIDER: provider, OUTCOME: _outcome(error)})


def _outcome(error: BaseException | None) -> str:
    return "ok" if error is None else type(error).__name__
