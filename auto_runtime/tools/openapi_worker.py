"""The conversion of one OpenAPI document, in a process of its own: `python -m auto_runtime.tools.openapi_worker
<MiB>`.

Why a process: a document is hostile input, and the validator's walk over it is third-party work whose cost on a
crafted document (a fan of `allOf` references, say) cannot be bounded from outside; a thread cannot be stopped,
a process can. `convert_in_worker` (in `openapi_document`) starts one per document, at most
`CONVERSIONS_AT_ONCE` at a time, and kills it at its time bound; the process limits its own data segment
(`RLIMIT_DATA`) to the MiB given before it reads anything, and inherits none of the server's environment
beyond what starts Python.

The protocol: stdin holds one line of JSON, `{"name": <entry name>, "entry": <the entry as JSON>}`, then the
document's bytes as they were read. stdout answers one JSON object: `{"ok": true, "document": <ApiDocument as
JSON>}`, or `{"ok": false, "refused": <the refusal's line, naming the entry>}`.
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

from auto_runtime.settings import ToolServer
from auto_runtime.settings.errors import SettingsError
from auto_runtime.tools.openapi_document import convert_document, refused


def answer(request: dict[str, Any], raw: bytes, mebibytes: int) -> str:
    """What the process writes back for one request: the document, or the refusal naming the entry."""
    name = str(request["name"])
    try:
        document = convert_document(name, ToolServer.model_validate(request["entry"]), raw)
        return json.dumps({"ok": True, "document": document.as_json()})
    except SettingsError as error:
        return json.dumps({"ok": False, "refused": str(error)})
    except MemoryError:
        words = f"takes more than {mebibytes} MiB to check"
    except Exception as error:  # a crafted document may break the checks in any way: it is refused, named
        words = f"could not be checked ({type(error).__name__})"
    return json.dumps({"ok": False, "refused": str(refused(name, "document", words))})


def main() -> int:
    mebibytes = int(sys.argv[1])
    limit = mebibytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    header, _, raw = sys.stdin.buffer.read().partition(b"\n")
    sys.stdout.write(answer(json.loads(header), raw, mebibytes))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
