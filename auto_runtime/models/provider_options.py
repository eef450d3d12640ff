"""``provider_options``: which namespaces each provider reads, what they offer, and gateway options.

Reasoning-format §4.5. Parsing (which knows no gateways) refuses options a built-in namespace does not
offer, using :data:`OFFERED_OPTIONS`. At run time a namespace that is not built-in must be a configured
gateway's name or its camel case, and each of its keys must be in that entry's
``allowed_provider_options``; otherwise the run ends ``conflict``, ``unworkable`` before any request
(:class:`ProviderOptionRefused`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from auto_runtime.settings import ModelGateway

OFFERED_OPTIONS: Mapping[str, frozenset[str]] = {
    "anthropic": frozenset({"thinking"}),
    "openai": frozenset({"textVerbosity", "reasoningMode", "logitBias"}),
    "azure": frozenset({"textVerbosity", "reasoningMode", "logitBias"}),
    "google": frozenset({"thinkingConfig", "safetySettings", "threshold"}),
    "vertex": frozenset({"thinkingConfig", "safetySettings", "threshold"}),
    "googleVertex": frozenset({"thinkingConfig", "safetySettings", "threshold", "thinking"}),
    "amazonBedrock": frozenset({"reasoningConfig"}),
    "bedrock": frozenset({"reasoningConfig"}),
}
ANTHROPIC_THINKING_KEYS = frozenset({"type", "budgetTokens", "display"})

# The namespaces each provider reads, first found wins (for options read whole, such as thinking).
NAMESPACES_READ: Mapping[str, tuple[str, ...]] = {
    "anthropic": ("anthropic",),
    "bedrock-anthropic": ("anthropic", "bedrock"),
    "vertex-anthropic": ("anthropic", "googleVertex"),
    "openai": ("openai",),
    "azure": ("azure", "openai"),
    "google": ("google",),
    "vertex": ("googleVertex", "vertex", "google"),
    "bedrock": ("amazonBedrock", "bedrock"),
}


def camel_case(name: str) -> str:
    """``my-gw`` → ``myGw``: the second spelling of a gateway's namespace."""
    head, *rest = name.split("-")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclass
class ProviderOptionRefused(Exception):
    """A gateway option the entry does not allow, or a gateway namespace that is no configured gateway.

    The run ends ``conflict``, kind ``unworkable``; ``field`` is the pointer under the document.
    """

    field: str
    detail: str

    def __post_init__(self) -> None:
        Exception.__init__(self, self.detail)


def gateway_of_namespace(namespace: str, gateways: Sequence[ModelGateway]) -> ModelGateway | None:
    for gateway in gateways:
        if namespace in (gateway.name, camel_case(gateway.name)):
            return gateway
    return None


def check_gateway_options(options: Mapping[str, Mapping[str, Any]], gateways: Sequence[ModelGateway]) -> None:
    """Refuse every namespace that is not built-in and not a gateway, and every option a gateway does not allow."""
    for namespace, values in options.items():
        if namespace in OFFERED_OPTIONS:
            continue
        gateway = gateway_of_namespace(namespace, gateways)
        if gateway is None:
            raise ProviderOptionRefused(
                f"/provider_options/{namespace}",
                f"provider_options names {namespace}, which is neither a provider nor a gateway of this server",
            )
        for key in values:
            if key not in gateway.allowed_provider_options:
                raise ProviderOptionRefused(
                    f"/provider_options/{namespace}/{key}",
                    f"The gateway {gateway.name} does not allow the provider option {key}",
                )


def offered_option_problems(options: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Parse-time check of the built-in namespaces: ``(pointer, words)`` for each option not offered.

    Namespaces that are not built-in may be gateways, which parsing does not know: they are left to
    :func:`check_gateway_options` at run time.
    """
    problems: list[tuple[str, str]] = []
    for namespace, values in options.items():
        offered = OFFERED_OPTIONS.get(namespace)
        if offered is None:
            continue
        for key, value in values.items():
            pointer = f"/provider_options/{namespace}/{key}"
            if key not in offered:
                problems.append((pointer, f"{namespace}.{key} is not offered"))
            elif key == "thinking" and isinstance(value, Mapping):
                problems.extend(
                    (f"{pointer}/{inner}", f"{namespace}.thinking.{inner} is not offered")
                    for inner in value
                    if inner not in ANTHROPIC_THINKING_KEYS
                )
    return problems


def first_option(options: Mapping[str, Mapping[str, Any]], provider: str, key: str) -> Any | None:
    """The value of ``key`` in the first of ``provider``'s namespaces that sets it."""
    for namespace in NAMESPACES_READ.get(provider, ()):
        values = options.get(namespace)
        if values is not None and key in values:
            return values[key]
    return None


def gateway_fields(options: Mapping[str, Mapping[str, Any]], gateway: ModelGateway) -> dict[str, Any]:
    """The top-level Chat Completions fields a gateway's namespace adds (already checked as allowed)."""
    return {
        key: value
        for namespace in (gateway.name, camel_case(gateway.name))
        for key, value in options.get(namespace, {}).items()
        if key in gateway.allowed_provider_options
    }


def anthropic_thinking(value: Any) -> dict[str, Any] | None:
    """``thinking: {type, budgetTokens, display}`` on the wire as ``{type, budget_tokens, display}``."""
    if not isinstance(value, Mapping):
        return None
    wire: dict[str, Any] = {}
    if "type" in value:
        wire["type"] = value["type"]
    if "budgetTokens" in value:
        wire["budget_tokens"] = value["budgetTokens"]
    if "display" in value:
        wire["display"] = value["display"]
    return wire or None
