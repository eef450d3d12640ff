"""API keys: `abk_<8 hex id>_<43 url-safe base64 characters>`, kept by the server only as SHA-256 digests.

The server never stores a secret. `issue_api_key` makes one and the entry to put into `API_KEYS`;
`KeyRing.authenticate` finds the entry by the id embedded in the secret and compares digests in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from auto_runtime.auth.caller import Caller, Permission

API_KEY_PATTERN = re.compile(r"^abk_([0-9a-f]{8})_([A-Za-z0-9_-]{43})$")


@dataclass(frozen=True)
class KeyEntry:
    """One accepted key, as `API_KEYS` lists it: never the secret, only its digest."""

    id: str
    org: str
    permissions: tuple[Permission, ...]
    sha256: str
    playbooks: tuple[str, ...] | None = None

    def as_json(self) -> dict[str, object]:
        entry: dict[str, object] = {
            "id": self.id,
            "org": self.org,
            "permissions": [str(p) for p in self.permissions],
        }
        if self.playbooks is not None:
            entry["playbooks"] = list(self.playbooks)
        entry["sha256"] = self.sha256
        return entry

    def caller(self) -> Caller:
        return Caller(
            id=f"key_{self.id}",
            org=self.org,
            permissions=frozenset(self.permissions),
            playbooks=frozenset(self.playbooks) if self.playbooks is not None else None,
            credential="key",
        )


@dataclass(frozen=True)
class IssuedKey:
    secret: str
    entry: KeyEntry

    def entry_json(self) -> str:
        """The compact JSON entry the operator adds to the `API_KEYS` array."""
        return json.dumps(self.entry.as_json(), separators=(",", ":"))


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def issue_api_key(org: str, permissions: Sequence[Permission], playbooks: Sequence[str] | None = None) -> IssuedKey:
    key_id = secrets.token_hex(4)
    body = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii").rstrip("=")
    secret = f"abk_{key_id}_{body}"
    entry = KeyEntry(
        id=key_id,
        org=org,
        permissions=tuple(dict.fromkeys(permissions)),
        sha256=digest_of(secret),
        playbooks=tuple(dict.fromkeys(playbooks)) if playbooks is not None else None,
    )
    return IssuedKey(secret=secret, entry=entry)


class KeyRing:
    """The keys the server accepts, found by id and matched by digest in constant time."""

    def __init__(self, entries: Iterable[KeyEntry]) -> None:
        self._by_id: dict[str, KeyEntry] = {}
        for entry in entries:
            self._by_id[entry.id] = entry

    def __bool__(self) -> bool:
        return bool(self._by_id)

    def authenticate(self, credential: str) -> Caller | None:
        match = API_KEY_PATTERN.match(credential)
        if match is None:
            return None
        entry = self._by_id.get(match.group(1))
        if entry is None:
            return None
        if not hmac.compare_digest(digest_of(credential), entry.sha256):
            return None
        return entry.caller()
