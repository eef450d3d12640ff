"""OpenAPI documents a hostile server could serve, each small, each measured to break a reader without bounds.

The fake OpenAPI service serves each at ``/hostile/<name>``; the conversion's own tests read them directly.

* ``cycle.json``: two path items whose ``$ref`` point at each other (the validator recursed without end);
* ``deep.json``: a value nested 5,000 arrays deep (the JSON decoder recursed without end);
* ``aliases.yaml``: a YAML alias bomb of nine levels of nine aliases (9^9 values once built);
* ``holds_itself.json``: a schema that holds itself through ``allOf`` (the validator recursed without end);
* ``fan.json``: fourteen schemas, each ``allOf`` six references to the next: no loop and no alias, but the
  validator walks 6^14 schemas, so only a time bound ends it.
"""

from __future__ import annotations

import json
from typing import Any

ORIGIN = "http://127.0.0.1:9"


def _document(paths: dict[str, Any], schemas: dict[str, Any] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "hostile", "version": "1"},
        "servers": [{"url": f"{ORIGIN}/v1"}],
        "paths": paths,
    }
    if schemas is not None:
        document["components"] = {"schemas": schemas}
    return document


def _answering(reference: str) -> dict[str, Any]:
    schema = {"$ref": reference}
    return {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}}}


def _aliases() -> str:
    lines = ['openapi: "3.1.0"', "info: {title: hostile, version: '1'}", "paths: {}"]
    lines.append("a0: &a0 [" + ", ".join(["x"] * 9) + "]")
    lines += [f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]" for level in range(1, 10)]
    return "\n".join(lines) + "\n"


def _fan() -> dict[str, Any]:
    schemas: dict[str, Any] = {
        f"S{level}": {"allOf": [{"$ref": f"#/components/schemas/S{level + 1}"}] * 6} for level in range(14)
    }
    schemas["S14"] = {"type": "string"}
    return _document({"/fan": _answering("#/components/schemas/S0")}, schemas)


HOSTILE: dict[str, bytes] = {
    "cycle.json": json.dumps(_document({"/a": {"$ref": "#/paths/~1b"}, "/b": {"$ref": "#/paths/~1a"}})).encode(),
    "deep.json": b'{"openapi": "3.1.0", "x-deep": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    "aliases.yaml": _aliases().encode(),
    "holds_itself.json": json.dumps(
        _document(
            {"/self": _answering("#/components/schemas/A")},
            {"A": {"allOf": [{"$ref": "#/components/schemas/A"}]}},
        )
    ).encode(),
    "fan.json": json.dumps(_fan()).encode(),
}
