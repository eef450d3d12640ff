"""Schema migrations (issue 21), on both stores.

A ledger of release 0.1.0, the last made before schema versions were kept (frozen under
`fixtures/ledger_0_1_0`, see its `make_fixture`), is adopted as version 1 without a change and reads back
every record; migration 1 is that release's schema; each migration commits together with its version or
not at all; two processes starting together migrate once; a ledger a newer release migrated is refused at
start with one line.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import secrets
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
import pytest
import trio

from auto_runtime.ledger import (
    ANY_VERSION,
    WORKFLOW_HOST_LEASE,
    DueEntry,
    LeaseFence,
    LeaseLost,
    LedgerStartError,
    NewRecord,
    OrgScope,
    PlaybookScope,
    StreamWrite,
    VersionConflict,
    partition_of,
    partition_of_due,
    playbook_key,
)
from auto_runtime.ledger.files import private_sqlite_file
from auto_runtime.ledger.migrations import VERSION_TABLE, Migration, SchemaReport
from auto_runtime.ledger.partitions import RETIRED_HOLDER
from auto_runtime.ledger.postgres import schema as postgres_schema
from auto_runtime.ledger.records import from_microseconds
from auto_runtime.ledger.sqlite import schema as sqlite_schema
from tests.e2e.server_process import free_port, run_forked
from tests.postgres_support import admin

from .children import ROOT, child_command, where
from .conftest import Target
from .fixtures.ledger_0_1_0.ledger_content import ACME, GLOBEX, RUNS, TYPE_COUNTS, read_everything
from .test_host_processes import LineReader

FIXTURE = Path(__file__).parent / "fixtures" / "ledger_0_1_0"
MIGRATIONS: dict[str, Sequence[Migration]] = {
    "sqlite": sqlite_schema.MIGRATIONS,
    "postgres": postgres_schema.MIGRATIONS,
}
LATEST = len(sqlite_schema.MIGRATIONS)
ALL = tuple(range(1, LATEST + 1))
NOT_OURS = {"fixture_type_counts", VERSION_TABLE}
"""Tables the comparisons of schemas leave out: the fixture's projection and the version table."""


def schema_name(url: str) -> str:
    return parse_qs(urlsplit(url).query)["search_path"][0]


def load_release(target: Target) -> None:
    """Make the target's ledger the frozen ledger of release 0.1.0."""
    dump = (FIXTURE / f"{target.kind}.sql").read_text(encoding="utf-8")
    if target.ledger_file is not None:
        target.ledger_file.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(target.ledger_file)
        try:
            conn.executescript(dump)
        finally:
            conn.close()
    else:
        assert target.database_url is not None
        asyncio.run(admin(target.database_url, dump.replace("__schema__", schema_name(target.database_url))))


def expected_of(target: Target) -> Any:
    """What the frozen ledger reads back once migrated: as it was made, but for its workflow lease, which
    migration 5 retired (issue 33: the partitions' leases replace it)."""
    made = json.loads((FIXTURE / f"{target.kind}.json").read_text(encoding="utf-8"))
    return {**made, "lease": {"holder": RETIRED_HOLDER, "fencing": made["lease"]["fencing"] + 1}}


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _tidy(sql: str) -> str:
    return re.sub(r"\s*([(),])\s*", r"\1", " ".join(sql.split()))


