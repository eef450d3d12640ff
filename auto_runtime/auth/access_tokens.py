"""Access tokens of people who sign in through the identity service: JWTs verified against its published keys.

A token is accepted when all of these hold, else it is an invalid credential (`InvalidToken`):

- it is a JWS in compact form of at most `MAX_TOKEN_CHARS`, whose header names an asymmetric algorithm of
  `KEY_FAMILIES` (never `none`, never an HMAC: a key the server holds is public, so HS256 "signed" with it proves
  nothing) and a `kid` the issuer publishes, whose key fits that algorithm;
- its signature verifies with that key;
- `iss` is `IDENTITY_ISSUER` exactly, and `aud` (a string or a list) names `PUBLIC_URL` exactly, as the server
  holds it (without a trailing `/`): `https://runtime.example/` is another audience than `https://runtime.example`;
- `exp` and `iat` are present, `exp`, `iat` and `nbf` (when present) are NumericDates, JSON numbers (never a
  string such as `"1900000000"`, which the JWT library would read as one, nor `true`), and they hold with
  `CLOCK_SKEW_SECONDS` of leeway either way;
- `sub` is a non-empty string.

The caller a token names (the mapping of the identity service's claims, Clerk's session-token claims in either
version, decided here; the seeds' authentication reference does not give it):

- `id`: the person, `sub` (such as `user_2abc…`), as it is; `credential` is `token`.
- `org`: the person's active org, `o.id` in a version 2 token (`"v": 2`), `org_id` in a version 1 token. An API
  key belongs to one org, and so does a token: it acts only in that org, on `/mcp` as on the scoped endpoints
  (spec mcp.md, open question 8). A valid token with no active org is refused `forbidden`: it may act nowhere,
  and signing in again with an org chosen mends it. An org id outside the runtime's pattern is an invalid token.
- `permissions`: the runtime's permission `<feature>:<action>` for each of the person's org permissions
  `org:<feature>:<action>` that names one, so `org:org:read`, `org:org:write`, `org:playbook:read` and
  `org:playbook:write`; other permissions, and the role, give none. Version 1 lists them in `org_permissions`;
  version 2 packs them in `fea` (the `o:` features), `o.per` (the actions) and `o.fpm` (for each feature, a
  number whose bit `j`, counted from the lowest, grants action `j`).
- `playbooks`: every playbook of the org, as a key that names none.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import jwt

from auto_runtime.auth.caller import Caller, Permission
from auto_runtime.auth.issuer_keys import KEY_FAMILIES, IssuerKeys, UnknownKey
from auto_runtime.problems import cut_text, forbidden
from auto_runtime.settings.identifiers import ORG_PATTERN

CLOCK_SKEW_SECONDS = 60
"""How far the server's clock and the issuer's may disagree: a token is taken up to this long after its `exp`,
and up to this long before its `nbf` or `iat`."""
MAX_TOKEN_CHARS = 16 * 1024
REQUIRED_CLAIMS = ("exp", "iat", "iss", "aud", "sub")
TIME_CLAIMS = ("exp", "iat", "nbf")
TIME_CLAIM_WORDS = "The access token's times (exp, iat, nbf) must be numbers of seconds."
EXPIRED_WORDS = "The access token has expired: sign in again."
NOT_YET_WORDS = "The access token is not valid yet."
ORG_ID = re.compile(f"^{ORG_PATTERN}$")
PERMISSION_OF_CLERK_KEY: Mapping[str, Permission] = {f"org:{p.value}": p for p in Permission}
COMPACT_JWS = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$")


class InvalidToken(Exception):
    """A token this server does not accept, with the sentence the `401` says."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def looks_like_a_token(credential: str) -> bool:
    """Whether a credential has the shape of a JWT (an API key never has a dot)."""
    return "." in credential


def _words_for(error: jwt.PyJWTError, audience: str, issuer: str) -> str:
    if isinstance(error, jwt.InvalidAudienceError):
        return f"The access token is not for this server: its audience is not {audience}."
    if isinstance(error, jwt.InvalidIssuerError):
        return f"The access token was not issued by {issuer}."
    if isinstance(error, jwt.InvalidSignatureError):
        return "The access token's signature does not verify."
    if isinstance(error, jwt.MissingRequiredClaimError):
        return f"The access token lacks the claim {error.claim}."
    return "The access token is not a well-formed JWT."


