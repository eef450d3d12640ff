"""Records, the writes that append them, and their encoding for storage (shared by both stores)."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from . import json_text
from .ids import uuid7, validate_record_id
from .streams import StreamName, scope_key_of

MAX_RECORDS_PER_APPEND: Final = 512
"""Most records one `append` call may carry, over all its streams; more is a programming error.

Sized for the largest workflow input: up to 100 tasks moved (each a step event, and an emitted event for an
`emit`), the tasks its end cancels, the input itself, the run's start, deferral and ending."""

_TYPE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


class AnyVersion:
    """The expected version that accepts whatever version the stream has (no concurrency check)."""

    _instance: AnyVersion | None = None

    def __new__(cls) -> AnyVersion:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ANY_VERSION"


ANY_VERSION: Final = AnyVersion()


@dataclass(frozen=True, slots=True, init=False)
class NewRecord:
    """A record a command wants appended. `id` None (the default) means a fresh UUIDv7.

    `data` is any JSON value; `metadata` is a JSON object holding the seeds' metadata fields that are
    not positions (`correlation_id`, `causation_id`, `at`, `by`, `run_id`, `definition`, ...).
    `metadata["correlation_id"]`, when a string, is indexed for the run-tree read.
    """

    type: str
    data: Any
    metadata: Mapping[str, Any]
    id: str

    def __init__(self, type: str, data: Any, metadata: Mapping[str, Any] | None = None, id: str | None = None) -> None:
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "metadata", {} if metadata is None else metadata)
        object.__setattr__(self, "id", uuid7() if id is None else id)


@dataclass(frozen=True, slots=True)
class Record:
    """A recorded fact. `position` counts from 1 in its stream; `global_position` is the store's
    sequence (gaps allowed; on PostgreSQL not the commit order); `recorded_at` is UTC."""

    id: str
    stream: StreamName
    position: int
    global_position: int
    type: str
    data: Any
    metadata: dict[str, Any]
    recorded_at: datetime


@dataclass(frozen=True, slots=True)
class StreamWrite:
    """Records for one stream with the version the caller read: an int (0 = the stream must not exist)
    or `ANY_VERSION`."""

    stream: StreamName
    expected_version: int | AnyVersion
    records: Sequence[NewRecord]


@dataclass(frozen=True, slots=True)
class EncodedRecord:
    """A new record as both stores keep it, before it has positions."""

    id: str
    stream: str
    scope_key: str
    type: str
    data: str
    metadata: str
    correlation_id: str | None
    size: int
    recorded_at_us: int


def validate_writes(writes: Sequence[StreamWrite]) -> None:
    """Check an append before it reaches a store; `ValueError` for a programming error."""
    if not writes:
        raise ValueError("an append needs at least one stream write")
    total = 0
    streams: set[str] = set()
    ids: set[str] = set()
    for write in writes:
        scope_key_of(write.stream)
        if write.stream in streams:
            raise ValueError(f"stream {write.stream!r} appears twice in one append")
        streams.add(write.stream)
        expected = write.expected_version
        if not isinstance(expected, AnyVersion) and (
            not isinstance(expected, int) or isinstance(expected, bool) or expected < 0
        ):
            raise ValueError(f"expected_version must be an int >= 0 or ANY_VERSION, not {expected!r}")
        if not write.records:
            raise ValueError(f"the write to {write.stream!r} has no records")
        total += len(write.records)
        for record in write.records:
            validate_record_id(record.id)
            if record.id in ids:
                raise ValueError(f"record id {record.id!r} appears twice in one append")
            ids.add(record.id)
            if not isinstance(record.type, str) or not _TYPE.fullmatch(record.type):
                raise ValueError(f"invalid record type {record.type!r}")
            if not isinstance(record.metadata, Mapping):
                raise TypeError("record metadata must be a JSON object")
    if total > MAX_RECORDS_PER_APPEND:
        raise ValueError(f"an append carries at most {MAX_RECORDS_PER_APPEND} records, not {total}")


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def now_microseconds() -> int:
    """`to_microseconds(datetime.now(UTC))` without building the datetime: the same clock, floored alike."""
    return time.time_ns() // 1_000


def to_microseconds(moment: datetime) -> int:
    """UTC microseconds since the Unix epoch (how both stores keep `recorded_at`)."""
    if moment.tzinfo is None:
        raise ValueError("a datetime without an offset is ambiguous")
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_microseconds(value: int) -> datetime:
    """The inverse of `to_microseconds`, as an aware UTC datetime."""
    return _EPOCH + timedelta(microseconds=value)


def encode_record(
    stream: str, record: NewRecord, recorded_at_us: int, trace: Mapping[str, str] | None = None
) -> EncodedRecord:
    """Encode a validated new record; `ValueError` when its data or metadata is not JSON. `trace` (the append's
    `trace_id` and `span_id`) is added to its metadata, replacing any the record carried."""
    try:
        data = json_text.dumps(record.data)
        metadata = json_text.dumps({**record.metadata, **trace} if trace else dict(record.metadata))
    except (TypeError, ValueError) as error:
        raise ValueError(f"record {record.id!r} is not JSON: {error}") from error
    correlation = record.metadata.get("correlation_id")
    return EncodedRecord(
        id=record.id,
        stream=stream,
        scope_key=scope_key_of(stream),
        type=record.type,
        data=data,
        metadata=metadata,
        correlation_id=correlation if isinstance(correlation, str) else None,
        size=json_text.utf8_size(data) + json_text.utf8_size(metadata),
        recorded_at_us=recorded_at_us,
    )


def decode_record(
    record_id: str,
    stream: str,
    position: int,
    global_position: int,
    record_type: str,
    data: str,
    metadata: str,
    recorded_at_us: int,
) -> Record:
    """Build a `Record` from a stored row (the columns both stores share)."""
    return Record(
        id=record_id,
        stream=StreamName(stream),
        position=position,
        global_position=global_position,
        type=record_type,
        data=json_text.loads(data),
        metadata=json_text.loads(metadata),
        recorded_at=from_microseconds(recorded_at_us),
    )


def record_from_encoded(encoded: EncodedRecord, position: int, global_position: int) -> Record:
    """The `Record` a just-appended encoded record became (what projections and callers receive)."""
    return decode_record(
        encoded.id,
        encoded.stream,
        position,
        global_position,
        encoded.type,
        encoded.data,
        encoded.metadata,
        encoded.recorded_at_us,
    )
