"""Tools as the model sees them (reasoning-format §7.2 and §7.4): names, definitions and result texts."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from auto_runtime.functions.reasoning.json_schemas import portability_warnings
from auto_runtime.models import ToolDefinition
from auto_runtime.tools import OfferedTool

MAX_NAME = 64
MAX_DESCRIPTION_BYTES = 4096


def model_names(tools: Sequence[OfferedTool]) -> list[str]:
    """`<server>__<tool>` with every character outside `A-Za-z0-9_` made `_`; too long or shared names become
    the first 55 characters, `_`, and 8 hex digits of SHA-256 of `server/tool`."""
    plain = [re.sub(r"[^A-Za-z0-9_]", "_", f"{t.server}__{t.tool}") for t in tools]
    names: list[str] = []
    for tool, name in zip(tools, plain, strict=True):
        if len(name) > MAX_NAME or plain.count(name) > 1:
            digest = hashlib.sha256(f"{tool.server}/{tool.tool}".encode()).hexdigest()[:8]
            name = f"{name[:55]}_{digest}"
        names.append(name)
    return names


def _cut_bytes(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")
    return text if len(encoded) <= limit else encoded[:limit].decode("utf-8", "ignore")


def definitions(tools: Sequence[OfferedTool], names: Sequence[str]) -> tuple[ToolDefinition, ...]:
    return tuple(
        ToolDefinition(name, _cut_bytes(tool.description, MAX_DESCRIPTION_BYTES), dict(tool.input_schema))
        for tool, name in zip(tools, names, strict=True)
    )


def shown_to_model(text: str, room: int | None) -> tuple[str, int | None]:
    """The result as the model reads it within `room` bytes, and the bytes shown when cut (else None)."""
    size = len(text.encode("utf-8"))
    if room is None or size <= room:
        return text, None
    keep = max(room, 0)
    cut = _cut_bytes(text, keep)
    shown = len(cut.encode("utf-8"))
    note = (
        f"\n[Only the first {shown:,} of {size:,} bytes of this result are shown. Ask for fewer rows, fields or depth.]"
    )
    if _is_json(text):
        cut = json.dumps(cut, ensure_ascii=False)
    return cut + note, shown


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def canonical(arguments: Any) -> str:
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


ANTHROPIC_PROVIDERS = frozenset({"anthropic", "bedrock-anthropic", "vertex-anthropic"})


def compatibility_warnings(name: str, schema: Mapping[str, Any], provider: str) -> list[dict[str, str]]:
    """§7.2: places of a tool's input schema the run's provider may refuse or not hold arguments to."""
    warnings: list[dict[str, str]] = []
    if schema.get("type") != "object":
        warnings.append(
            {
                "type": "compatibility",
                "feature": f"{name} inputSchema#",
                "detail": "The tool's input schema is not an object; the provider may refuse it",
            }
        )
    if provider in ANTHROPIC_PROVIDERS:
        for pointer, providers, words in portability_warnings(schema):
            if "anthropic" in providers:
                warnings.append({"type": "compatibility", "feature": f"{name} inputSchema#{pointer}", "detail": words})
    return warnings
