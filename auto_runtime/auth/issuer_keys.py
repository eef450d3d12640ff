"""The identity service's published signing keys: found through its discovery document, fetched, cached, rotated.

Where they come from: `<issuer>/.well-known/openid-configuration` (OpenID Connect discovery) names `jwks_uri`;
where the issuer publishes no such document (`404`), `<issuer>/.well-known/oauth-authorization-server` (RFC 8414)
is asked, and where it publishes neither, `<issuer>/.well-known/jwks.json`, the path the identity service (Clerk)
serves its key set at. A discovery document that names another issuer, a `jwks_uri` that is not `https`, a
redirect, an error status or a body past `MAX_DOCUMENT_BYTES` is a failed fetch. Of the set, only public keys
for signatures (`use` absent or `sig`; RSA of at least 2,048 bits, EC or OKP) with a `kid` are kept, at most
`MAX_KEYS`.

When they are fetched: once at start, then again

- when a token names a `kid` the cache does not hold: the request waits for the next fetch that begins after it
  arrived (at most `FETCH_SPACING_SECONDS` and twice `FETCH_TIMEOUT_SECONDS` and a second), so a key the issuer
  has just rotated in is found by that fetch;
- once the set is `MAX_AGE_SECONDS` old: a request that finds the set that old is verified with the keys held
  and wakes the refresher, which also wakes by itself at that age.

Rate limits, so that a stream of tokens naming made-up `kid`s cannot make the server fetch constantly, and yet
cannot starve a real rotation (a made-up `kid` and a rotated-in one look alike until a fetch tells them apart):

- Fetches begin at least `FETCH_SPACING_SECONDS` apart, and every request waiting for a `kid` shares the next
  one: a flood of tokens naming ever new `kid`s costs at most one fetch a spacing, and a token of a real rotation
  is never refused for the flood, only kept waiting for the next fetch.
- A `kid` that a fetch did not hold is refuted: a token naming it is refused at once, with no fetch, for
  `REFRESH_INTERVAL_SECONDS` after that fetch. The refutation is of that `kid` alone (at most
  `MAX_REFUTED_KIDS` are remembered, the oldest forgotten first), so tokens repeating made-up `kid`s cost
  nothing, and they take no budget from a `kid` no fetch has refuted yet.
- After a failed fetch, nothing is fetched for `REFRESH_INTERVAL_SECONDS`, and a token whose key is not held is
  answered `unavailable` with a `Retry-After` of the time left; the keys already held keep verifying tokens while
  the issuer cannot be reached.

Concurrency: all state lives on the Trio thread and changes only between checkpoints. Fetches run in the
refresher (`run`, a child of the supervision tree), never in a request's task: a request that needs a key sets
`_wanted` and waits for the `_next_done` event of the fetch in flight or the next one, so concurrent requests
share one fetch; a request that arrived while a fetch was in flight waits for the one after it too. The
refresher replaces `_next_done` and `_wanted` in one step with no checkpoint, so no wish made after a fetch ended
is lost. The refusals are decided on the request side, and the spacing and age kept by the refresher, on the
injected `clock`'s `seconds`, and a fetch is limited by its `fail_after` (the server's clock: a test server's
moved clock counts as time passed, wakes the refresher's sleeps and cuts a fetch it was moved past; the wall
clock is `time.monotonic` and Trio's sleeps and limits). The request's own bound on its wait stays Trio's.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt
import trio
from cachetools import LRUCache
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from auto_runtime.server_clock import WALL_CLOCK, ServerClock
from auto_runtime.supervision import ChildContext, ChildSpec, Restart

log = logging.getLogger("auto_runtime.auth.issuer_keys")

FETCH_TIMEOUT_SECONDS = 5.0
"""The most one fetch (discovery and key set together) may take; past it the fetch has failed."""
MAX_AGE_SECONDS = 3600.0
"""How old the held key set may grow before it is fetched again."""
REFRESH_INTERVAL_SECONDS = 30.0
"""After a fetch that failed, no fetch before this has passed; after a fetch that did not hold a `kid` a token
named, no fetch for that `kid` before this has passed."""
FETCH_SPACING_SECONDS = 5.0
"""The least time between the starts of two fetches: what a flood of made-up `kid`s can cost the issuer at
most, and what a token of a key rotated in a moment ago may wait at most for the fetch that finds it."""
MAX_REFUTED_KIDS = 4096
"""How many `kid`s that fetches did not hold are remembered to be refused at once."""
MAX_DOCUMENT_BYTES = 64 * 1024
MAX_KEYS = 32
MIN_RSA_BITS = 2048
DISCOVERY_PATHS = ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server")
FALLBACK_JWKS_PATH = "/.well-known/jwks.json"

KEY_FAMILIES: Mapping[str, tuple[str, frozenset[str] | None]] = {
    "RS256": ("RSA", None),
    "RS384": ("RSA", None),
    "RS512": ("RSA", None),
    "PS256": ("RSA", None),
    "PS384": ("RSA", None),
    "PS512": ("RSA", None),
    "ES256": ("EC", frozenset({"P-256"})),
    "ES384": ("EC", frozenset({"P-384"})),
    "ES512": ("EC", frozenset({"P-521"})),
    "EdDSA": ("OKP", frozenset({"Ed25519", "Ed448"})),
}
"""The asymmetric algorithms a token may be signed with, and the key type (and curves) each needs."""


class KeySetError(Exception):
    """A fetch of the key set that failed, in words for the log."""


class KeysUnavailable(Exception):
    """The key a token needs is not held and the issuer cannot be asked now."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the identity service's keys cannot be fetched now; try again in {retry_after} s")
        self.retry_after = retry_after


