"""The settings the server runs with: one typed attribute per variable of the configuration reference."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from auto_runtime.logs import LogFormat, LogLevel
from auto_runtime.settings.addresses import is_loopback_host
from auto_runtime.settings.api_keys import ApiKeyEntry
from auto_runtime.settings.connections import ConnectionsPolicy
from auto_runtime.settings.model_settings import ModelGateway
from auto_runtime.settings.parsers import S3Location
from auto_runtime.settings.tool_servers import ToolServer
from auto_runtime.settings.variables import DatabaseCredentials, MetricsSwitch, OpenAIApi


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Read once at start; each attribute is the variable of the same name in lower case.

    ``ledger_file`` is absolute, or None when ``database_url`` keeps the ledger in PostgreSQL.
    ``allowed_models`` is None when every model is allowed. Provider keys are None when not set.
    The repr leaves out every attribute that may hold a credential.
    """

    # Server and logs
    host: str
    port: int
    config_file: Path | None
    log_format: LogFormat
    log_level: LogLevel
    # Sign-in and access
    public_url: str | None
    identity_issuer: str
    api_keys: tuple[ApiKeyEntry, ...]
    allowed_origins: tuple[str, ...]
    # Storage
    ledger_file: Path | None
    database_url: str | None = field(repr=False)
    database_credentials: DatabaseCredentials
    secrets_key: bytes | None = field(repr=False)
    secrets_key_previous: bytes | None = field(repr=False)
    content_store_url: S3Location | None
    # Models
    anthropic_api_key: str | None = field(repr=False)
    anthropic_auth_token: str | None = field(repr=False)
    anthropic_base_url: str | None
    openai_api_key: str | None = field(repr=False)
    openai_base_url: str | None
    openai_api: OpenAIApi
    google_generative_ai_api_key: str | None = field(repr=False)
    aws_region: str | None
    aws_bearer_token_bedrock: str | None = field(repr=False)
    aws_endpoint_url_bedrock_runtime: str | None
    aws_endpoint_url: str | None
    azure_resource_name: str | None
    azure_base_url: str | None
    azure_api_key: str | None = field(repr=False)
    azure_api_version: str | None
    google_vertex_project: str | None
    google_vertex_location: str | None
    model_gateways: tuple[ModelGateway, ...]
    model_aliases: Mapping[str, str]
    declared_models: Mapping[str, tuple[str, ...]]
    allowed_models: tuple[str, ...] | None
    node_use_env_proxy: bool
    https_proxy: str | None = field(repr=False)
    no_proxy: str | None
    node_extra_ca_certs: Path | None
    reasoning_max_input_tokens: int
    # Workflows
    workflow_max_duration: timedelta
    workflow_nested_runs: int
    workflow_max_open_calls: int
    workflow_sweep_interval: timedelta
    workflow_partitions: int
    # Playbook actors
    playbook_idle_time: timedelta
    playbook_actors_live: int
    actor_mailbox_capacity: int
    # Telemetry
    otel_exporter_otlp_endpoint: str | None
    telemetry_content: bool
    metrics: MetricsSwitch
    # Computation and recall functions
    computation_workers: int
    recall_max_functions: int
    recall_max_rebuilds: int
    recall_playbooks_at_once: int
    # Interaction functions
    interaction_open_requests: int
    # Prediction functions
    prediction_max_functions: int
    prediction_processes: int
    prediction_process_memory: int
    prediction_builds_at_once: int
    prediction_builds_per_day: int
    prediction_cache_dir: Path
    # Tool servers
    tool_servers: Mapping[str, ToolServer]
    connections: ConnectionsPolicy

    @property
    def local_mode(self) -> bool:
        """A loopback host with neither PUBLIC_URL nor API_KEYS: the server asks for no credential."""
        return is_local_mode(self.host, self.public_url, self.api_keys)


def is_local_mode(host: str, public_url: str | None, api_keys: tuple[ApiKeyEntry, ...]) -> bool:
    return is_loopback_host(host) and public_url is None and not api_keys
