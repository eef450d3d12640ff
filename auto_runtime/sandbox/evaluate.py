"""Evaluating a program once: a fresh sandbox, the entry function called with one JSON input, the ending.

The trap codes and the bridge decide the ending, never the guest's word alone: out of fuel while the
entry function runs is work, and so is a stack overflow inside `re` (its backtracking steps are work; see
`regex_frames.py`); the deadline callback's stop is the duration or a cancellation; any other trap, an exit
before the result, or a bridge call out of order is `Broken`. The output text the guest's
writer sent is parsed again on the host, written again by the host (its floats shortest) and measured.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from auto_runtime.json_pointers import pointer_of
from auto_runtime.problems import cut_text
from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.json_values import compact_json, utf8_size
from auto_runtime.sandbox.limits import PRELUDE_FUEL, WORK_FUEL, WRITER_FUEL
from auto_runtime.sandbox.outcomes import (
    Broken,
    Cancelled,
    OutOfMemory,
    OutOfWork,
    OutputNotJson,
    OutputOutOfMemory,
    OutputTooDeep,
    OutputTooLarge,
    PastDeadline,
    Raised,
    Returned,
    SandboxOutcome,
)
from auto_runtime.sandbox.prelude import EVALUATE_ENTRY
from auto_runtime.sandbox.regex_frames import overflowed_in_regex
from auto_runtime.sandbox.store_run import StoreEnding, StoreSession, run_store
from auto_runtime.sandbox.wire import read_wire, wire_prefix_size

_PROGRAM_FRAME = re.compile(r'File "program", line (\d+)')
_ORDER = ("program", "input", "start", "end", "result")


@dataclass(frozen=True)
class Evaluation:
    """One call of a program's entry function with one input.

    `source` is the program as written; `first_line` the document line its first line stands on, so the
    sandbox's line numbers are the document's. `input_json` is compact JSON the host wrote.
    `started_at_ms` is the run's start in milliseconds since 1970 UTC: every clock of the run reads it.
    """

    source: str
    first_line: int
    input_json: str
    started_at_ms: int
    output_limit: int
    entry: str = "main"
    work_fuel: int = WORK_FUEL


def _program_line(trace: str) -> int | None:
    lines = _PROGRAM_FRAME.findall(trace)
    return int(lines[-1]) if lines else None


class _Fuel:
    """The `start` and `end` hooks: the work allowance, and what the entry function spent of it."""

    def __init__(self, session: StoreSession, allowance: int) -> None:
        self.session = session
        self.allowance = allowance
        self.work: int | None = None

    def start(self) -> None:
        self.session.set_fuel(self.allowance)

    def end(self) -> None:
        self.work = self.allowance - self.session.fuel_left()
        self.session.set_fuel(WRITER_FUEL)


def evaluate(engine: SandboxEngine, evaluation: Evaluation, control: RunControl) -> SandboxOutcome:
    """Run the evaluation in a fresh store on this thread and say how it ended."""
    request = json.dumps(
        {
            "source": evaluation.source,
            "first_line": evaluation.first_line,
            "entry": evaluation.entry,
            "limit": evaluation.output_limit,
        },
        ensure_ascii=False,
    )
    session = StoreSession(engine, PRELUDE_FUEL)
    fuel = _Fuel(session, evaluation.work_fuel)
    bridge = Bridge(
        _ORDER,
        {"program": request.encode(), "input": evaluation.input_json.encode()},
        clock_ns=evaluation.started_at_ms * 1_000_000,
        on_call={"start": fuel.start, "end": fuel.end},
    )
    try:
        ending = run_store(engine, session, EVALUATE_ENTRY, bridge, control)
    finally:
        del session
    return _outcome(engine, evaluation, bridge, fuel, ending, control)


def _outcome(
    engine: SandboxEngine,
    evaluation: Evaluation,
    bridge: Bridge,
    fuel: _Fuel,
    ending: StoreEnding,
    control: RunControl,
) -> SandboxOutcome:
    if control.stopped == "cancelled":
        return Cancelled()
    if control.stopped == "deadline":
        return PastDeadline()
    if bridge.refused is not None:
        return Broken(bridge.refused, ending.stderr)
    if bridge.last_call == "start" and (
        ending.trap == "OUT_OF_FUEL"
        or (ending.trap == "STACK_OVERFLOW" and overflowed_in_regex(engine, ending.trap_functions))
    ):
        return OutOfWork(work=evaluation.work_fuel)
    if not ending.clean or bridge.result is None:
        reason = ending.trap or ending.error or f"exit code {ending.exit_code} after {bridge.last_call!r}"
        return Broken(reason, ending.stderr)
    return _from_result(evaluation, bridge.result, fuel.work, ending)


def _from_result(evaluation: Evaluation, result: bytes, work: int | None, ending: StoreEnding) -> SandboxOutcome:
    """Read the guest's result: error texts as UTF-8 with lone surrogates replaced, output strictly."""
    tag = result[:1].decode("ascii", "replace")
    body = result[1:]
    try:
        if tag == "R":
            type_name, trace, text = json.loads(body.decode("utf-8", "replace"))
            return Raised(_program_line(trace), str(type_name), cut_text(str(text)), work)
        if tag == "M":
            (trace,) = json.loads(body.decode("utf-8", "replace"))
            return OutOfMemory(_program_line(trace), work)
        if work is None:
            return Broken(f"result {tag!r} before the entry function ended", ending.stderr)
        if tag == "O":
            return _returned(evaluation, body, work, ending)
        if tag in ("W", "D"):
            header, _newline, written = body.partition(b"\n")
            if wire_prefix_size(written) > evaluation.output_limit:
                return OutputTooLarge(work)
            if tag == "D":
                return OutputTooDeep(pointer_of(json.loads(header)), work)
            what, tokens = json.loads(header)
            return OutputNotJson(str(what), pointer_of(tokens), work)
        if tag == "L":
            return OutputTooLarge(work)
        if tag == "H":
            return OutputOutOfMemory(work)
    except (ValueError, TypeError) as error:
        return Broken(f"a result the host cannot read: {error}", ending.stderr)
    return Broken(f"a result with the unknown tag {tag!r}", ending.stderr)


def _returned(evaluation: Evaluation, data: bytes, work: int, ending: StoreEnding) -> SandboxOutcome:
    try:
        value = read_wire(data)
        written = compact_json(value)
    except (ValueError, UnicodeDecodeError) as error:
        return Broken(f"an output the host cannot read: {error}", ending.stderr)
    size = utf8_size(written)
    if size > evaluation.output_limit:
        return OutputTooLarge(work)
    return Returned(output=value, output_json=written, output_bytes=size, work=work)
