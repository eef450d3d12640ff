"""Seeds, "Reasoning functions": an overview ends with **Used by**, read fresh each time the definition is
returned, a line for each active definition of the playbook that uses it; left out when nothing does."""

from __future__ import annotations

from pathlib import Path

from auto_runtime.functions.function_type import CheckedDocument, Rejected, RunEnding, RunRequest, Use
from auto_runtime.ledger import PlaybookScope, open_ledger
from auto_runtime.playbooks.definition_registry import DEFINITIONS_PROJECTION, DefinitionRegistry
from auto_runtime.problems import Rejection


class DocumentType:
    """A definition type whose document is one line: the names it calls, separated by commas."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def check(self, source: str) -> CheckedDocument:
        calls = [name.strip() for name in source.split(",") if name.strip()]
        return CheckedDocument(
            media_type="text/plain",
            description=None,
            input_schema=None,
            output_schema=None,
            shape=None,
            overview="Calls others.\n",
            uses=tuple(Use("computation", name, "calls it with run_definition") for name in calls),
        )

    async def run(self, request: RunRequest) -> RunEnding:
        return Rejected(Rejection("unavailable", "not run in this test"))


async def test_used_by_lists_active_users_and_is_read_fresh(tmp_path: Path) -> None:
    scope = PlaybookScope("acme", "finance")
    types = {"computation": DocumentType("computation"), "workflow": DocumentType("workflow")}
    async with open_ledger(ledger_file=tmp_path / "ledger.db", projections=[DEFINITIONS_PROJECTION]) as ledger:
        registry = DefinitionRegistry(ledger, types)  # type: ignore[arg-type]
        async with registry.actors.serving():
            target = await registry.create(scope, "computation", "totals", "", "local")
            alone = await registry.shown(scope, target, with_overview=True)
            assert "**Used by**" not in alone["overview"]
            assert alone["overview"].startswith("# totals\n")
            await registry.create(scope, "workflow", "month-end", "totals", "local")
            await registry.create(scope, "workflow", "quarter-end", "totals, other", "local")
            totals = await registry.latest(scope, "computation", "totals")
            used = await registry.shown(scope, totals, with_overview=True)
            assert used["overview"].endswith(
                "**Used by**\n\n"
                "- the workflow `month-end`, which calls it with run_definition\n"
                "- the workflow `quarter-end`, which calls it with run_definition\n"
            )
            await registry.retire(scope, "workflow", "month-end", "local")
            totals = await registry.latest(scope, "computation", "totals")
            fewer = await registry.shown(scope, totals, with_overview=True)
            assert "month-end" not in fewer["overview"] and "quarter-end" in fewer["overview"]
            listed = await registry.listed(scope, "computation", include_retired=False)
            assert "overview" not in await registry.shown(scope, listed[0], with_overview=False)
