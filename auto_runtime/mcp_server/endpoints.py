"""The three MCP endpoints and what each acts on (spec mcp.md §1).

| Path | Kind | Acts on |
| `/mcp` | `own` | the caller's own org (`local` in local mode), the playbook an argument of each playbook tool |
| `/orgs/{org}/mcp` | `org` | the org in the path |
| `/orgs/{org}/playbooks/{playbook}/mcp` | `playbook` | one playbook of one org |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from auto_runtime.auth.access import PROTECTED_RESOURCE_PREFIX
from auto_runtime.auth.caller import Caller

EndpointKind = Literal["own", "org", "playbook"]


@dataclass(frozen=True)
class Endpoint:
    """One MCP endpoint as a request names it. `org` is None on `/mcp` (the caller's own org applies)."""

    kind: EndpointKind
    org: str | None = None
    playbook: str | None = None

    @property
    def path(self) -> str:
        if self.kind == "own":
            return "/mcp"
        if self.kind == "org":
            return f"/orgs/{self.org}/mcp"
        return f"/orgs/{self.org}/playbooks/{self.playbook}/mcp"

    def org_for(self, caller: Caller) -> str:
        """The org the connection acts on."""
        return self.org if self.org is not None else caller.own_org()


def _segment_ok(segment: str) -> bool:
    return bool(segment) and segment not in (".", "..")


def parse_endpoint(path: str) -> Endpoint | None:
    """The endpoint a request path names, or None when it names none (exact paths only, no trailing slash)."""
    if path == "/mcp":
        return Endpoint("own")
    parts = path.split("/")
    # ["", "orgs", org, "mcp"] or ["", "orgs", org, "playbooks", playbook, "mcp"]
    if len(parts) == 4 and parts[0] == "" and parts[1] == "orgs" and parts[3] == "mcp" and _segment_ok(parts[2]):
        return Endpoint("org", org=parts[2])
    if (
        len(parts) == 6
        and parts[0] == ""
        and parts[1] == "orgs"
        and parts[3] == "playbooks"
        and parts[5] == "mcp"
        and _segment_ok(parts[2])
        and _segment_ok(parts[4])
    ):
        return Endpoint("playbook", org=parts[2], playbook=parts[4])
    return None


def parse_metadata_path(path: str) -> Endpoint | Literal["root"] | None:
    """What a protected-resource metadata path describes (RFC 9728 §3.1): `"root"` for the bare well-known path,
    the endpoint for the path form, None for any other path."""
    if path == PROTECTED_RESOURCE_PREFIX:
        return "root"
    if not path.startswith(PROTECTED_RESOURCE_PREFIX + "/"):
        return None
    return parse_endpoint(path.removeprefix(PROTECTED_RESOURCE_PREFIX))


def metadata_path_of(endpoint: Endpoint) -> str:
    return PROTECTED_RESOURCE_PREFIX + endpoint.path
