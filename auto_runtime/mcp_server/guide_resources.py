"""The guides as `guide://{name}` resources, served on every endpoint whatever the key (spec mcp.md §8).

`resources/read` answers exactly the text `GET /v1/guides/{name}` serves and `get_guide` answers. An unknown
URI is `-32602`. There are no resource templates and no subscriptions.
"""

from __future__ import annotations

from collections.abc import Mapping

import mcp_types as types
from mcp.shared.exceptions import MCPError

from auto_runtime.guides import Guide

GUIDE_SCHEME = "guide://"
MARKDOWN = "text/markdown"


def guide_uri(name: str) -> str:
    return GUIDE_SCHEME + name


class GuideResources:
    def __init__(self, guides: Mapping[str, Guide]) -> None:
        self.guides = dict(guides)
        self._listed = types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=guide_uri(guide.name),
                    name=guide.name,
                    title=guide.title,
                    description=guide.description,
                    mime_type=MARKDOWN,
                    annotations=types.Annotations(audience=["assistant"]),
                )
                for guide in self.guides.values()
            ]
        )

    def listed(self) -> types.ListResourcesResult:
        return self._listed.model_copy(deep=True)

    def guide_at(self, uri: str) -> Guide:
        guide = self.guides.get(uri.removeprefix(GUIDE_SCHEME)) if uri.startswith(GUIDE_SCHEME) else None
        if guide is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {uri}")
        return guide

    def contents_of(self, guide: Guide) -> types.TextResourceContents:
        return types.TextResourceContents(uri=guide_uri(guide.name), mime_type=MARKDOWN, text=guide.text)

    def read(self, uri: str) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[self.contents_of(self.guide_at(uri))])
