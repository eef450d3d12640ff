"""Record ids: UUIDv7 by default (they sort by time), any id-safe text when the caller names one."""

from __future__ import annotations

import os
import re
import time
import uuid

RECORD_ID_MAX_LENGTH = 128
_RECORD_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


def uuid7() -> str:
    """A fresh UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then random bits."""
    millis = time.time_ns() // 1_000_000
    value = (millis & ((1 << 48) - 1)) << 80 | int.from_bytes(os.urandom(10), "big")
    value = (value & ~(0xF << 76)) | (0x7 << 76)
    value = (value & ~(0x3 << 62)) | (0x2 << 62)
    return str(uuid.UUID(int=value))


def validate_record_id(record_id: str) -> str:
    """Return `record_id` when it is 1 to 128 of `A-Z a-z 0-9 _ . : -`, else raise `ValueError`."""
    if not isinstance(record_id, str) or not _RECORD_ID.fullmatch(record_id):
        raise ValueError(f"invalid record id {record_id!r}")
    return record_id
