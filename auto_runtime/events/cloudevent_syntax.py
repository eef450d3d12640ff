"""The syntax CloudEvents 1.0 asks of an attribute's text: allowed characters, URI references, media types.

- Text (CloudEvents "String"): no control character (U+0000 to U+001F, U+007F to U+009F), no surrogate that is
  not part of a pair, no Unicode noncharacter (U+FDD0 to U+FDEF, and the last two code points of every plane).
- `source` is a URI reference and `dataschema` an absolute URI, both by RFC 3986 (section 4.1 and 4.3), in
  ASCII with `%` escapes.
- `datacontenttype` is a media type by RFC 9110 section 8.3.1: `type/subtype` and parameters.
"""

from __future__ import annotations

import ipaddress
import re

_NONCHARACTERS = "\ufdd0-\ufdef" + "".join(
    f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}" for plane in range(17)
)
_FORBIDDEN_TEXT = re.compile(f"[\x00-\x1f\x7f-\x9f\ud800-\udfff{_NONCHARACTERS}]")

_SPLIT = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.DOTALL)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*$")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_UNRESERVED_SUB = r"A-Za-z0-9\-._~%!$&'()*+,;="
_USERINFO = re.compile(f"^[{_UNRESERVED_SUB}:]*$")
_REG_NAME = re.compile(f"^[{_UNRESERVED_SUB}]*$")
_PORT = re.compile(r"^[0-9]*$")
_PATH = re.compile(f"^[{_UNRESERVED_SUB}:@/]*$")
_QUERY = re.compile(f"^[{_UNRESERVED_SUB}:@/?]*$")
_IP_FUTURE = re.compile(r"^v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+$")

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = r'"(?:[\t \x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t \x21-\x7e\x80-\xff])*"'
_MEDIA_TYPE = re.compile(f"^{_TOKEN}/{_TOKEN}(?:[ \t]*;[ \t]*(?:{_TOKEN}=(?:{_TOKEN}|{_QUOTED}))?)*$")


def has_forbidden_character(text: str) -> bool:
    """Whether `text` holds a control character, a lone surrogate or a noncharacter.

    Text read from JSON holds a surrogate only when it is alone: the decoder joins every proper pair."""
    return _FORBIDDEN_TEXT.search(text) is not None


def has_non_space(text: str) -> bool:
    """Whether `text` holds a character other than a space."""
    return any(not character.isspace() for character in text)


def _valid_host(host: str) -> bool:
    if host.startswith("[") and host.endswith("]"):
        literal = host[1:-1]
        if _IP_FUTURE.match(literal):
            return True
        try:
            ipaddress.IPv6Address(literal)
        except ValueError:
            return False
        return "%" not in literal
    return _REG_NAME.match(host) is not None


def _valid_authority(authority: str) -> bool:
    userinfo, at, rest = authority.rpartition("@")
    if at and not _USERINFO.match(userinfo):
        return False
    host, port = rest, ""
    if not rest.endswith("]") and ":" in rest:
        host, _, port = rest.rpartition(":")
    return _valid_host(host) and _PORT.match(port) is not None


def _uri_parts(text: str) -> tuple[str | None, str | None, str, str | None, str | None] | None:
    if not text.isascii() or _PERCENT.search(text):
        return None
    match = _SPLIT.match(text)
    if match is None:
        return None
    scheme, authority, path, query, fragment = match.groups()
    if scheme is not None and not _SCHEME.match(scheme):
        return None
    if authority is not None and not _valid_authority(authority):
        return None
    if not _PATH.match(path):
        return None
    if scheme is None and authority is None and ":" in path.split("/", 1)[0]:
        return None
    for part in (query, fragment):
        if part is not None and not _QUERY.match(part):
            return None
    return scheme, authority, path, query, fragment


def is_uri_reference(text: str) -> bool:
    """RFC 3986 `URI-reference`: a URI such as `https://acme.example/ledger` or a relative one such as `/ledger/eu`."""
    return _uri_parts(text) is not None


def is_absolute_uri(text: str) -> bool:
    """RFC 3986 `absolute-URI` (section 4.3): a scheme, and no fragment."""
    parts = _uri_parts(text)
    return parts is not None and parts[0] is not None and parts[4] is None


def is_media_type(text: str) -> bool:
    """RFC 9110 `media-type`, such as `application/json` or `text/plain; charset=utf-8`."""
    return _MEDIA_TYPE.match(text) is not None