class AccessTokens:
    """Verifies access tokens for one audience (`PUBLIC_URL`) from one issuer (`IDENTITY_ISSUER`)."""

    def __init__(self, *, audience: str, issuer: str, keys: IssuerKeys, clock: Callable[[], float] = time.time) -> None:
        self.audience = audience.rstrip("/")
        self.issuer = issuer
        self.keys = keys
        self._clock = clock

    async def caller_of(self, token: str) -> Caller:
        """The caller a valid token names. Raises `InvalidToken`, `KeysUnavailable` (the issuer cannot be
        asked for the key), or the `forbidden` rejection of a token that names no org."""
        if len(token) > MAX_TOKEN_CHARS or not COMPACT_JWS.match(token):
            raise InvalidToken("The access token is not a well-formed JWT.")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("The access token is not a well-formed JWT.") from None
        algorithm, kid = header.get("alg"), header.get("kid")
        if not isinstance(algorithm, str) or algorithm not in KEY_FAMILIES:
            raise InvalidToken(
                f"The access token is signed with {cut_text(repr(algorithm), 40)}; this server takes only "
                f"asymmetric signatures ({', '.join(KEY_FAMILIES)})."
            )
        if not isinstance(kid, str) or not kid:
            raise InvalidToken("The access token names no key (kid) of the identity service.")
        try:
            key = await self.keys.key_for(kid)
        except UnknownKey:
            raise InvalidToken("The identity service does not publish the key the access token names.") from None
        if not key.fits(algorithm):
            raise InvalidToken(f"The access token's key is not one for {algorithm}.")
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[algorithm],
                audience=[self.audience],
                issuer=self.issuer,
                options={
                    "require": list(REQUIRED_CLAIMS),
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except jwt.PyJWTError as error:
            raise InvalidToken(_words_for(error, self.audience, self.issuer)) from None
        check_times(claims, self._clock())
        return caller_of_claims(claims)


def check_times(claims: Mapping[str, Any], now: float) -> None:
    """`exp`, `iat` and `nbf` are numbers (checked before any of them is compared, so that `"exp": true` is
    refused for what it is, not as expired), and hold at `now` with `CLOCK_SKEW_SECONDS` of leeway."""
    if not all(_is_numeric_date(claims[name]) for name in TIME_CLAIMS if name in claims):
        raise InvalidToken(TIME_CLAIM_WORDS)
    if claims["exp"] <= now - CLOCK_SKEW_SECONDS:
        raise InvalidToken(EXPIRED_WORDS)
    if any(claims[name] > now + CLOCK_SKEW_SECONDS for name in ("nbf", "iat") if name in claims):
        raise InvalidToken(NOT_YET_WORDS)


def _is_numeric_date(value: object) -> bool:
    """Whether a claim is a JSON number (RFC 7519 NumericDate); `bool` is an `int` to Python, not to JSON."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def caller_of_claims(claims: Mapping[str, Any]) -> Caller:
    """The caller of verified claims (the mapping in the module docstring)."""
    person = claims.get("sub")
    if not isinstance(person, str) or not person or len(person) > 256:
        raise InvalidToken("The access token names no person (sub).")
    if claims.get("v") == 2:
        organization = claims.get("o")
        org = organization.get("id") if isinstance(organization, dict) else None
        keys = _version_2_permissions(claims.get("fea"), organization) if isinstance(organization, dict) else []
    else:
        org = claims.get("org_id")
        listed = claims.get("org_permissions")
        keys = [k for k in listed if isinstance(k, str)] if isinstance(listed, list) else []
    if org is None:
        raise forbidden("This access token names no org: sign in again with an org chosen.")
    if not isinstance(org, str) or not ORG_ID.match(org):
        raise InvalidToken("The access token's org is not an org id this server takes.")
    return Caller(id=person, org=org, permissions=_permissions(keys), credential="token")


def _permissions(keys: Iterable[str]) -> frozenset[Permission]:
    return frozenset(PERMISSION_OF_CLERK_KEY[k] for k in keys if k in PERMISSION_OF_CLERK_KEY)


def _version_2_permissions(features: object, organization: Mapping[str, Any]) -> list[str]:
    """`org:<feature>:<action>` for each bit set in `o.fpm` (version 2 of the identity service's tokens)."""
    actions, masks = organization.get("per"), organization.get("fpm")
    if not isinstance(features, str) or not isinstance(actions, str) or not isinstance(masks, str):
        return []
    org_features = [f.strip()[2:] for f in features.split(",") if f.strip().startswith("o:")]
    names = [a.strip() for a in actions.split(",")]
    granted: list[str] = []
    for feature, mask in zip(org_features, masks.split(","), strict=False):
        if not mask.strip().isdigit() or len(mask.strip()) > 20:
            continue
        bits = int(mask.strip())
        granted += [f"org:{feature}:{name}" for j, name in enumerate(names) if bits >> j & 1]
    return granted
