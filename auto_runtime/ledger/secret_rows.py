"""The ledger's secret rows: sealed values kept beside the records, each under its scope and a name.

The ledger stores what it is given and never sees a value in clear: sealing and opening belong to the secret
store (`tools.secret_store`). Unlike records, a row can be replaced and forgotten, since a credential that is
removed must be gone (seeds, `remove_connection`). `ends_with` is the little the seeds let the runtime show of a
credential (its last four characters), kept beside the sealed value.

Concurrency: every method may be called from any Trio task. `replace` is a compare-and-set on the sealed bytes,
so two servers re-sealing the same row at start leave one of the two (equal in clear) values.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .streams import validate_segment

if TYPE_CHECKING:
    from .ledger import Ledger
    from .streams import Scope

_SCOPE_KEY = re.compile(r"(org|playbook)(/[A-Za-z0-9_.:-]{1,64}){1,2}")
MAX_SEALED_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class SecretRow:
    scope_key: str
    name: str
    sealed: bytes
    ends_with: str | None


def _checked(name: str, sealed: bytes | None = None) -> None:
    validate_segment(name)
    if sealed is not None and (not isinstance(sealed, bytes) or not 0 < len(sealed) <= MAX_SEALED_BYTES):
        raise ValueError(f"a sealed value is 1 to {MAX_SEALED_BYTES} bytes")


@dataclass(frozen=True, slots=True)
class SecretRows:
    """`Ledger.secrets`: put, get, forget, and the whole table for the re-seal at start."""

    ledger: Ledger

    async def put(self, scope: Scope, name: str, sealed: bytes, ends_with: str | None) -> None:
        """Keep `sealed` under the scope and name, replacing what was there."""
        self.ledger._check_open()
        _checked(name, sealed)
        await self.ledger._put_secret(SecretRow(scope.key, name, sealed, ends_with))

    async def get(self, scope: Scope, name: str) -> SecretRow | None:
        self.ledger._check_open()
        _checked(name)
        return await self.ledger._get_secret(scope.key, name)

    async def forget(self, scope: Scope, name: str) -> bool:
        """Remove the row; whether there was one."""
        self.ledger._check_open()
        _checked(name)
        return await self.ledger._forget_secret(scope.key, name)

    async def every(self) -> Sequence[SecretRow]:
        """Every row of every scope (for the re-seal under a new key at start)."""
        self.ledger._check_open()
        return await self.ledger._every_secret()

    async def replace(self, row: SecretRow, sealed: bytes) -> bool:
        """Put `sealed` in place of `row.sealed` when the row still holds it; whether it did."""
        self.ledger._check_open()
        if not _SCOPE_KEY.fullmatch(row.scope_key):
            raise ValueError("not a scope key")
        _checked(row.name, sealed)
        return await self.ledger._replace_secret(row, sealed)
