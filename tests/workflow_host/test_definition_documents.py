"""Issue 15 point 2: the playbook actors keep the one cache of parsed definition documents. A saved version is
what the next run takes, on this server or after another server's save (two ledgers on one store); a waiting
run's next input still takes the document it started with; a passivated playbook keeps no document."""

from __future__ import annotations

from datetime import timedelta

import trio
import trio.testing

from auto_runtime.ledger import Ledger, uuid7
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.server import RUNTIME_PROJECTIONS
from tests.ledger.conftest import Target
from tests.workflow_host.conftest import HEAD, SCOPE
from tests.workflow_host.test_runtime import runs, runtime_of

__all__ = ["runs"]

KEY = (SCOPE.org, SCOPE.playbook)


def hears(value: int) -> str:
    """A workflow that waits for one `com.acme.go` event, then sets `v` to `value`."""
    return HEAD + (
        "do:\n  - hear: { listen: { to: { one: { with: { type: com.acme.go } } } } }\n"
        f"  - done: {{ set: {{ v: {value} }} }}\n"
    )


def sets(value: int) -> str:
    return HEAD + f"do:\n  - done: {{ set: {{ v: {value} }} }}\n"


async def test_a_saved_version_is_what_the_next_run_and_the_next_input_take_here_and_after_another_server(
    target: Target, ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    definitions = runs.definitions
    documents = definitions.actors.documents
    await definitions.create(SCOPE, "workflow", "hears", hears(1), "tester")
    await definitions.create(SCOPE, "workflow", "now", sets(1), "tester")
    runtime = runtime_of(ledger, engine, runs, "server-a", sweep=timedelta(minutes=1))
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run)
        first = await runtime.runs.run_definition(SCOPE, "workflow", "now", {}, None, "caller-1")
        again = await runtime.runs.run_definition(SCOPE, "workflow", "now", {}, None, "caller-1")
        assert [first["output"], again["output"]] == [{"v": 1}, {"v": 1}]
        assert documents.parses == 1, "the second run took the document its playbook's actor keeps"

        await definitions.update(SCOPE, "workflow", "now", sets(2), "tester")
        assert (await runtime.runs.run_definition(SCOPE, "workflow", "now", {}, None, "x"))["output"] == {"v": 2}

        waiting = await runtime.runs.run_definition(SCOPE, "workflow", "hears", {}, str(uuid7()), "caller-1")
        await definitions.update(SCOPE, "workflow", "hears", hears(2), "tester")
        newer = await runtime.runs.run_definition(SCOPE, "workflow", "hears", {}, str(uuid7()), "caller-1")
        for started in (waiting, newer):
            await runtime.send_event(SCOPE, started["run_id"], {"type": "com.acme.go"}, "caller-1")
        outputs = [(await runs.read_run(SCOPE, r["run_id"])) for r in (waiting, newer)]
        assert [(o.status, o.output) for o in outputs if o is not None] == [
            ("succeeded", {"v": 1}),  # the run that waited took its next input on the version it started with
            ("succeeded", {"v": 2}),
        ]

        if target.kind == "postgres":  # servers share a PostgreSQL ledger only (a SQLite file has one server)
            async with target.open(RUNTIME_PROJECTIONS) as other_ledger:
                other = DefinitionRegistry(other_ledger, runs.types)
                async with other.actors.serving():
                    saved = await other.update(SCOPE, "workflow", "now", sets(3), "server-b")
            assert saved.version == 3
            after = await runtime.runs.run_definition(SCOPE, "workflow", "now", {}, None, "caller-1")
            assert after["output"] == {"v": 3}, "another server's save is what this server's next run takes"
        nursery.cancel_scope.cancel()


async def test_a_playbook_actor_that_passivates_keeps_no_document(
    ledger: Ledger, engine: SandboxEngine, runs: RunService
) -> None:
    definitions = runs.definitions
    documents = definitions.actors.documents
    await definitions.create(SCOPE, "workflow", "now", sets(1), "tester")
    runtime = runtime_of(ledger, engine, runs, "server-a", sweep=timedelta(minutes=1))
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.run)
        await runtime.runs.run_definition(SCOPE, "workflow", "now", {}, None, "caller-1")
        assert documents.holds(KEY) == 1
        await trio.testing.wait_all_tasks_blocked()  # the run's actors have passivated: the playbook's may now
        definitions.actors.passivate(KEY)
        await trio.testing.wait_all_tasks_blocked()
        assert not definitions.actors.is_live(KEY)
        assert documents.holds(KEY) == 0 and len(documents) == 0
        await runtime.runs.run_definition(SCOPE, "workflow", "now", {}, None, "caller-1")
        assert documents.parses == 2, "the next life parsed the document again from the ledger's source"
        nursery.cancel_scope.cancel()
