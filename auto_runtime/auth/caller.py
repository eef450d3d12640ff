"""Who is calling, and what they may do: the result of authentication, read by the dispatcher."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal


class Permission(StrEnum):
    ORG_READ = "org:read"
    ORG_WRITE = "org:write"
    PLAYBOOK_READ = "playbook:read"
    PLAYBOOK_WRITE = "playbook:write"


ALL_PERMISSIONS = frozenset(Permission)
LOCAL_ORG = "local"

CredentialKind = Literal["local", "key", "token"]
"""What authenticated the caller: nothing (local mode), an API key, or a signed-in person's access token."""


@dataclass(frozen=True)
class Caller:
    """An authenticated caller.

    `org` is None only in local mode, where the caller acts in whatever org the request names. `playbooks` is
    None when the caller may access every playbook of its org, else the ids it may access. `credential` says what
    authenticated it; a caller of a `token` is a person who signed in, and its `id` is that person's id at the
    identity service (`auto_runtime.auth.access_tokens`).
    """

    id: str
    org: str | None
    permissions: frozenset[Permission]
    playbooks: frozenset[str] | None = None
    credential: CredentialKind = "key"

    @property
    def is_local(self) -> bool:
        return self.org is None

    @property
    def is_person(self) -> bool:
        """Whether a person who signed in through the identity service makes the request."""
        return self.credential == "token"

    @property
    def credential_named(self) -> str:
        """How a refusal names what the caller sent: "key" for an API key, "sign-in" for a person's token."""
        return "sign-in" if self.is_person else "key"

    def may_act_in_org(self, org: str) -> bool:
        return self.org is None or self.org == org

    def may_access_playbook(self, playbook: str) -> bool:
        return self.playbooks is None or playbook in self.playbooks

    def holds_any(self, permissions: frozenset[Permission]) -> bool:
        return bool(self.permissions & permissions)

    def own_org(self) -> str:
        """The org an endpoint without an org in its path acts on: the key's org, or `local` in local mode."""
        return self.org if self.org is not None else LOCAL_ORG


LOCAL_CALLER = Caller(id="local", org=None, permissions=ALL_PERMISSIONS, credential="local")
