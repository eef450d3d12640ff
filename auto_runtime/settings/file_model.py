"""The keys of the configuration file, their types, and the file's JSON Schema.

Each key stands for the environment variable of the same name in upper case.
"""

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr, TypeAdapter

from auto_runtime.settings.addresses import is_origin
from auto_runtime.settings.api_keys import ApiKeyEntry
from auto_runtime.settings.connections import ConnectionsPolicy
from auto_runtime.settings.model_settings import AllowedModels, DeclaredModels, ModelAliases, ModelGateway
from auto_runtime.settings.tool_servers import ToolServer


def _origin(value: str) -> str:
    value = value.rstrip("/")
    if not is_origin(value):
        raise ValueError("expects an origin, scheme://host[:port] with http or https")
    return value


Origin = Annotated[StrictStr, AfterValidator(_origin)]
ModelGateways = tuple[ModelGateway, ...]
ToolServers = dict[StrictStr, ToolServer]
ApiKeys = tuple[ApiKeyEntry, ...]
AllowedOrigins = tuple[Origin, ...]


class ConfigurationFileModel(BaseModel):
    """The configuration file: the settings that are lists or maps.

    The loader validates each key with :data:`ADAPTERS`; this model gives the file's JSON Schema.
    """

    model_config = ConfigDict(extra="forbid", title="Auto Runtime configuration file")

    model_gateways: ModelGateways = Field(
        default=(),
        description="OpenAI-compatible gateways, each its own provider prefix; MODEL_GATEWAYS wins",
    )
    model_aliases: ModelAliases = Field(
        default_factory=dict, description="A map from one model reference to another; MODEL_ALIASES wins"
    )
    declared_models: DeclaredModels = Field(
        default_factory=dict, description="Model ids listed for a provider prefix; DECLARED_MODELS wins"
    )
    allowed_models: AllowedModels = Field(
        default=(),
        description="The only model references a definition may give; every model when left out",
    )
    tool_servers: ToolServers = Field(
        default_factory=dict, description="Tool servers functions may call, by name; TOOL_SERVERS wins"
    )
    connections: ConnectionsPolicy = Field(
        default_factory=ConnectionsPolicy, description="What people may add as connections; CONNECTIONS wins"
    )
    api_keys: ApiKeys = Field(default=(), description="The API keys the server accepts; API_KEYS wins")
    allowed_origins: AllowedOrigins = Field(
        default=(), description="Origins a browser page may call the API from; ALLOWED_ORIGINS wins"
    )


FILE_KEYS: tuple[str, ...] = tuple(ConfigurationFileModel.model_fields)

ADAPTERS: dict[str, TypeAdapter[Any]] = {
    "model_gateways": TypeAdapter(ModelGateways),
    "model_aliases": TypeAdapter(ModelAliases),
    "declared_models": TypeAdapter(DeclaredModels),
    "allowed_models": TypeAdapter(AllowedModels),
    "tool_servers": TypeAdapter(ToolServers),
    "connections": TypeAdapter(ConnectionsPolicy),
    "api_keys": TypeAdapter(ApiKeys),
    "allowed_origins": TypeAdapter(AllowedOrigins),
}
"""One validator per file key; its keys are :data:`FILE_KEYS`."""