async def _postgres_query(url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        rows: list[asyncpg.Record] = await conn.fetch(sql, *args)
        return rows
    finally:
        await conn.close()


POSTGRES_SCHEMA = """
SELECT c.relname AS owner, 'column ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END || ' identity ' || a.attidentity::text
       || ' default ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '-') || ' collate ' || coalesce(co.collname, '-')
       AS part
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
LEFT JOIN pg_collation co ON co.oid = a.attcollation
WHERE n.nspname = current_schema() AND c.relkind = 'r'
UNION ALL
SELECT conrelid::regclass::text, 'constraint ' || conname || ' ' || pg_get_constraintdef(oid)
FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
UNION ALL
SELECT tablename, 'index ' || replace(indexdef, current_schema() || '.', '')
FROM pg_indexes WHERE schemaname = current_schema()
"""


def describe(target: Target) -> dict[str, list[str]]:
    """The ledger's tables, columns, constraints and indexes, by table, whitespace aside."""
    parts: dict[str, list[str]] = {}
    if target.ledger_file is not None:
        conn = sqlite3.connect(target.ledger_file)
        try:
            rows = conn.execute("SELECT tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
        finally:
            conn.close()
        found = [(table, _tidy(sql)) for table, sql in rows]
    else:
        assert target.database_url is not None
        rows = asyncio.run(_postgres_query(target.database_url, POSTGRES_SCHEMA))
        found = [(row["owner"], row["part"]) for row in rows]
    for table, part in found:
        if table not in NOT_OURS:
            parts.setdefault(table, []).append(part)
    return {table: sorted(found) for table, found in sorted(parts.items())}


def run_migrate(target: Target, migrations: Sequence[Migration]) -> SchemaReport:
    """Run the store's migration on its own connection, as `start` does."""
    if target.ledger_file is not None:
        private_sqlite_file(target.ledger_file)
        conn = sqlite_schema.connect_writer(str(target.ledger_file))
        try:
            return sqlite_schema.migrate(conn, migrations)
        finally:
            conn.close()
    assert target.database_url is not None
    url = target.database_url

    async def migrate() -> SchemaReport:
        conn = await asyncpg.connect(url)
        try:
            return await postgres_schema.migrate(conn, migrations)
        finally:
            await conn.close()

    return asyncio.run(migrate())


def versions_of(target: Target) -> list[tuple[int, str]]:
    sql = f"SELECT version, name FROM {VERSION_TABLE} ORDER BY version"
    if target.ledger_file is not None:
        conn = sqlite3.connect(target.ledger_file)
        try:
            return [(version, name) for version, name in conn.execute(sql)]
        finally:
            conn.close()
    assert target.database_url is not None
    return [(row["version"], row["name"]) for row in asyncio.run(_postgres_query(target.database_url, sql))]


def set_version(target: Target, version: int) -> None:
    sql = f"INSERT INTO {VERSION_TABLE} (version, name, applied_at_us) VALUES ({version}, 'from_a_newer_release', 0)"
    if target.ledger_file is not None:
        conn = sqlite3.connect(target.ledger_file)
        try:
            with conn:
                conn.execute(sql)
        finally:
            conn.close()
    else:
        assert target.database_url is not None
        asyncio.run(admin(target.database_url, sql))


@contextmanager
def another_ledger(target: Target, folder: Path) -> Iterator[Target]:
    """A second, empty ledger on the same store."""
    if target.database_url is None:
        yield Target("sqlite", folder / "another" / "ledger.db", None)
        return
    schema = f"t_{secrets.token_hex(6)}"
    base = target.database_url.split("?", 1)[0]
    asyncio.run(admin(base, f"CREATE SCHEMA {schema}"))
    try:
        yield Target("postgres", None, f"{base}?search_path={schema}")
    finally:
        asyncio.run(admin(base, f"DROP SCHEMA {schema} CASCADE"))


def test_both_stores_know_the_same_numbered_migrations() -> None:
    assert LATEST >= 1
    for migrations in MIGRATIONS.values():
        assert [(m.number, m.name) for m in migrations] == [(m.number, m.name) for m in sqlite_schema.MIGRATIONS]


async def test_a_ledger_of_release_0_1_0_is_adopted_and_reads_back_every_record(target: Target) -> None:
    load_release(target)
    expected = expected_of(target)
    async with target.open([TYPE_COUNTS]) as ledger:
        assert ledger.schema == SchemaReport(found=0, version=LATEST, adopted=True, applied=ALL)
        assert ledger.rebuilt == []  # the projection's table and version were kept
        assert as_json(await read_everything(ledger)) == expected
        assert len(expected["records"]) == 15
        assert sorted(expected["content"].values()) == sorted(
            base64.b64encode(data).decode("ascii") for data in (b"a small piece of content", b"", bytes(range(256)))
        )

        stream = ACME.stream("runs", RUNS[1])
        [added] = await ledger.append([StreamWrite(stream, 2, [NewRecord("step_done", {"step": 2})])])
        assert added.position == 3
        assert added.global_position > max(record["global_position"] for record in expected["records"])
        assert (await ledger.read_stream(stream))[-1] == added
        page = await ledger.read_playbook(ACME, correlation_id=RUNS[0], limit=50)
        assert [record.id for record in page.records] == expected["correlated"][RUNS[0]]

    async with target.open([TYPE_COUNTS]) as ledger:
        assert ledger.schema == SchemaReport(found=LATEST, version=LATEST, adopted=False, applied=())
        everything = as_json(await read_everything(ledger))
        assert everything["records"][:-1] == expected["records"]
        assert everything["records"][-1]["id"] == added.id
    assert versions_of(target) == [(m.number, m.name) for m in MIGRATIONS[target.kind]]


async def test_a_ledger_at_version_3_is_made_lean_and_reads_back_every_record(target: Target) -> None:
    load_release(target)
    assert run_migrate(target, MIGRATIONS[target.kind][:3]) == SchemaReport(0, 3, True, (1, 2, 3))
    at_3 = describe(target)
    expected = expected_of(target)
    async with target.open([TYPE_COUNTS]) as ledger:
        assert ledger.schema == SchemaReport(found=3, version=LATEST, adopted=False, applied=ALL[3:])
        assert as_json(await read_everything(ledger)) == expected

        run = ACME.stream("runs", RUNS[1])
        mirror = GLOBEX.stream("mirror", RUNS[0])
        fresh = ACME.stream("runs", "run-d")
        added = await ledger.append(
            [
                StreamWrite(run, 2, [NewRecord("step_done", {"step": 2}, {"correlation_id": RUNS[1]})]),
                StreamWrite(mirror, 1, [NewRecord("mirrored", {"again": True})]),
                StreamWrite(fresh, 0, [NewRecord("run_started", {}, {"correlation_id": "run-d"})]),
            ]
        )
        assert [(r.stream, r.position) for r in added] == [(run, 3), (mirror, 2), (fresh, 1)]
        assert min(r.global_position for r in added) > max(r["global_position"] for r in expected["records"])
        assert [await ledger.stream_version(s) for s in (run, mirror, fresh)] == [3, 2, 1]
        with pytest.raises(VersionConflict):
            await ledger.append([StreamWrite(mirror, 1, [NewRecord("mirrored", {})])])
        page = await ledger.read_playbook(ACME, correlation_id=RUNS[1], limit=50)
        assert [r.id for r in page.records] == [added[0].id, *expected["correlated"][RUNS[1]]]
        page = await ledger.read_playbook(ACME, correlation_id="run-d", limit=50)
        assert [r.id for r in page.records] == [added[2].id]
        everything = as_json(await read_everything(ledger))
        assert everything["records"][:-3] == expected["records"]
        assert everything["versions"] == {**expected["versions"], run: 3, mirror: 2, fresh: 1}

    lean = describe(target)
    assert lean != at_3
    assert any("correlation_id IS NOT NULL" in part for part in lean["ledger_records"])
    if target.kind == "sqlite":
        assert "ledger_streams" in at_3
        assert "ledger_streams" not in lean


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE ledger_streams SET version = version + 1 WHERE stream = 'playbook/acme/finance/runs/run-a'",
        "DELETE FROM ledger_streams WHERE stream = 'playbook/acme/finance/runs/run-a'",
    ],
)
def test_sqlite_migration_4_keeps_version_3_when_stream_versions_disagree_with_records(
    tmp_path: Path, damage: str
) -> None:
    target = Target("sqlite", tmp_path / "folder" / "ledger.db", None)
    load_release(target)
    run_migrate(target, MIGRATIONS["sqlite"][:3])
    assert target.ledger_file is not None
    conn = sqlite3.connect(target.ledger_file)
    try:
        with conn:
            assert conn.execute(damage).rowcount == 1
    finally:
        conn.close()
    with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
        run_migrate(target, MIGRATIONS["sqlite"][:4])
    assert versions_of(target)[-1][0] == 3
    assert "ledger_streams" in describe(target)


