"""Admitting a model reference before anything is called (reasoning-format §4.1 and §6 step 4).

Aliases first (one hop), then the allow list (the reference as written or its alias target), then
whether the provider is configured. A refusal is :class:`ModelNotOffered`: the run ends
``unavailable``, kind ``model_not_offered``, with ``because`` ``model_not_allowed`` or
``provider_not_configured``, and no Retry-After. Its detail never reveals the allow list nor names a
setting.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from auto_runtime.models.aliases import find_alias
from auto_runtime.models.allow_list import is_allowed
from auto_runtime.models.references import split_reference

NotOfferedBecause = Literal["model_not_allowed", "provider_not_configured"]


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """``requested`` as the document wrote it, ``resolved`` after aliases (record ``model``), and the
    provider prefix and model id to call; ``alias`` is the alias that applied, when one did."""

    requested: str
    resolved: str
    provider: str
    model_id: str
    alias: str | None = None


@dataclass
class ModelNotOffered(Exception):
    """The model may not or cannot be called; raised before any provider is asked."""

    because: NotOfferedBecause
    reference: str
    detail: str

    def __post_init__(self) -> None:
        Exception.__init__(self, self.detail)

    kind = "model_not_offered"


def _names(values: Collection[str]) -> str:
    return ", ".join(sorted(values)) if values else "none"


def resolve_reference(
    reference: str,
    *,
    aliases: Mapping[str, str],
    allowed: Sequence[str] | None,
    configured: Collection[str],
    known_prefixes: Collection[str],
) -> ResolvedModel:
    """The provider and model to call for ``reference``, or :class:`ModelNotOffered`.

    ``configured`` holds the prefixes of configured providers and gateways; ``known_prefixes`` every
    prefix a provider could have (built-in ones and gateways), to tell "not configured" from "no such
    provider". A reference that is not ``provider/model`` raises ValueError: parsing refuses it first.
    """
    match = find_alias(reference, aliases)
    target = match.target if match is not None else reference
    split = split_reference(target)
    if split is None:
        raise ValueError(f"{reference!r} is not a model reference provider/model")
    if not is_allowed(allowed, reference, match.target if match is not None else None):
        raise ModelNotOffered(
            "model_not_allowed",
            reference,
            f"The model {reference} is not offered on this server. Use list_models to see the models it offers.",
        )
    if split.provider not in configured:
        configured_words = f"Configured providers: {_names(configured)}. Aliases: {_names(aliases)}"
        if split.provider in known_prefixes:
            detail = f"{split.provider} is not configured. {configured_words}"
        else:
            detail = f"There is no provider named {split.provider}. {configured_words}"
        raise ModelNotOffered("provider_not_configured", reference, detail)
    return ResolvedModel(
        requested=reference,
        resolved=target,
        provider=split.provider,
        model_id=split.model_id,
        alias=match.alias if match is not None else None,
    )