class UnknownKey(Exception):
    """The issuer does not publish the key a token names."""


@dataclass(frozen=True)
class PublishedKey:
    """One public signing key of the set, parsed once when the set is fetched."""

    kid: str
    kty: str
    crv: str | None
    alg: str | None
    key: Any

    def fits(self, algorithm: str) -> bool:
        """Whether a token signed with `algorithm` may be verified with this key (its type, curve and `alg`)."""
        family = KEY_FAMILIES.get(algorithm)
        if family is None or self.kty != family[0]:
            return False
        curves = family[1]
        if curves is not None and self.crv not in curves:
            return False
        return self.alg is None or self.alg == algorithm


def published_key(entry: object) -> PublishedKey | None:
    """One entry of a JWKS as a key this server uses, or None when it is not a public signing key it takes."""
    if not isinstance(entry, dict):
        return None
    kid, kty, use, alg, crv = (entry.get(name) for name in ("kid", "kty", "use", "alg", "crv"))
    if not isinstance(kid, str) or not kid or len(kid) > 256 or kty not in ("RSA", "EC", "OKP"):
        return None
    if use not in (None, "sig") or "d" in entry or (alg is not None and alg not in KEY_FAMILIES):
        return None
    try:
        key = jwt.PyJWK(entry, algorithm=alg if isinstance(alg, str) else None).key
    except (jwt.PyJWTError, ValueError, TypeError, KeyError):
        return None
    if isinstance(key, RSAPublicKey) and key.key_size < MIN_RSA_BITS:
        return None
    return PublishedKey(kid, kty, crv if isinstance(crv, str) else None, alg if isinstance(alg, str) else None, key)


def parse_key_set(document: object) -> dict[str, PublishedKey]:
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise KeySetError("the key set is not a JSON object with a keys array")
    keys: dict[str, PublishedKey] = {}
    for entry in document["keys"]:
        key = published_key(entry)
        if key is not None and key.kid not in keys:
            keys[key.kid] = key
        if len(keys) == MAX_KEYS:
            break
    return keys