def test_migration_1_is_the_schema_of_release_0_1_0_and_changes_nothing_in_its_ledgers(
    target: Target, tmp_path: Path
) -> None:
    load_release(target)
    release = describe(target)
    assert set(release) == {
        "ledger_records",
        "ledger_streams",
        "ledger_projections",
        "ledger_content",
        "ledger_content_chunks",
        "ledger_leases",
        "ledger_due_work",
    }
    first = MIGRATIONS[target.kind][:1]
    assert run_migrate(target, first) == SchemaReport(found=0, version=1, adopted=True, applied=(1,))
    assert describe(target) == release
    assert run_migrate(target, first) == SchemaReport(found=1, version=1, adopted=False, applied=())

    with another_ledger(target, tmp_path) as fresh:
        assert run_migrate(fresh, first) == SchemaReport(found=0, version=1, adopted=False, applied=(1,))
        assert describe(fresh) == release


def test_each_migration_commits_with_its_version_or_not_at_all(target: Target) -> None:
    load_release(target)
    known = MIGRATIONS[target.kind]
    broken = Migration(
        LATEST + 1,
        "broken",
        "CREATE TABLE test_half_made (a integer);\n-- the next statement fails\nINSERT INTO test_nowhere VALUES (1);\n",
    )
    with pytest.raises((sqlite3.Error, asyncpg.PostgresError)):
        run_migrate(target, (*known, broken))
    assert versions_of(target) == [(m.number, m.name) for m in known]
    assert "test_half_made" not in describe(target)

    note = Migration(
        LATEST + 1,
        "record_notes",
        "ALTER TABLE ledger_records ADD COLUMN note text;\n"
        "CREATE INDEX ledger_records_note ON ledger_records (note);\n",
    )
    assert run_migrate(target, (*known, note)) == SchemaReport(LATEST, LATEST + 1, False, (LATEST + 1,))
    assert versions_of(target)[-1] == (LATEST + 1, "record_notes")
    assert any("note" in part for part in describe(target)["ledger_records"])


