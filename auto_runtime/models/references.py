"""A model reference ``<provider>/<model id>``: split at the first ``/``, the model id sent unchanged."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ModelReference:
    """``provider`` is the prefix before the first ``/``; ``model_id`` is the rest, which may hold more ``/``."""

    provider: str
    model_id: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model_id}"


def split_reference(text: str) -> ModelReference | None:
    """The reference's two sides, or None when it has no ``/`` or an empty side (refused at parse)."""
    provider, slash, model_id = text.partition("/")
    if not slash or not provider or not model_id:
        return None
    return ModelReference(provider, model_id)


def prefix_of(text: str) -> str:
    """The provider prefix of a reference or pattern: what comes before its first ``/``."""
    return text.partition("/")[0]
