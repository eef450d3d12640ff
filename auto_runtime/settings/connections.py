"""The ``connections`` section: what people may add to an org as connections.

Every rule has a default, so leaving the section out lets people add any connection but one of the
reference kind, which names no variable until ``variables`` lists it.
"""

from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictStr

from auto_runtime.settings.addresses import is_host_name
from auto_runtime.settings.identifiers import VariableName
from auto_runtime.settings.variables import ALL_VARIABLE_NAMES

CredentialKind = Literal["none", "reference", "secret", "client_credentials"]

CLOUD_CREDENTIAL_VARIABLES = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AZURE_CLIENT_ID",
        "AZURE_CLIENT_SECRET",
        "AZURE_CLIENT_CERTIFICATE_PATH",
        "AZURE_CLIENT_CERTIFICATE_PASSWORD",
        "AZURE_TENANT_ID",
        "AZURE_USERNAME",
        "AZURE_PASSWORD",
        "GOOGLE_APPLICATION_CREDENTIALS",
    }
)
"""Credentials the cloud libraries read from the environment."""


def _host_pattern(value: str) -> str:
    host = value.removeprefix("*.")
    if not host or "*" in host or not is_host_name(host):
        raise ValueError("expects a host, or *. and a host for every host under it")
    return value.lower()


def _distinct(values: tuple[str, ...]) -> tuple[str, ...]:
    if len(set(values)) != len(values):
        raise ValueError("expects each item once")
    return values


class ConnectionsPolicy(BaseModel):
    """The rules ``add_connection`` applies, and that are checked again when a connection is used."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    people_may_add: StrictBool = Field(
        default=True,
        description="false refuses every new connection, and the runtime uses none already added",
    )
    allowed_hosts: tuple[Annotated[StrictStr, AfterValidator(_host_pattern)], ...] | None = Field(
        default=None, description="The hosts a connection may reach; every host when left out"
    )
    credential_kinds: Annotated[tuple[CredentialKind, ...], AfterValidator(_distinct)] | None = Field(
        default=None, description="The kinds of credential a connection may take; every kind when left out"
    )
    variables: Annotated[tuple[VariableName, ...], AfterValidator(_distinct)] = Field(
        default=(), description="The environment variables a reference credential may name"
    )


def reserved_variable_index(variables: tuple[str, ...], also_reserved: Iterable[str]) -> int | None:
    """The index of the first variable the runtime reads for itself, or None.

    Reserved are the variables of the configuration reference, the credentials the cloud libraries
    read, and ``also_reserved``: the gateways' api_key_env and every variable a reference names.
    """
    reserved = ALL_VARIABLE_NAMES | CLOUD_CREDENTIAL_VARIABLES | frozenset(also_reserved)
    for index, variable in enumerate(variables):
        if variable in reserved or variable.startswith("OTEL_"):
            return index
    return None
