"""The ledger's secret rows and the secret store sealed over them, on SQLite and on PostgreSQL."""

from __future__ import annotations

import secrets

import pytest

from auto_runtime.ledger import Ledger, OrgScope
from auto_runtime.tools.secret_store import SecretSealer, SecretStore, SecretUnreadable, ends_with_of
from tests.ledger.conftest import Target

ACME = OrgScope("acme")
GLOBEX = OrgScope("globex")
VALUE = "crm-secret-value-0123456789"


def key() -> bytes:
    return secrets.token_bytes(32)


async def test_rows_put_get_replace_forget(ledger: Ledger) -> None:
    await ledger.secrets.put(ACME, "one", b"sealed-1", "6789")
    await ledger.secrets.put(ACME, "one", b"sealed-2", None)
    row = await ledger.secrets.get(ACME, "one")
    assert row is not None and row.sealed == b"sealed-2" and row.ends_with is None
    assert await ledger.secrets.get(GLOBEX, "one") is None
    assert not await ledger.secrets.replace(row.__class__(row.scope_key, row.name, b"other", None), b"x")
    assert await ledger.secrets.replace(row, b"sealed-3")
    assert [r.sealed for r in await ledger.secrets.every()] == [b"sealed-3"]
    assert await ledger.secrets.forget(ACME, "one")
    assert not await ledger.secrets.forget(ACME, "one")
    assert await ledger.secrets.get(ACME, "one") is None


async def test_rows_refuse_a_name_that_is_not_a_segment(ledger: Ledger) -> None:
    with pytest.raises(ValueError):
        await ledger.secrets.put(ACME, "a/b", b"x", None)
    with pytest.raises(ValueError):
        await ledger.secrets.put(ACME, "a", b"", None)


async def test_a_sealed_value_reads_back_and_is_not_kept_in_clear(target: Target) -> None:
    async with target.open() as ledger:
        store = SecretStore(ledger, SecretSealer(key()))
        assert await store.keep(ACME, "crm", VALUE) == "6789"
        assert await store.read(ACME, "crm") == VALUE
        row = await ledger.secrets.get(ACME, "crm")
        assert row is not None and VALUE.encode() not in row.sealed
        first = row.sealed
        await store.keep(ACME, "crm", VALUE)
        again = await ledger.secrets.get(ACME, "crm")
        assert again is not None and again.sealed != first  # a random nonce per seal
    if target.ledger_file is not None:
        for path in target.ledger_file.parent.iterdir():
            assert VALUE.encode() not in path.read_bytes()


async def test_a_value_moved_to_another_row_does_not_open(ledger: Ledger) -> None:
    store = SecretStore(ledger, SecretSealer(key()))
    await store.keep(ACME, "crm", VALUE)
    row = await ledger.secrets.get(ACME, "crm")
    assert row is not None
    await ledger.secrets.put(GLOBEX, "crm", row.sealed, None)
    await ledger.secrets.put(ACME, "other", row.sealed, None)
    for scope, name in ((GLOBEX, "crm"), (ACME, "other")):
        with pytest.raises(SecretUnreadable) as refused:
            await store.read(scope, name)
        assert VALUE not in str(refused.value)


async def test_an_altered_value_does_not_open(ledger: Ledger) -> None:
    store = SecretStore(ledger, SecretSealer(key()))
    await store.keep(ACME, "crm", VALUE)
    row = await ledger.secrets.get(ACME, "crm")
    assert row is not None
    await ledger.secrets.put(ACME, "crm", row.sealed[:-1] + bytes([row.sealed[-1] ^ 1]), None)
    with pytest.raises(SecretUnreadable, match="altered"):
        await store.read(ACME, "crm")


async def test_rotation_reseals_every_value_under_the_new_key(target: Target) -> None:
    old, new = key(), key()
    names = [f"secret-{index}" for index in range(5)]
    async with target.open() as ledger:
        store = SecretStore(ledger, SecretSealer(old))
        for name in names:
            await store.keep(ACME, name, f"{VALUE}-{name}")
    async with target.open() as ledger:
        with pytest.raises(SecretUnreadable, match="key this server does not hold"):
            await SecretStore(ledger, SecretSealer(new)).read(ACME, names[0])
        rotating = SecretStore(ledger, SecretSealer(new, previous=old))
        assert await rotating.reseal() == len(names)
        assert await rotating.reseal() == 0
    async with target.open() as ledger:
        store = SecretStore(ledger, SecretSealer(new))
        for name in names:
            assert await store.read(ACME, name) == f"{VALUE}-{name}"
        with pytest.raises(SecretUnreadable):
            await SecretStore(ledger, SecretSealer(old)).read(ACME, names[0])


async def test_while_the_previous_key_is_set_a_value_sealed_under_it_still_opens(ledger: Ledger) -> None:
    old, new = key(), key()
    await SecretStore(ledger, SecretSealer(old)).keep(ACME, "late", VALUE)
    assert await SecretStore(ledger, SecretSealer(new, previous=old)).read(ACME, "late") == VALUE


def test_ends_with_shows_four_characters_of_twelve_or_more() -> None:
    assert ends_with_of("abcdefghijkl") == "ijkl"
    assert ends_with_of("abcdefghijk") is None
