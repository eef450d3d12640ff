"""Every environment variable of the configuration reference that holds one value.

The lists and maps (MODEL_GATEWAYS, TOOL_SERVERS, API_KEYS...) are read by
:mod:`auto_runtime.settings.list_settings`; their names are in :data:`LIST_VARIABLES`.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from auto_runtime.logs import LogFormat, LogLevel
from auto_runtime.settings import parsers
from auto_runtime.settings.errors import SettingsError

T = TypeVar("T")
Mode = Literal["command_line", "image"]
DatabaseCredentials = Literal["url", "aws-iam"]
OpenAIApi = Literal["responses", "chat_completions"]
MetricsSwitch = Literal["off", "on"]


@dataclass(frozen=True, slots=True)
class ByMode(Generic[T]):
    """A default that differs between the command line (the seeds' npx form) and the image."""

    command_line: T
    image: T

    def __call__(self, mode: Mode) -> T:
        return self.command_line if mode == "command_line" else self.image


@dataclass(frozen=True, slots=True)
class Variable(Generic[T]):
    """One environment variable: its name, how its text is read, and its default."""

    name: str
    parse: Callable[[str], T]
    default: ByMode[T]

    def read(self, environment: Mapping[str, str], mode: Mode) -> T:
        """The value set in ``environment``, or the default; an empty value counts as not set."""
        text = environment.get(self.name)
        if not text:
            return self.default(mode)
        try:
            return self.parse(text)
        except parsers.RefusedError as refused:
            raise SettingsError(f"{self.name}: {refused.expects}") from None


def _same(value: T) -> ByMode[T]:
    return ByMode(value, value)


def _optional(name: str, parse: Callable[[str], T]) -> Variable[T | None]:
    """A variable with no default."""
    no_default: ByMode[T | None] = ByMode(None, None)
    return Variable(name, parse, no_default)


def _choice(*options: str) -> Callable[[str], Any]:
    """A parser of one of ``options``; the variable's annotation gives the Literal type."""
    return parsers.one_of(*options)


def _text(name: str) -> Variable[str | None]:
    return _optional(name, parsers.text)


def _url(name: str) -> Variable[str | None]:
    return _optional(name, parsers.http_url)


def _count(name: str, least: int, most: int, default: int) -> Variable[int]:
    return Variable(name, parsers.integer(least, most), _same(default))


# Server and logs
PORT = Variable("PORT", parsers.integer(0, 65535), _same(5555))
HOST = Variable("HOST", parsers.host, ByMode("127.0.0.1", "0.0.0.0"))
LOG_FORMAT: Variable[LogFormat] = Variable(
    "LOG_FORMAT", _choice("json", "pretty", "console"), ByMode("console", "json")
)
LOG_LEVEL: Variable[LogLevel] = Variable(
    "LOG_LEVEL", _choice("debug", "info", "warn", "error"), ByMode("error", "info")
)

# Sign-in and access
PUBLIC_URL = _optional("PUBLIC_URL", parsers.public_url)
IDENTITY_ISSUER = Variable("IDENTITY_ISSUER", parsers.issuer_url, _same("https://clerk.on.auto"))

# Storage
LEDGER_FILE = Variable(
    "LEDGER_FILE", parsers.any_path, ByMode(Path("~/.auto-runtime/ledger.db"), Path("data/ledger.db"))
)
DATABASE_URL = _optional("DATABASE_URL", parsers.postgres_url)
DATABASE_CREDENTIALS: Variable[DatabaseCredentials] = Variable(
    "DATABASE_CREDENTIALS", _choice("url", "aws-iam"), _same("url")
)
SECRETS_KEY = _optional("SECRETS_KEY", parsers.secrets_key)
SECRETS_KEY_PREVIOUS = _optional("SECRETS_KEY_PREVIOUS", parsers.secrets_key)
CONTENT_STORE_URL = _optional("CONTENT_STORE_URL", parsers.s3_location)

# Models
ANTHROPIC_API_KEY = _text("ANTHROPIC_API_KEY")
ANTHROPIC_AUTH_TOKEN = _text("ANTHROPIC_AUTH_TOKEN")
ANTHROPIC_BASE_URL = _url("ANTHROPIC_BASE_URL")
OPENAI_API_KEY = _text("OPENAI_API_KEY")
OPENAI_BASE_URL = _url("OPENAI_BASE_URL")
OPENAI_API: Variable[OpenAIApi] = Variable("OPENAI_API", _choice("responses", "chat_completions"), _same("responses"))
GOOGLE_GENERATIVE_AI_API_KEY = _text("GOOGLE_GENERATIVE_AI_API_KEY")
AWS_REGION = _text("AWS_REGION")
AWS_BEARER_TOKEN_BEDROCK = _text("AWS_BEARER_TOKEN_BEDROCK")
AWS_ENDPOINT_URL_BEDROCK_RUNTIME = _url("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
AWS_ENDPOINT_URL = _url("AWS_ENDPOINT_URL")
AZURE_RESOURCE_NAME = _text("AZURE_RESOURCE_NAME")
AZURE_BASE_URL = _url("AZURE_BASE_URL")
AZURE_API_KEY = _text("AZURE_API_KEY")
AZURE_API_VERSION = _text("AZURE_API_VERSION")
GOOGLE_VERTEX_PROJECT = _text("GOOGLE_VERTEX_PROJECT")
GOOGLE_VERTEX_LOCATION = _text("GOOGLE_VERTEX_LOCATION")
NODE_USE_ENV_PROXY = Variable("NODE_USE_ENV_PROXY", parsers.boolean, _same(False))
HTTPS_PROXY = _url("HTTPS_PROXY")
NO_PROXY = _text("NO_PROXY")
NODE_EXTRA_CA_CERTS = _optional("NODE_EXTRA_CA_CERTS", parsers.any_path)
REASONING_MAX_INPUT_TOKENS = _count("REASONING_MAX_INPUT_TOKENS", 10_000, 9_999_999, 2_000_000)

# Workflows
WORKFLOW_MAX_DURATION = Variable("WORKFLOW_MAX_DURATION", parsers.duration("PT2H", "P365D"), _same(timedelta(days=30)))
WORKFLOW_NESTED_RUNS = _count("WORKFLOW_NESTED_RUNS", 1, 1000, 32)
WORKFLOW_MAX_OPEN_CALLS = _count("WORKFLOW_MAX_OPEN_CALLS", 1, 9999, 1000)
WORKFLOW_SWEEP_INTERVAL = Variable(
    "WORKFLOW_SWEEP_INTERVAL", parsers.duration("PT0.01S", "PT1M"), _same(timedelta(seconds=1))
)
WORKFLOW_PARTITIONS = _count("WORKFLOW_PARTITIONS", 1, 1024, 64)

# Playbook actors
PLAYBOOK_IDLE_TIME = Variable("PLAYBOOK_IDLE_TIME", parsers.duration("PT1S", "PT24H"), _same(timedelta(minutes=1)))
PLAYBOOK_ACTORS_LIVE = _count("PLAYBOOK_ACTORS_LIVE", 1, 1_000_000, 10_000)
ACTOR_MAILBOX_CAPACITY = _count("ACTOR_MAILBOX_CAPACITY", 1, 100_000, 100)

# Telemetry
OTEL_EXPORTER_OTLP_ENDPOINT = _url("OTEL_EXPORTER_OTLP_ENDPOINT")
TELEMETRY_CONTENT = Variable("TELEMETRY_CONTENT", parsers.boolean, _same(False))
METRICS: Variable[MetricsSwitch] = Variable("METRICS", _choice("off", "on"), _same("off"))

# Computation and recall functions
COMPUTATION_WORKERS = _count("COMPUTATION_WORKERS", 1, 64, 4)
RECALL_MAX_FUNCTIONS = _count("RECALL_MAX_FUNCTIONS", 1, 1000, 32)
RECALL_MAX_REBUILDS = _count("RECALL_MAX_REBUILDS", 1, 64, 4)
RECALL_PLAYBOOKS_AT_ONCE = _count("RECALL_PLAYBOOKS_AT_ONCE", 1, 64, 4)

# Interaction functions
INTERACTION_OPEN_REQUESTS = _count("INTERACTION_OPEN_REQUESTS", 1, 1_000_000, 10_000)

# Prediction functions
PREDICTION_MAX_FUNCTIONS = _count("PREDICTION_MAX_FUNCTIONS", 1, 1000, 32)
PREDICTION_PROCESSES = _count("PREDICTION_PROCESSES", 2, 64, 4)
PREDICTION_PROCESS_MEMORY = _count("PREDICTION_PROCESS_MEMORY", 768, 16_384, 1280)
PREDICTION_BUILDS_AT_ONCE = _count("PREDICTION_BUILDS_AT_ONCE", 1, 63, 2)
PREDICTION_BUILDS_PER_DAY = _count("PREDICTION_BUILDS_PER_DAY", 1, 100, 4)
PREDICTION_CACHE_DIR = Variable("PREDICTION_CACHE_DIR", parsers.absolute_path, _same(Path("/var/tmp/auto-runtime")))

CONFIG_FILE = "CONFIG_FILE"

LIST_VARIABLES = (
    "MODEL_GATEWAYS",
    "MODEL_ALIASES",
    "DECLARED_MODELS",
    "ALLOWED_MODELS",
    "TOOL_SERVERS",
    "CONNECTIONS",
    "API_KEYS",
    "ALLOWED_ORIGINS",
)

SCALAR_VARIABLES: tuple[Variable[object], ...] = tuple(
    value for value in globals().copy().values() if isinstance(value, Variable)
)

ALL_VARIABLE_NAMES: frozenset[str] = frozenset(
    {variable.name for variable in SCALAR_VARIABLES} | set(LIST_VARIABLES) | {CONFIG_FILE}
)
"""Every variable the runtime reads for itself."""
