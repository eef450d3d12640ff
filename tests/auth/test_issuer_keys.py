"""The key set of the identity service as the server holds it (`IssuerKeys`), against the fake service over
https, with a clock the test moves: discovery and its fallback, the maximum age, the rate limits, a failed
fetch and the recovery after it, and one fetch shared by concurrent requests. The spacing of fetches is 0 but in
the tests of it, which move the server's clock (`MovableClock`) instead of waiting."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta

import httpx
import pytest
import trio

from auto_runtime.auth.issuer_keys import (
    FETCH_SPACING_SECONDS,
    MAX_AGE_SECONDS,
    REFRESH_INTERVAL_SECONDS,
    IssuerKeys,
    KeysUnavailable,
    UnknownKey,
)
from auto_runtime.server_clock import MovableClock
from tests.fakes.identity_service import IdentityServiceProcess


@pytest.fixture
def normal(identity: IdentityServiceProcess) -> Iterator[IdentityServiceProcess]:
    identity.set_mode(discovery="normal", jwks="normal")
    yield identity
    identity.set_mode(discovery="normal", jwks="normal")


@asynccontextmanager
async def held_keys(
    identity: IdentityServiceProcess, clock: MovableClock, fetch_spacing: float = 0.0
) -> AsyncIterator[IssuerKeys]:
    """The keys with their refresher running, after its first fetch."""
    verify = ssl.create_default_context(cafile=str(identity.certificate))
    keys = IssuerKeys(
        identity.issuer, lambda: httpx.AsyncClient(verify=verify), clock=clock, fetch_spacing=fetch_spacing
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(keys.run)
        await keys.refreshed()
        yield keys
        nursery.cancel_scope.cancel()


async def fetches(identity: IdentityServiceProcess, path: str = "/jwks") -> int:
    return await trio.to_thread.run_sync(identity.fetches, path)


async def test_keys_are_found_through_discovery(normal: IdentityServiceProcess) -> None:
    kid = await trio.to_thread.run_sync(normal.new_key, "ES256")
    async with held_keys(normal, MovableClock()) as keys:
        key = await keys.key_for(kid)
    assert key.kid == kid and key.fits("ES256") and not key.fits("ES384") and not key.fits("RS256")


async def test_without_discovery_the_well_known_key_set_is_read(normal: IdentityServiceProcess) -> None:
    normal.set_mode(discovery="missing")
    kid = await trio.to_thread.run_sync(normal.new_key, "RS256")
    before = await fetches(normal, "/.well-known/jwks.json")
    async with held_keys(normal, MovableClock()) as keys:
        assert (await keys.key_for(kid)).fits("RS256")
    assert await fetches(normal, "/.well-known/jwks.json") > before


async def test_a_discovery_document_of_another_issuer_is_a_failed_fetch(normal: IdentityServiceProcess) -> None:
    normal.set_mode(discovery="other_issuer")
    kid = await trio.to_thread.run_sync(normal.new_key, "RS256")
    async with held_keys(normal, MovableClock()) as keys:
        with pytest.raises(KeysUnavailable):
            await keys.key_for(kid)


async def test_a_failed_fetch_is_unavailable_until_the_interval_has_passed(normal: IdentityServiceProcess) -> None:
    clock = MovableClock()
    normal.set_mode(jwks="fail")
    kid = await trio.to_thread.run_sync(normal.new_key, "ES256")
    async with held_keys(normal, clock) as keys:
        with pytest.raises(KeysUnavailable) as first:
            await keys.key_for(kid)
        assert first.value.retry_after == REFRESH_INTERVAL_SECONDS
        asked = await fetches(normal)
        clock.advance(timedelta(seconds=10))
        with pytest.raises(KeysUnavailable) as again:
            await keys.key_for(kid)
        assert again.value.retry_after == REFRESH_INTERVAL_SECONDS - 10
        assert await fetches(normal) == asked, "no fetch while backing off"
        normal.set_mode(jwks="normal")
        clock.advance(timedelta(seconds=REFRESH_INTERVAL_SECONDS))
        assert (await keys.key_for(kid)).kid == kid


async def test_a_key_id_a_fetch_did_not_hold_fetches_again_only_after_the_interval(
    normal: IdentityServiceProcess,
) -> None:
    clock = MovableClock()
    unpublished = [await trio.to_thread.run_sync(lambda: normal.new_key("RS256", publish=False)) for _ in range(3)]
    async with held_keys(normal, clock) as keys:
        before = await fetches(normal)
        for _ in range(4):
            for kid in unpublished:
                with pytest.raises(UnknownKey):
                    await keys.key_for(kid)
        assert await fetches(normal) == before + len(unpublished), "one fetch for each key id, none for a repeat"
        clock.advance(timedelta(seconds=REFRESH_INTERVAL_SECONDS))
        with pytest.raises(UnknownKey):
            await keys.key_for(unpublished[0])
        assert await fetches(normal) == before + len(unpublished) + 1


async def test_a_key_rotated_in_after_a_flood_is_found_by_the_next_spaced_fetch(
    normal: IdentityServiceProcess, mock_clock: trio.testing.MockClock
) -> None:
    """The server's clock moves only where the test moves it (and Trio's clock stands still, so no sleep ends by
    itself), so the spacing is seen, not waited for: a flood of
    made-up key ids costs one fetch, and the key rotated in next waits for the spaced fetch instead of being
    refused."""
    made_up = [await trio.to_thread.run_sync(lambda: normal.new_key("ES256", publish=False)) for _ in range(20)]
    clock = MovableClock()
    async with held_keys(normal, clock, FETCH_SPACING_SECONDS) as keys:
        clock.advance(timedelta(seconds=FETCH_SPACING_SECONDS))
        before = await fetches(normal)
        refused: list[str] = []

        async def ask(kid: str) -> None:
            with pytest.raises(UnknownKey):
                await keys.key_for(kid)
            refused.append(kid)

        async with trio.open_nursery() as nursery:
            for kid in made_up:
                nursery.start_soon(ask, kid)
        assert sorted(refused) == sorted(made_up)
        assert await fetches(normal) == before + 1, "the flood shared one fetch"

        rotated = await trio.to_thread.run_sync(normal.new_key, "RS256")
        found: list[str] = []

        async def find() -> None:
            found.append((await keys.key_for(rotated)).kid)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(find)
            await trio.testing.wait_all_tasks_blocked()
            assert found == [] and await fetches(normal) == before + 1, "no fetch before the spacing has passed"
            for kid in made_up:
                with pytest.raises(UnknownKey):
                    await keys.key_for(kid)
            clock.advance(timedelta(seconds=FETCH_SPACING_SECONDS))
        assert found == [rotated]
        assert await fetches(normal) == before + 2


async def test_an_old_key_set_is_fetched_again(normal: IdentityServiceProcess) -> None:
    clock = MovableClock()
    old = await trio.to_thread.run_sync(normal.new_key, "RS256")
    async with held_keys(normal, clock) as keys:
        await keys.key_for(old)
        await trio.to_thread.run_sync(normal.withdraw, old)
        before = await fetches(normal)
        assert (await keys.key_for(old)).kid == old, "young keys are not fetched again"
        clock.advance(timedelta(seconds=MAX_AGE_SECONDS))
        assert (await keys.key_for(old)).kid == old, "an old set still verifies while it is fetched again"
        await keys.refreshed()
        assert await fetches(normal) == before + 1
        with pytest.raises(UnknownKey):
            await keys.key_for(old)


async def test_concurrent_requests_share_one_fetch(normal: IdentityServiceProcess) -> None:
    async with held_keys(normal, MovableClock()) as keys:
        kid = await trio.to_thread.run_sync(normal.new_key, "ES256")
        before = await fetches(normal)
        found: list[str] = []

        async def ask() -> None:
            found.append((await keys.key_for(kid)).kid)

        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(ask)
        assert found == [kid] * 10
        assert await fetches(normal) == before + 1
