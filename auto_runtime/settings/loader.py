"""``load_settings``: the shell, then ``.env``, then the configuration file, then the defaults.

``.env`` and the implicit ``auto-runtime.yaml`` are read only on the command line (the seeds' npx
form); the image reads a configuration file only when CONFIG_FILE names it. A variable set to the
empty string counts as not set, so an empty shell variable leaves the one of ``.env`` in force.
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar
from urllib.parse import urlsplit

from auto_runtime.settings import variables as v
from auto_runtime.settings.addresses import is_loopback_host
from auto_runtime.settings.dotenv import read_dotenv
from auto_runtime.settings.errors import SettingsError
from auto_runtime.settings.list_settings import ListSettings, read_list_settings
from auto_runtime.settings.settings import Settings
from auto_runtime.settings.yaml_file import ConfigurationFile, read_configuration_file

T = TypeVar("T")

DEFAULT_CONFIG_FILE = "auto-runtime.yaml"
DOTENV_FILE = ".env"


@dataclass(frozen=True, slots=True)
class LoadedSettings:
    """The settings, the secrets the configuration's references took, and where everything came from."""

    settings: Settings
    secret_values: frozenset[str]
    dotenv_file: Path | None
    config_file: Path | None
    read_from_file: tuple[str, ...]
    set_in_environment_too: tuple[str, ...]

    def startup_lines(self) -> list[str]:
        """What the server logs at start about where its settings came from; never a value."""
        lines: list[str] = []
        if self.dotenv_file is not None:
            lines.append(f"Read variables from {self.dotenv_file}")
        if self.config_file is None:
            lines.append("No configuration file")
            return lines
        lines.append(f"Configuration file: {self.config_file}")
        lines.append(f"Settings read from the configuration file: {', '.join(self.read_from_file) or 'none'}")
        if self.set_in_environment_too:
            lines.append(
                f"Of those, the environment also sets, and replaces whole: {', '.join(self.set_in_environment_too)}"
            )
        return lines


def load_settings(
    environ: Mapping[str, str], cwd: Path, mode: Literal["command_line", "image"] = "command_line"
) -> LoadedSettings:
    """Read every setting once; raises SettingsError with one line naming what is wrong."""
    cwd = cwd.absolute()
    dotenv_path = cwd / DOTENV_FILE
    dotenv = read_dotenv(dotenv_path) if mode == "command_line" else {}
    environment = {
        **dotenv,
        **{name: value for name, value in environ.items() if value or name not in dotenv},
    }
    file = _configuration_file(environment, cwd, mode)
    lists = read_list_settings(environment, file, cwd)
    settings = _settings(environment, cwd, mode, file, lists)
    return LoadedSettings(
        settings=settings,
        secret_values=lists.secrets,
        dotenv_file=dotenv_path if dotenv else None,
        config_file=file.path if file else None,
        read_from_file=lists.read_from_file,
        set_in_environment_too=lists.set_in_environment_too,
    )


def _configuration_file(environment: Mapping[str, str], cwd: Path, mode: str) -> ConfigurationFile | None:
    named = environment.get(v.CONFIG_FILE)
    if named:
        return read_configuration_file(cwd / _expand_home(named, environment), named)
    implicit = cwd / DEFAULT_CONFIG_FILE
    if mode == "command_line" and implicit.is_file():
        return read_configuration_file(implicit, DEFAULT_CONFIG_FILE)
    return None


def _expand_home(path: str | Path, environment: Mapping[str, str]) -> Path:
    """``~`` and ``~/...`` from the HOME of ``environment``; ``~user`` as the system knows it."""
    text = str(path)
    home = environment.get("HOME")
    if home and (text == "~" or text.startswith("~/")):
        return Path(home) / text[2:]
    return Path(os.path.expanduser(text))


