"""The record of a reasoning run (reasoning-format §9), its token counts, and fitting it in the 1 MiB.

Besides §9's fields, a record carries `tokens: {input, output, cached}`, which the `runs` projection sums for
analytics (`input` = `usage.input.total`, `output` = `usage.output.total`, `cached` = `usage.input.cache_read`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auto_runtime.json_limits import MAX_OUTPUT_AND_RECORD_BYTES, json_size
from auto_runtime.models import ModelAnswer, ResolvedModel, TokenUsage

MAX_RECORD_WARNINGS = 20
PROMPT_SLACK = 128
LEAST_PROMPT_ROOM = 1024


@dataclass
class CallTally:
    """What the run's model calls answered so far: summed usage, the first call's start, the last answer."""

    usage: TokenUsage | None = None
    first_call_at: float | None = None
    answered_at: float | None = None
    last: ModelAnswer | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def add(self, answer: ModelAnswer, now: float) -> None:
        self.usage = answer.usage if self.usage is None else self.usage + answer.usage
        self.answered_at = now
        self.last = answer
        for warning in answer.warnings:
            entry = warning.as_record()
            if entry not in self.warnings:
                self.warnings.append(entry)

    def add_usage(self, usage: TokenUsage, now: float) -> None:
        self.usage = usage if self.usage is None else self.usage + usage
        self.answered_at = now

    @property
    def answered(self) -> bool:
        return self.usage is not None

    def duration_ms(self, now: float) -> int:
        start = self.first_call_at if self.first_call_at is not None else now
        return max(int((now - start) * 1000), 0)

    def usage_record(self, now: float) -> dict[str, Any] | None:
        """The record a rejection keeps after a model call answered: usage, duration, tokens; else None."""
        if self.usage is None:
            return None
        return {"usage": self.usage.as_record(), "duration_ms": self.duration_ms(now)}


def _cut_to(text: str, room: int) -> str:
    """The longest prefix of `text` whose JSON string takes at most `room` bytes."""
    if json_size(text) <= room:
        return text
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if json_size(text[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def fit_prompt(output: Any, record: dict[str, Any], instructions: str | None, message: str) -> dict[str, Any] | None:
    """`record` with its `prompt` fitted in the 1 MiB, or None when under 1,024 bytes are left for it."""
    room = MAX_OUTPUT_AND_RECORD_BYTES - json_size(output) - json_size(record) - PROMPT_SLACK
    if room < LEAST_PROMPT_ROOM:
        return None
    prompt: dict[str, Any] = {}
    if instructions is not None:
        prompt["instructions"] = instructions
    prompt["message"] = message
    prompt["truncated"] = False
    if json_size(prompt) + PROMPT_SLACK <= room:
        return {**record, "prompt": prompt}
    share = room // 2 if instructions is not None else room
    cut: dict[str, Any] = {}
    if instructions is not None:
        cut["instructions"] = _cut_to(instructions, share - PROMPT_SLACK)
    cut["message"] = _cut_to(message, share - PROMPT_SLACK)
    cut["truncated"] = True
    return {**record, "prompt": cut}


def success_record(
    *,
    model: ResolvedModel,
    settings: dict[str, Any],
    output_format: str,
    tally: CallTally,
    now: float,
    extra_warnings: list[dict[str, Any]],
) -> dict[str, Any]:
    """Every §9 field but `prompt`."""
    last = tally.last
    assert last is not None and tally.usage is not None
    warnings = (tally.warnings + extra_warnings)[:MAX_RECORD_WARNINGS]
    return {
        "model": {"requested": model.requested, "resolved": model.resolved, "answered": last.answered_model},
        "settings": settings,
        "output_format": output_format,
        "finish_reason": last.finish_reason,
        "raw_finish_reason": last.raw_finish_reason,
        "usage": tally.usage.as_record(),
        "response_id": last.response_id,
        "warnings": warnings,
        "duration_ms": tally.duration_ms(now),
    }
