"""The ledger's secret rows: sealed values kept beside the records, each under its scope and a name.

The ledger stores what it is given and never sees a value in clear: sealing and opening belong to the secret
store (`tools.secret_store`). Unlike records, a row can be replaced and forgotten, since a credential that is
removed must be gone (seeds, `remove_connection`). `ends_with` is the little the seeds let the runtime show of a
credential (its last four characters), kept beside the sealed value.

Concurrency: every method may be called from any Trio task. `replace` is a compare-and-set on the sealed bytes,
so two servers re-sealing the same row at start leave one of the two (equal in clear) values.

`SecretRows` is the port: it validates here, once for both stores, and each store's dialect
(`sqlite.secret_rows`, `postgres.secret_rows`) runs the SQL; `opening` composes it into the ledger
(`Ledger.secrets`).
"""

from __future__ import annotations

import abc
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .open_state import OpenState
from .streams import Scope, validate_segment

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


class SecretRows(abc.ABC):
    """`Ledger.secrets`: put, get, forget, and the whole table for the re-seal at start. A dialect implements the
    `_` steps with validated arguments."""

    def __init__(self, open_state: OpenState) -> None:
        self._open = open_state

    async def put(self, scope: Scope, name: str, sealed: bytes, ends_with: str | None) -> None:
        """Keep `sealed` under the scope and name, replacing what was there."""
        self._open.check()
        _checked(name, sealed)
        await self._put(SecretRow(scope.key, name, sealed, ends_with))

    async def get(self, scope: Scope, name: str) -> SecretRow | None:
        self._open.check()
        _checked(name)
        return await self._get(scope.key, name)

    async def forget(self, scope: Scope, name: str) -> bool:
        """Remove the row; whether there was one."""
        self._open.check()
        _checked(name)
        return await self._forget(scope.key, name)

    async def every(self) -> Sequence[SecretRow]:
        """Every row of every scope (for the re-seal under a new key at start)."""
        self._open.check()
        return await self._every()

    async def replace(self, row: SecretRow, sealed: bytes) -> bool:
        """Put `sealed` in place of `row.sealed` when the row still holds it; whether it did."""
        self._open.check()
        if not _SCOPE_KEY.fullmatch(row.scope_key):
            raise ValueError("not a scope key")
        _checked(row.name, sealed)
        return await self._replace(row, sealed)

    @abc.abstractmethod
    async def _put(self, row: SecretRow) -> None: ...

    @abc.abstractmethod
    async def _get(self, scope_key: str, name: str) -> SecretRow | None: ...

    @abc.abstractmethod
    async def _forget(self, scope_key: str, name: str) -> bool: ...

    @abc.abstractmethod
    async def _every(self) -> list[SecretRow]: ...

    @abc.abstractmethod
    async def _replace(self, row: SecretRow, sealed: bytes) -> bool: ...