def _settings(
    environment: Mapping[str, str],
    cwd: Path,
    mode: v.Mode,
    file: ConfigurationFile | None,
    lists: ListSettings,
) -> Settings:
    read = _Reader(environment, mode)
    database_url = read(v.DATABASE_URL)
    settings = Settings(
        host=read(v.HOST),
        port=read(v.PORT),
        config_file=file.path if file else None,
        log_format=read(v.LOG_FORMAT),
        log_level=read(v.LOG_LEVEL),
        public_url=read(v.PUBLIC_URL),
        identity_issuer=read(v.IDENTITY_ISSUER),
        api_keys=lists.api_keys,
        allowed_origins=lists.allowed_origins,
        ledger_file=None if database_url else cwd / _expand_home(read(v.LEDGER_FILE), environment),
        database_url=database_url,
        database_credentials=read(v.DATABASE_CREDENTIALS),
        secrets_key=read(v.SECRETS_KEY),
        secrets_key_previous=read(v.SECRETS_KEY_PREVIOUS),
        content_store_url=read(v.CONTENT_STORE_URL),
        anthropic_api_key=read(v.ANTHROPIC_API_KEY),
        anthropic_auth_token=read(v.ANTHROPIC_AUTH_TOKEN),
        anthropic_base_url=read(v.ANTHROPIC_BASE_URL),
        openai_api_key=read(v.OPENAI_API_KEY),
        openai_base_url=read(v.OPENAI_BASE_URL),
        openai_api=read(v.OPENAI_API),
        google_generative_ai_api_key=read(v.GOOGLE_GENERATIVE_AI_API_KEY),
        aws_region=read(v.AWS_REGION),
        aws_bearer_token_bedrock=read(v.AWS_BEARER_TOKEN_BEDROCK),
        aws_endpoint_url_bedrock_runtime=read(v.AWS_ENDPOINT_URL_BEDROCK_RUNTIME),
        aws_endpoint_url=read(v.AWS_ENDPOINT_URL),
        azure_resource_name=read(v.AZURE_RESOURCE_NAME),
        azure_base_url=read(v.AZURE_BASE_URL),
        azure_api_key=read(v.AZURE_API_KEY),
        azure_api_version=read(v.AZURE_API_VERSION),
        google_vertex_project=read(v.GOOGLE_VERTEX_PROJECT),
        google_vertex_location=read(v.GOOGLE_VERTEX_LOCATION),
        model_gateways=lists.model_gateways,
        model_aliases=lists.model_aliases,
        declared_models=lists.declared_models,
        allowed_models=lists.allowed_models,
        node_use_env_proxy=read(v.NODE_USE_ENV_PROXY),
        https_proxy=read(v.HTTPS_PROXY),
        no_proxy=read(v.NO_PROXY),
        node_extra_ca_certs=_anchored(read(v.NODE_EXTRA_CA_CERTS), cwd, environment),
        reasoning_max_input_tokens=read(v.REASONING_MAX_INPUT_TOKENS),
        workflow_max_duration=read(v.WORKFLOW_MAX_DURATION),
        workflow_nested_runs=read(v.WORKFLOW_NESTED_RUNS),
        workflow_max_open_calls=read(v.WORKFLOW_MAX_OPEN_CALLS),
        workflow_sweep_interval=read(v.WORKFLOW_SWEEP_INTERVAL),
        workflow_partitions=read(v.WORKFLOW_PARTITIONS),
        playbook_idle_time=read(v.PLAYBOOK_IDLE_TIME),
        playbook_actors_live=read(v.PLAYBOOK_ACTORS_LIVE),
        actor_mailbox_capacity=read(v.ACTOR_MAILBOX_CAPACITY),
        otel_exporter_otlp_endpoint=read(v.OTEL_EXPORTER_OTLP_ENDPOINT),
        telemetry_content=read(v.TELEMETRY_CONTENT),
        metrics=read(v.METRICS),
        computation_workers=read(v.COMPUTATION_WORKERS),
        recall_max_functions=read(v.RECALL_MAX_FUNCTIONS),
        recall_max_rebuilds=read(v.RECALL_MAX_REBUILDS),
        recall_playbooks_at_once=read(v.RECALL_PLAYBOOKS_AT_ONCE),
        interaction_open_requests=read(v.INTERACTION_OPEN_REQUESTS),
        prediction_max_functions=read(v.PREDICTION_MAX_FUNCTIONS),
        prediction_processes=read(v.PREDICTION_PROCESSES),
        prediction_process_memory=read(v.PREDICTION_PROCESS_MEMORY),
        prediction_builds_at_once=read(v.PREDICTION_BUILDS_AT_ONCE),
        prediction_builds_per_day=read(v.PREDICTION_BUILDS_PER_DAY),
        prediction_cache_dir=read(v.PREDICTION_CACHE_DIR),
        tool_servers=lists.tool_servers,
        connections=lists.connections,
    )
    _check_together(settings, environment)
    return settings


@dataclass(frozen=True, slots=True)
class _Reader:
    environment: Mapping[str, str]
    mode: v.Mode

    def __call__(self, variable: v.Variable[T]) -> T:
        return variable.read(self.environment, self.mode)


def _anchored(path: Path | None, cwd: Path, environment: Mapping[str, str]) -> Path | None:
    return None if path is None else cwd / _expand_home(path, environment)


def _check_together(settings: Settings, environment: Mapping[str, str]) -> None:
    """The rules that join two or more settings."""
    if settings.database_url is not None:
        if environment.get(v.LEDGER_FILE.name):
            raise SettingsError(
                "LEDGER_FILE: expects to be left out beside DATABASE_URL, which keeps the ledger in PostgreSQL"
            )
        if settings.secrets_key is None:
            raise SettingsError("SECRETS_KEY: a ledger in PostgreSQL (DATABASE_URL) needs it")
        if settings.database_credentials == "aws-iam" and urlsplit(settings.database_url).password:
            raise SettingsError("DATABASE_URL: expects no password beside DATABASE_CREDENTIALS=aws-iam")
    if settings.secrets_key_previous is not None and settings.secrets_key is None:
        raise SettingsError("SECRETS_KEY_PREVIOUS: expects SECRETS_KEY beside it, the key that replaces it")
    if settings.prediction_builds_at_once >= settings.prediction_processes:
        raise SettingsError(
            "PREDICTION_BUILDS_AT_ONCE: expects fewer builds than PREDICTION_PROCESSES, "
            "so that a question always finds a process"
        )
    if not is_loopback_host(settings.host) and settings.public_url is None and not settings.api_keys:
        raise SettingsError(
            "HOST: the server needs PUBLIC_URL or API_KEYS to listen on an address other than a loopback one"
        )
