"""`If-None-Match` against a document's tag (seeds, http-api: published documents; RFC 9110 §13.1.2)."""

from __future__ import annotations

import pytest

from auto_runtime.http.caching import entity_tag, none_match

TAG = entity_tag(b"{}")
HEX = TAG.strip('"')


@pytest.mark.parametrize(
    ("header", "matches"),
    [
        (None, False),
        ("*", True),
        (TAG, True),
        (f"W/{TAG}", True),
        (f'"other", {TAG}', True),
        (f'"a,b",{TAG}', True),
        ('"other"', False),
        (HEX, False),
        (f"w/{TAG}", False),
        (f'*, "{HEX}x"', False),
        ('"' + HEX, False),
    ],
    ids=range(11),
)
def test_if_none_match_names_the_tag_only_as_an_entity_tag(header: str | None, matches: bool) -> None:
    """The tag itself, in a list, weak or strong, or `*`; an unquoted tag or a lower-case `w/` names nothing
    (werkzeug's `parse_etags` takes both, which is why it is not used)."""
    assert none_match(header, TAG) is matches
