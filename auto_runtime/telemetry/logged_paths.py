"""Request paths as the log lines and spans show them: a secret a route carries in its path is replaced.

Studio's connection link, `/v1/orgs/{org}/connections/{id}/link/{token}`, is the one route whose path holds a
secret: the link's token, which binds the connection for ten minutes and which the runtime keeps only as its
SHA-256. Its last segment is shown as `SCRUBBED`, whatever it is, so a request line at `LOG_LEVEL=debug`, a
span's `url.path` and an incident's log line never carry it. (`approve` and `give_credential` take the token in
the body, which nothing logs.)
"""

from __future__ import annotations

import re

SCRUBBED = "[redacted]"
LINK_TOKEN = re.compile(r"(/connections/[^/]*/link/)[^/]*")


def logged_path(path: str) -> str:
    """`path` with a link's token replaced by `SCRUBBED`."""
    return LINK_TOKEN.sub(lambda match: match.group(1) + SCRUBBED, path)