async def test_a_ledger_a_newer_release_migrated_is_refused_with_one_line(target: Target, tmp_path: Path) -> None:
    async with target.open():
        pass
    set_version(target, LATEST + 5)
    refusal = (
        f"is a ledger of schema version {LATEST + 5}, which a newer release made; this release knows versions "
        f"up to {LATEST}, so start that newer release"
    )
    if target.ledger_file is not None:
        line = f"LEDGER_FILE: {target.ledger_file} {refusal}"
        settings = {"LEDGER_FILE": str(target.ledger_file)}
    else:
        assert target.database_url is not None
        parts = urlsplit(target.database_url)
        line = f"DATABASE_URL: the database {parts.path.lstrip('/')} on {parts.netloc.rpartition('@')[2]} {refusal}"
        secrets_key = base64.b64encode(secrets.token_bytes(32)).decode("ascii")
        settings = {"DATABASE_URL": target.database_url, "SECRETS_KEY": secrets_key}

    with pytest.raises(LedgerStartError) as refused:
        async with target.open():
            pass
    assert str(refused.value) == line

    result = await trio.to_thread.run_sync(
        lambda: run_forked(tmp_path, "serve", settings={"PORT": str(free_port()), "LOG_LEVEL": "error", **settings})
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert (result.stdout + result.stderr).strip() == line
    assert versions_of(target)[-1] == (LATEST + 5, "from_a_newer_release")  # left as it was


async def _until_waiting_on_the_ledger_lock(url: str, processes: int) -> None:
    """Return once `processes` sessions wait for the ledger's advisory lock (PostgreSQL's own lock table)."""
    conn = await asyncpg.connect(url)
    try:
        while True:
            waiting = await conn.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                "AND classid = $1 AND objid = $2 AND objsubid = 1",
                postgres_schema.LOCK_KEY >> 32,
                postgres_schema.LOCK_KEY & 0xFFFFFFFF,
            )
            if waiting >= processes:
                return
            await asyncio.sleep(0.05)
    finally:
        await conn.close()


