"""The model settings that are lists and maps: gateways, aliases, declared and allowed models.

Rules from the reasoning format page: a gateway's ``name`` is a provider prefix that is not a
built-in one and not used twice; its ``base_url`` is http or https; ``api_key`` is sent as a bearer
and in the file is always a reference; ``api_key_env`` is for MODEL_GATEWAYS alone. An alias maps
one model reference to another, with ``*`` once at the end of both sides or of neither, and one hop
only. ``declared_models`` lists model ids by provider prefix; ``allowed_models`` lists references,
each ending in ``*`` or not.
"""

from collections.abc import Mapping
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictStr

from auto_runtime.settings.addresses import split_url
from auto_runtime.settings.identifiers import HeaderName, ServerName, VariableName

BUILT_IN_PROVIDERS = frozenset(
    {"anthropic", "openai", "google", "bedrock", "bedrock-anthropic", "azure", "vertex", "vertex-anthropic"}
)
RESERVED_PROVIDER_OPTIONS = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "n",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "frequency_penalty",
        "presence_penalty",
        "seed",
        "stop",
        "response_format",
        "tools",
        "tool_choice",
        "functions",
        "function_call",
        "reasoning_effort",
        "verbosity",
    }
)


def _gateway_url(value: str) -> str:
    if split_url(value) is None:
        raise ValueError("expects an http or https URL")
    return value.rstrip("/")


def _provider_options(values: tuple[str, ...]) -> tuple[str, ...]:
    if len(set(values)) > 64:
        raise ValueError("expects at most 64 different names")
    if any(not 1 <= len(value) <= 64 for value in values):
        raise ValueError("expects names of 1 to 64 characters")
    if RESERVED_PROVIDER_OPTIONS.intersection(values):
        raise ValueError("expects no field the runtime sets itself, such as model, messages, tools or max_tokens")
    return values


class ModelGateway(BaseModel):
    """An OpenAI-compatible gateway; its ``name`` is the provider prefix of its models.

    The repr leaves out the fields that hold secrets.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: ServerName = Field(description="The gateway's name, the provider prefix of its models")
    base_url: Annotated[StrictStr, AfterValidator(_gateway_url)] = Field(
        description="http or https; /chat/completions and /models are appended"
    )
    api_key: StrictStr | None = Field(
        default=None, repr=False, description="Sent as Authorization: Bearer; a ${NAME} reference"
    )
    api_key_env: VariableName | None = Field(
        default=None, description="MODEL_GATEWAYS only, instead of api_key: the variable that holds the key"
    )
    headers: dict[HeaderName, StrictStr] = Field(
        default_factory=dict, repr=False, description="Headers sent with every request; a ${NAME} reference is a secret"
    )
    query_params: dict[StrictStr, StrictStr] = Field(
        default_factory=dict,
        repr=False,
        description="Query parameters sent with every request; a ${NAME} reference is a secret",
    )
    structured_outputs: StrictBool = Field(
        default=False,
        description="true asks for JSON output with response_format json_schema; false asks for json_object "
        "and checks the schema locally",
    )
    expose_provider_messages: StrictBool = Field(
        default=False, description="Shows callers the first line of the gateway's own error text, cut to 300 characters"
    )
    allowed_provider_options: Annotated[tuple[StrictStr, ...], AfterValidator(_provider_options)] = Field(
        default=(),
        description="The keys a function may pass under the gateway's namespace of provider options, at most 64",
    )


def _model_reference(value: str, *, wildcard: bool) -> str:
    provider, slash, model = value.partition("/")
    if not slash or not provider or not model or (wildcard and "*" in value[:-1]) or (not wildcard and "*" in value):
        raise ValueError(
            "expects a model reference provider/model"
            + (", with * only once, at the end" if wildcard else " without *")
        )
    return value


def _reference_or_wildcard(value: str) -> str:
    return _model_reference(value, wildcard=True)


ModelPattern = Annotated[StrictStr, AfterValidator(_reference_or_wildcard)]
ModelAliases = dict[ModelPattern, ModelPattern]
DeclaredModels = dict[StrictStr, tuple[Annotated[StrictStr, Field(min_length=1)], ...]]
AllowedModels = tuple[ModelPattern, ...]


def alias_problem(aliases: Mapping[str, str]) -> tuple[str, str] | None:
    """The alias and the problem of the first alias that is malformed or leads to another alias."""
    wildcard_prefixes = [alias[:-1] for alias in aliases if alias.endswith("*")]
    for alias, target in aliases.items():
        if alias.endswith("*") != target.endswith("*"):
            return alias, "expects * at the end of both the alias and its target, or of neither"
        stem = target.removesuffix("*")
        leads_on = target in aliases or any(
            stem.startswith(prefix) and (target.endswith("*") or len(stem) > len(prefix))
            for prefix in wildcard_prefixes
        )
        if leads_on:
            return alias, "expects a target that is not itself an alias (one hop only)"
    return None


def declared_models_problem(declared: Mapping[str, tuple[str, ...]], gateway_names: set[str]) -> str | None:
    """The first provider prefix of ``declared_models`` that names no built-in provider or gateway."""
    for prefix in declared:
        if prefix not in BUILT_IN_PROVIDERS and prefix not in gateway_names:
            return prefix
    return None
