"""The body of an operation that takes bytes (a dataset, a model file), checked before a byte of it is read.

Seeds ("Prediction functions"): a body sent without its `Content-Length` gets `411`; one whose `Content-Length`
is larger than the route accepts gets `413`, before the body is read; a media type the route does not take is
`415`. A media type may carry `charset=utf-8` and nothing else. A query string is refused, as beside any body.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from quart import Request

from auto_runtime.http.request_input import content_too_large, unsupported_media_type
from auto_runtime.operations.operation import Operation
from auto_runtime.problems import Rejection, bad_request


def check_byte_body(request: Request, operation: Operation) -> None:
    """Refuses the request as the module says, or returns with the body unread."""
    if request.query_string:
        raise bad_request(f"{operation.method} takes its input in the path and the body, not in the query string.")
    length_text = request.headers.get("Content-Length")
    if length_text is None:
        raise Rejection(
            "length_required",
            "Send the body with its Content-Length; this operation does not take a body of unknown length.",
            headers={"Connection": "close"},
        )
    try:
        length = int(length_text)
    except ValueError:
        raise bad_request("The Content-Length header is not a number.") from None
    if length > operation.max_body:
        raise content_too_large(operation.max_body)
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding and encoding != "identity":
        raise unsupported_media_type("Compressed bodies are not accepted; send the bytes as they are.")
    media_type, _, parameters = request.headers.get("Content-Type", "").partition(";")
    taken = " or ".join(operation.body_media_types)
    if media_type.strip().lower() not in operation.body_media_types:
        raise unsupported_media_type(f"Send the body as {taken}.")
    for parameter in parameters.split(";"):
        if not parameter.strip():
            continue
        name, _, value = parameter.partition("=")
        if name.strip().lower() != "charset" or value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            raise unsupported_media_type(f"Send the body as {taken}, with no parameter but charset=utf-8.")


async def body_chunks(request: Request) -> AsyncIterator[bytes]:
    """The body's chunks as they arrive."""
    async for chunk in request.body:
        yield chunk
