"""The entries of ``API_KEYS`` / ``api_keys``: the keys the server accepts, by the SHA-256 of each."""

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr

from auto_runtime.settings.identifiers import OrgId, PlaybookId, matching

Permission = Literal["org:read", "org:write", "playbook:read", "playbook:write"]


def _distinct(values: tuple[str, ...]) -> tuple[str, ...]:
    if len(set(values)) != len(values):
        raise ValueError("expects each item once")
    return values


class ApiKeyEntry(BaseModel):
    """One key, as the key command prints it. The secret itself is never kept: only its SHA-256."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[
        StrictStr,
        AfterValidator(matching(r"[0-9a-f]{8}", "expects 8 lowercase hexadecimal digits")),
        Field(
            json_schema_extra={"pattern": "^[0-9a-f]{8}$"},
            description="The key's id, the 8 hexadecimal digits after abk_ in the key",
        ),
    ]
    org: OrgId = Field(description="The org the key belongs to")
    permissions: Annotated[tuple[Permission, ...], Field(min_length=1), AfterValidator(_distinct)] = Field(
        description="What the key may do"
    )
    playbooks: Annotated[tuple[PlaybookId, ...], Field(min_length=1), AfterValidator(_distinct)] | None = Field(
        default=None,
        description="The playbooks the key may reach; every playbook of the org when left out.",
    )
    sha256: Annotated[
        StrictStr,
        AfterValidator(matching(r"[0-9a-f]{64}", "expects the SHA-256 of the key as 64 lowercase hexadecimal digits")),
        Field(
            json_schema_extra={"pattern": "^[0-9a-f]{64}$"},
            description="The SHA-256 of the whole key; the key itself is never kept",
        ),
    ]


def check_api_keys(entries: tuple[ApiKeyEntry, ...]) -> tuple[int, str] | None:
    """The index and the problem of the first entry that repeats an earlier id or digest."""
    ids: set[str] = set()
    digests: set[str] = set()
    for index, entry in enumerate(entries):
        if entry.id in ids:
            return index, "expects each key's id once"
        if entry.sha256 in digests:
            return index, "expects each key's sha256 once"
        ids.add(entry.id)
        digests.add(entry.sha256)
    return None
