"""Trace and span ids in the W3C Trace Context format: 32 and 16 lowercase hexadecimal digits, never all zeros."""

from __future__ import annotations

import random

TRACE_ID_DIGITS = 32
SPAN_ID_DIGITS = 16


def trace_id_text(value: int) -> str:
    return f"{value:0{TRACE_ID_DIGITS}x}"


def span_id_text(value: int) -> str:
    return f"{value:0{SPAN_ID_DIGITS}x}"


def new_trace_id() -> str:
    """A random trace id (what an append records when the server sends no telemetry)."""
    return trace_id_text(random.getrandbits(128) or 1)


def new_span_id() -> str:
    return span_id_text(random.getrandbits(64) or 1)