@pytest.mark.parametrize("made_by", ["nothing", "release 0.1.0"])
async def test_two_processes_starting_together_migrate_once(target: Target, made_by: str) -> None:
    """The test holds the store's lock while both children start (on PostgreSQL until both wait for it), so
    they contend for it; whichever order they then take it in, one migrates and the other finds it done.

    PostgreSQL only: servers share a PostgreSQL ledger, while a SQLite file has one server, so there the
    second process is refused at start (its file lock, `test_start_errors`) before it could migrate."""
    if target.ledger_file is not None:
        pytest.skip("a SQLite ledger file has one server")
    adopting = made_by == "release 0.1.0"
    if adopting:
        load_release(target)
    assert target.database_url is not None
    loop = asyncio.new_event_loop()  # the holder's connection lives on a loop of its own, run briefly
    lock = loop.run_until_complete(asyncpg.connect(target.database_url))
    loop.run_until_complete(lock.execute("SELECT pg_advisory_lock($1)", postgres_schema.LOCK_KEY))

    def unlock() -> None:
        loop.run_until_complete(lock.close())
        loop.close()

    children = [
        await trio.lowlevel.open_process(child_command("migrating_child", where(target)), cwd=ROOT, stdout=-1)
        for _ in range(2)
    ]
    try:
        readers = [LineReader(child.stdout) for child in children if child.stdout is not None]
        with trio.fail_after(120):
            assert [await reader.line() for reader in readers] == ["opening", "opening"]
            waiting = _until_waiting_on_the_ledger_lock(target.database_url, len(children))
            await trio.to_thread.run_sync(asyncio.run, waiting, abandon_on_cancel=True)
            unlock()
            reports = [SchemaReport(**json.loads(await reader.line())) for reader in readers]
            for child in children:
                await child.wait()
                assert child.returncode == 0
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()
                await child.wait()
    # Each migration commits alone, so the two may take turns between migrations: what counts is that every
    # migration ran exactly once, in order, and both ended on the latest version.
    assert sorted(number for report in reports for number in report.applied) == list(ALL)
    assert [report.version for report in reports] == [LATEST, LATEST]
    first = min(reports, key=lambda report: report.found)
    assert (first.found, first.adopted, list(first.applied[:1])) == (0, adopting, [ALL[0]])
    assert versions_of(target) == [(m.number, m.name) for m in MIGRATIONS[target.kind]]


def _raw(target: Target, sqlite_sql: str, postgres_sql: str) -> list[tuple[Any, ...]]:
    """Run one statement on the target's database outside the ledger (as a server of an earlier release would)."""
    if target.ledger_file is not None:
        conn = sqlite3.connect(target.ledger_file)
        try:
            with conn:
                return [tuple(row) for row in conn.execute(sqlite_sql).fetchall()]
        finally:
            conn.close()
    assert target.database_url is not None
    return [tuple(row) for row in asyncio.run(_postgres_query(target.database_url, postgres_sql))]


