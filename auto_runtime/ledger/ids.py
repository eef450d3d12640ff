"""Record ids: UUIDv7 by default (they sort by time), any id-safe text when the caller names one.

`uuid7` draws its random bits from a block of `os.urandom` taken `_RANDOM_BLOCK` bytes at a time (one system
call for hundreds of ids rather than one each); the block is shared by every thread under `_random_lock`, so no
two ids take the same bytes, and a forked child drops the block (and the lock) it inherited
(`os.register_at_fork`), so a parent and its child never draw the same bytes either.
"""

from __future__ import annotations

import os
import re
import threading
import time

RECORD_ID_MAX_LENGTH = 128
_RECORD_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")

_RANDOM_BYTES = 10
_RANDOM_BLOCK = 4000
_MILLIS = (1 << 48) - 1
_RAND_A = 0xFFF
_RAND_B = (1 << 62) - 1

_random_lock = threading.Lock()
_block = b""
_taken = 0


def _drop_block() -> None:
    """In a forked child: forget the parent's block, and take a fresh lock (a thread of the parent may have
    held it at the fork, and no thread of the child would ever release it)."""
    global _block, _taken, _random_lock
    _block, _taken, _random_lock = b"", 0, threading.Lock()


os.register_at_fork(after_in_child=_drop_block)


def _random_bits() -> int:
    """80 fresh random bits from the shared block (refilled from `os.urandom` when used up)."""
    global _block, _taken
    with _random_lock:
        start = _taken
        if start + _RANDOM_BYTES > len(_block):
            _block, start = os.urandom(_RANDOM_BLOCK), 0
        _taken = start + _RANDOM_BYTES
        block = _block
    return int.from_bytes(block[start : start + _RANDOM_BYTES], "big")


def uuid7() -> str:
    """A fresh UUID version 7 (RFC 9562), in its canonical text: 48 bits of Unix milliseconds, the version
    (7), 12 random bits, the variant (binary 10), 62 random bits."""
    random = _random_bits()
    value = (
        (time.time_ns() // 1_000_000 & _MILLIS) << 80
        | 0x7 << 76
        | (random >> 64 & _RAND_A) << 64
        | 0x2 << 62
        | random & _RAND_B
    )
    digits = f"{value:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def validate_record_id(record_id: str) -> str:
    """Return `record_id` when it is 1 to 128 of `A-Z a-z 0-9 _ . : -`, else raise `ValueError`."""
    if not isinstance(record_id, str) or not _RECORD_ID.fullmatch(record_id):
        raise ValueError(f"invalid record id {record_id!r}")
    return record_id