async def get_json(client: httpx.AsyncClient, url: str) -> tuple[int, object]:
    """The status and, for a `200`, the JSON body of a GET, read up to `MAX_DOCUMENT_BYTES`."""
    async with client.stream("GET", url, headers={"Accept": "application/json"}, follow_redirects=False) as response:
        if response.status_code != 200:
            return response.status_code, None
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_DOCUMENT_BYTES:
                raise KeySetError(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
    try:
        return 200, json.loads(bytes(body))
    except (ValueError, RecursionError):
        raise KeySetError(f"{url} did not answer JSON") from None


async def jwks_uri_of(client: httpx.AsyncClient, issuer: str) -> str:
    """Where the issuer publishes its key set: its discovery document's `jwks_uri`, or the fallback path."""
    for path in DISCOVERY_PATHS:
        status, document = await get_json(client, issuer + path)
        if status == 404:
            continue
        if status != 200:
            raise KeySetError(f"{issuer + path} answered {status}")
        if not isinstance(document, dict) or document.get("issuer") != issuer:
            raise KeySetError(f"{issuer + path} does not name {issuer} as its issuer")
        uri = document.get("jwks_uri")
        if not isinstance(uri, str) or urlsplit(uri).scheme != "https":
            raise KeySetError(f"{issuer + path} names no https jwks_uri")
        return uri
    return issuer + FALLBACK_JWKS_PATH


async def fetch_key_set(client: httpx.AsyncClient, issuer: str, clock: ServerClock) -> dict[str, PublishedKey]:
    """The issuer's key set, fetched within `FETCH_TIMEOUT_SECONDS` of `clock` (a move past them cuts the fetch);
    `KeySetError` when that fails."""
    try:
        with clock.fail_after(FETCH_TIMEOUT_SECONDS):
            uri = await jwks_uri_of(client, issuer)
            status, document = await get_json(client, uri)
    except trio.TooSlowError:
        raise KeySetError(f"{issuer} did not answer within {FETCH_TIMEOUT_SECONDS:g} s") from None
    except (httpx.HTTPError, httpx.StreamError, httpx.InvalidURL) as error:
        raise KeySetError(f"{issuer} could not be reached: {error}") from None
    if status != 200:
        raise KeySetError(f"{uri} answered {status}")
    return parse_key_set(document)


class IssuerKeys:
    """The held key set of one issuer and its refresher (see the module docstring for when it fetches)."""

    def __init__(
        self,
        issuer: str,
        client: Callable[[], httpx.AsyncClient],
        *,
        clock: ServerClock = WALL_CLOCK,
        fetch_spacing: float = FETCH_SPACING_SECONDS,
    ) -> None:
        self.issuer = issuer
        self._client = client
        self._clock = clock
        self._fetch_spacing = fetch_spacing
        self._keys: Mapping[str, PublishedKey] = {}
        self._fetched_at: float | None = None
        self._failed_at: float | None = None
        self._refuted: LRUCache[str, float] = LRUCache(MAX_REFUTED_KIDS)
        """The `kid`s fetches did not hold, oldest first, with when (`clock.seconds`) the fetch refuting each ended."""
        self._fetching = False
        self._last_started: float | None = None
        """When (`clock.seconds`) the last fetch began."""
        self._wanted = trio.Event()
        self._next_done = trio.Event()

    # The request side ---------------------------------------------------------------------------------------

    async def key_for(self, kid: str) -> PublishedKey:
        """The key `kid` names: `UnknownKey` when the issuer does not publish it, `KeysUnavailable` when it
        cannot be asked now."""
        key = self._keys.get(kid)
        if key is not None:
            if self._is_old() and not self._backing_off():
                self._wanted.set()
            return key
        if self._backing_off():
            raise KeysUnavailable(self._retry_after())
        if self._is_refuted(kid):
            raise UnknownKey(kid)
        with trio.move_on_after(self._fetch_spacing + 2 * FETCH_TIMEOUT_SECONDS + 1):
            while True:
                done, begins_after = self._next_done, not self._fetching
                self._wanted.set()
                await done.wait()
                key = self._keys.get(kid)
                if key is not None:
                    return key
                if self._failed_at is not None:
                    raise KeysUnavailable(self._retry_after())
                if begins_after:
                    self._refute(kid)
                    raise UnknownKey(kid)
        raise KeysUnavailable(self._retry_after())

    async def refreshed(self) -> None:
        """Wait for the end of the fetch in flight, or of the next one (which this does not ask for)."""
        await self._next_done.wait()

    def _is_old(self) -> bool:
        return self._fetched_at is not None and self._clock.seconds() - self._fetched_at >= MAX_AGE_SECONDS

    def _backing_off(self) -> bool:
        """Whether the last fetch failed less than `REFRESH_INTERVAL_SECONDS` ago."""
        return self._failed_at is not None and self._clock.seconds() - self._failed_at < REFRESH_INTERVAL_SECONDS

    def _is_refuted(self, kid: str) -> bool:
        """Whether a fetch that ended less than `REFRESH_INTERVAL_SECONDS` ago did not hold `kid`."""
        refuted_at = self._refuted.get(kid)
        return refuted_at is not None and self._clock.seconds() - refuted_at < REFRESH_INTERVAL_SECONDS

    def _refute(self, kid: str) -> None:
        self._refuted[kid] = self._clock.seconds()

    def _retry_after(self) -> int:
        since = self._clock.seconds() - self._failed_at if self._failed_at is not None else 0.0
        return max(1, math.ceil(REFRESH_INTERVAL_SECONDS - since))

    # The refresher ------------------------------------------------------------------------------------------

    def child_spec(self) -> ChildSpec:
        """The refresher as a child of the supervision tree; it is ready at once (the first fetch runs behind)."""

        async def start(context: ChildContext) -> None:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.run)
                context.started()

        return ChildSpec("identity-keys", start, restart=Restart.PERMANENT, shutdown=0)

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Fetch now, then whenever a key is wanted or the set grows old, within the rate limits; runs until
        cancelled."""
        async with self._client() as client:
            task_status.started()
            while True:
                await self._fetch(client)
                await self._until_next_fetch()
                if self._last_started is not None:
                    await self._clock.sleep_until(self._last_started + self._fetch_spacing)

    async def _fetch(self, client: httpx.AsyncClient) -> None:
        self._fetching, self._last_started = True, self._clock.seconds()
        try:
            keys = await fetch_key_set(client, self.issuer, self._clock)
        except KeySetError as error:
            if self._failed_at is None:
                log.warning("the identity service's keys could not be fetched: %s", error)
            self._failed_at = self._clock.seconds()
        else:
            if self._failed_at is not None:
                log.info("the identity service's keys are fetched again")
            self._keys, self._fetched_at, self._failed_at = keys, self._clock.seconds(), None
        finally:
            self._fetching = False
        done, self._next_done, self._wanted = self._next_done, trio.Event(), trio.Event()
        done.set()

    async def _until_next_fetch(self) -> None:
        """Until a key is wanted (the request side keeps the rate limits), or the set is `MAX_AGE_SECONDS` old."""
        if self._fetched_at is None or self._failed_at is not None:
            await self._wanted.wait()
            return
        old_at = self._fetched_at + MAX_AGE_SECONDS
        async with trio.open_nursery() as nursery:

            async def until_old() -> None:
                await self._clock.sleep_until(old_at)
                nursery.cancel_scope.cancel()

            nursery.start_soon(until_old)
            await self._wanted.wait()
            nursery.cancel_scope.cancel()