async def test_a_ledger_of_the_release_before_partitions_opens_with_its_due_work_placed_and_its_lease_retired(
    target: Target,
) -> None:
    """Issue 33: a ledger main's migrations (1 to 4) made, with armed due work and the single workflow lease
    held, opens unchanged but for partitions: its entries get their partitions, the count is kept, and the old
    lease is retired so its holder's fence fails and nobody takes it again."""
    load_release(target)
    assert run_migrate(target, MIGRATIONS[target.kind][:4]).version == 4
    run_id = "0190a3b2-7c4d-7e8f-9a0b-1c2d3e4f5a6b"
    _raw(
        target,
        "INSERT INTO ledger_due_work (scope_key, run_id, key, due_us, payload, state) VALUES "
        f"('playbook/acme/finance', '{run_id}', 'timer-1', 1000, 'null', 'armed'), "
        "('playbook/acme/finance', 'shadow', 'shadow:f', 2000, 'null', 'armed')",
        "INSERT INTO ledger_due_work (scope_key, run_id, key, due_us, payload, state) VALUES "
        f"('playbook/acme/finance', '{run_id}', 'timer-1', 1000, 'null', 'armed'), "
        "('playbook/acme/finance', 'shadow', 'shadow:f', 2000, 'null', 'armed')",
    )
    _raw(
        target,
        "UPDATE ledger_leases SET holder = 'old', until_us = 9e15, fencing = 3 WHERE name = 'workflow-host'",
        "UPDATE ledger_leases SET holder = 'old', lapses_at = now() + interval '1 hour', fencing = 3 "
        "WHERE name = 'workflow-host'",
    )
    async with target.open(partitions=8) as ledger:
        assert ledger.schema is not None and ledger.schema.version == LATEST
        assert (ledger.partitioning.count, ledger.partitioning.disagrees) == (8, False)
        expected = {
            run_id: partition_of(run_id, 8),
            "shadow": partition_of(playbook_key("acme", "finance"), 8),
        }
        for entry_run, partition in expected.items():
            assert partition == partition_of_due("playbook/acme/finance", entry_run, 8)
            placed = await ledger.due_work.due(from_microseconds(10_000), partitions=[partition])
            assert entry_run in [entry.run_id for entry in placed]
            others = [p for p in range(8) if p != partition]
            assert entry_run not in [e.run_id for e in await ledger.due_work.due(from_microseconds(10_000), 10, others)]
        retired = await ledger.lease(WORKFLOW_HOST_LEASE).holder()
        assert (retired.holder, retired.fencing) == (RETIRED_HOLDER, 4)
        assert not (await ledger.lease(WORKFLOW_HOST_LEASE).claim("old", timedelta(seconds=5))).held_by("old")
        with pytest.raises(LeaseLost):
            await ledger.append(
                [StreamWrite(ACME.stream("runs", run_id), ANY_VERSION, [NewRecord("late", {})])],
                fence=LeaseFence(WORKFLOW_HOST_LEASE, "old", 3),
            )
    async with target.open(partitions=16) as ledger:
        assert (ledger.partitioning.count, ledger.partitioning.asked, ledger.partitioning.disagrees) == (8, 16, True)


async def test_python_and_the_database_place_due_work_in_the_same_partitions(target: Target) -> None:
    """The store places each entry it arms (`ledger_partition_of`); the placement is `partition_of_due`'s."""
    async with target.open(partitions=7) as ledger:
        runs = [str(uuid.UUID(int=n * 7919 + 1, version=4)) for n in range(40)] + ["shadow", "approval", "X"]
        scope = PlaybookScope("acme", "fin")
        await ledger.due_work.arm([DueEntry(scope, run, "k", from_microseconds(n)) for n, run in enumerate(runs)])
        await ledger.due_work.arm([DueEntry(OrgScope("acme"), "follow", "k", from_microseconds(5))])
        for partition in range(7):
            found = await ledger.due_work.due(from_microseconds(10**6), 1000, partitions=[partition])
            assert sorted((e.scope.key, e.run_id) for e in found) == sorted(
                [(scope.key, run) for run in runs if partition_of_due(scope.key, run, 7) == partition]
                + ([("org/acme", "follow")] if partition_of_due("org/acme", "follow", 7) == partition else [])
            )
        assert {partition_of(run, 7) for run in runs[:40]} == set(range(7))
        assert await ledger.due_work.due(from_microseconds(10**6), 10, partitions=[]) == []
        assert await ledger.due_work.next_due(partitions=[]) is None
