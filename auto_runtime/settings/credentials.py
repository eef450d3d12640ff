"""When a value counts as a credential written out instead of referenced.

The rules of the configuration reference:

* its key names a credential (api_key, Authorization, client_secret, password, token...) and it
  holds no reference;
* the text written out in it has the shape of a credential (``Bearer ...``, ``sk-...``, ``abk_...``);
* it is a URL with a password, whose user or query value has that shape, or whose query names a
  parameter as a credential-naming key does, and holds no reference there;
* it is an argument whose part after its ``=`` has that shape; the argument's name is never judged.

Every function here looks at the text written out: references are replaced by a NUL stand-in
first, so the text a reference takes from the environment is never judged.
"""

import re
from urllib.parse import parse_qsl, urlsplit

from auto_runtime.settings.references import Template

STAND_IN = "\x00"

_CREDENTIAL_KEY_ENDINGS = (
    "apikey",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "authorization",
    "privatekey",
    "accesskey",
    "secretkey",
    "cookie",
    "credential",
    "credentials",
)

_CREDENTIAL_SHAPES = re.compile(
    "|".join(
        (
            r"(?i:(?<![A-Za-z0-9])(?:bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*)",
            r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{8,}",
            r"(?<![A-Za-z0-9_-])abk_[A-Za-z0-9_-]{8,}",
            r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{20,}",
            r"(?<![A-Za-z0-9_-])xox[abposr]-[A-Za-z0-9-]{10,}",
            r"(?<![A-Z0-9])AKIA[0-9A-Z]{16}(?![A-Z0-9])",
            r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}",
            r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.",
        )
    )
)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")

SHAPE_EXAMPLES = "Bearer ..., sk-..., abk_..."
REFER_INSTEAD = "refer to a variable that holds it, as ${NAME}"


def names_a_credential(key: str) -> bool:
    """Whether a key (a setting's field, a header, a variable, a query parameter) names a credential."""
    normalized = re.sub(r"[^a-z0-9]", "", key.lower())
    return normalized.endswith(_CREDENTIAL_KEY_ENDINGS)


def has_credential_shape(text: str) -> bool:
    """Whether ``text`` holds something shaped like a credential anywhere in it."""
    return _CREDENTIAL_SHAPES.search(text) is not None


def written_out_problem(template: Template, key: str | None, *, judge_key: bool = True) -> str | None:
    """Why a value under ``key`` is a credential written out, or None when it is not.

    With ``judge_key`` false (the values of credential_kinds, for instance) only the shape counts.
    """
    written = template.written_text(STAND_IN)
    if judge_key and key is not None and names_a_credential(key) and not template.has_reference:
        return f"its key names a credential, so it expects a reference; {REFER_INSTEAD}"
    return _text_problem(written)


def argument_problem(template: Template) -> str | None:
    """Why a command's argument is a credential written out: only the part after its ``=`` counts."""
    written = template.written_text(STAND_IN)
    _, equals, value = written.partition("=")
    problem = _text_problem(value if equals else written)
    return None if problem is None else f"the value of this argument {problem}"


def _text_problem(written: str) -> str | None:
    if _URL.match(written):
        problem = _url_problem(written)
        if problem is not None:
            return problem
    if has_credential_shape(written):
        return f"holds text shaped like a credential ({SHAPE_EXAMPLES}); {REFER_INSTEAD}"
    return None


def _url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        password = parts.password
        user = parts.username
    except ValueError:
        return None
    if password and STAND_IN not in password:
        return f"is a URL with a password written out; {REFER_INSTEAD}"
    if user and STAND_IN not in user and has_credential_shape(user):
        return f"is a URL whose user is shaped like a credential; {REFER_INSTEAD}"
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if STAND_IN in value:
            continue
        if names_a_credential(name) and value:
            return f"is a URL whose query parameter {name} names a credential, written out; {REFER_INSTEAD}"
        if has_credential_shape(value):
            return f"is a URL whose query value is shaped like a credential; {REFER_INSTEAD}"
    return None
