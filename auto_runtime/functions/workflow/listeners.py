"""The `workflow_listeners` projection: per workflow run, its open listens for playbook events (spec 9.1).

Computed from what each `workflow_input_applied` record carries: its `listening` metadata (the run store
writes the open listens' literal types there), or, in a record without it, the state's `ListenRun.listener`
and the listen's filters at the activation's `reference` in `state.document`; so the history alone rebuilds
it. A row
exists only while the run has an open listen with a literal type; it keeps:

- `listeners`: listener id → `{types, since}`, the literal types of the listen's filters and the global
  position of the record whose input opened it. A playbook event is offered to the listen only when its
  record's global position is greater (it was recorded while the listen was open), so re-reading the feed
  from an older position never offers a listen an event recorded before it opened;
- `taken`: the record ids of the last `TAKEN_KEPT` offered events the run took (inputs of kind
  `event_offered`), so an event offered again after a crash is not offered twice to an `all` listen.

`listening_runs` reads the rows of one playbook and answers the runs to offer an event of one type, keeping
to the first `MAX_LISTENING_TASKS` listening tasks of the playbook, oldest listen first (spec 9.1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from auto_runtime.functions.workflow.expressions import wrapped_expression
from auto_runtime.functions.workflow.run_state import STATE_METADATA, WORKFLOW_INPUT_APPLIED
from auto_runtime.json_pointers import tokens_of
from auto_runtime.ledger import Ledger, PlaybookScope, Projection, Record, Row, TableSpec

LISTENING_METADATA: Final = "listening"
"""The metadata of a `workflow_input_applied` record naming the run's open listens (listener id → literal
types), written by the run store, which reads them off the document the stored state only names."""

MAX_LISTENING_TASKS: Final = 4_096
TAKEN_KEPT: Final = 64


def _keys(record: Record) -> list[tuple[Any, ...]]:
    if record.type != WORKFLOW_INPUT_APPLIED:
        return []
    parts = record.stream.split("/")
    if len(parts) != 5 or parts[0] != "playbook" or parts[3] != "runs":
        return []
    return [(parts[1], parts[2], parts[4])]


def _at(document: Any, reference: str) -> Any:
    """The value at a JSON pointer of the document, or None."""
    value = document
    for key in tokens_of(reference):
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def listen_types(document: Any, reference: str) -> list[str]:
    """The literal types of the filters of the listen task at `reference` (as the engine arms them)."""
    task = _at(document, reference)
    listen = task.get("listen") if isinstance(task, dict) else None
    to = listen.get("to") if isinstance(listen, dict) else None
    if not isinstance(to, dict):
        return []
    filters: list[Any] = []
    if "one" in to:
        filters = [to["one"]]
    elif isinstance(to.get("any"), list):
        filters = list(to["any"])
    elif isinstance(to.get("all"), list):
        filters = list(to["all"])
    types = set()
    for item in filters:
        attributes = item.get("with") if isinstance(item, dict) else None
        kind = attributes.get("type") if isinstance(attributes, dict) else None
        if isinstance(kind, str) and wrapped_expression(kind) is None:
            types.add(kind)
    return sorted(types)


def open_listeners(state: Mapping[str, Any]) -> dict[str, list[str]]:
    """Listener id → literal types, for each open listen in a stored run state."""
    if state.get("ended"):
        return {}
    found: dict[str, list[str]] = {}
    for activation in state.get("activations") or []:
        listener = activation.get("listener") if isinstance(activation, dict) else None
        if isinstance(listener, str) and activation.get("phase") == "listening":
            types = listen_types(state.get("document"), str(activation.get("reference", "")))
            if types:
                found[listener] = types
    return found


def _row_after(row: Row | None, record: Record) -> Row | None:
    state = record.metadata.get(STATE_METADATA)
    if not isinstance(state, dict):
        return row
    listening = record.metadata.get(LISTENING_METADATA)
    opened = (
        {str(k): [str(t) for t in v] for k, v in listening.items() if isinstance(v, list)}
        if isinstance(listening, dict)
        else open_listeners(state)
    )
    before: dict[str, Any] = dict(row["listeners"]) if row else {}
    taken: list[str] = list(row["taken"]) if row else []
    applied = record.data.get("input") if isinstance(record.data, dict) else None
    if isinstance(applied, dict) and applied.get("kind") == "event_offered" and isinstance(applied.get("key"), str):
        taken = [*taken, applied["key"]][-TAKEN_KEPT:]
    listeners = {
        listener: {
            "types": types,
            "since": before[listener]["since"] if listener in before else record.global_position,
        }
        for listener, types in opened.items()
        if types
    }
    if not listeners:
        return None
    return {"listeners": listeners, "taken": taken, "count": len(listeners)}


WORKFLOW_LISTENERS_PROJECTION = Projection(
    name="workflow_listeners",
    version=1,
    table=TableSpec(
        name="workflow_listeners",
        columns={
            "org": "text",
            "playbook": "text",
            "run_id": "text",
            "listeners": "json",
            "taken": "json",
            "count": "integer",
        },
        primary_key=("org", "playbook", "run_id"),
    ),
    keys=_keys,
    row_after=_row_after,
)


@dataclass(frozen=True)
class ListeningRun:
    run_id: str
    listeners: dict[str, Any]
    taken: frozenset[str]

    def wants(self, event_type: str, record: Record) -> bool:
        """Whether an open listen of the run takes this type and opened before the record was recorded."""
        if record.id in self.taken:
            return False
        return any(
            event_type in info["types"] and int(info["since"]) < record.global_position
            for info in self.listeners.values()
        )


def _within_limit(rows: list[ListeningRun]) -> list[ListeningRun]:
    """The listens the playbook offers events to: the first `MAX_LISTENING_TASKS`, oldest first."""
    everyone = sorted(
        ((int(info["since"]), run.run_id, listener) for run in rows for listener, info in run.listeners.items()),
    )
    kept = {(run_id, listener) for _, run_id, listener in everyone[:MAX_LISTENING_TASKS]}
    limited: list[ListeningRun] = []
    for run in rows:
        listeners = {key: value for key, value in run.listeners.items() if (run.run_id, key) in kept}
        if listeners:
            limited.append(ListeningRun(run.run_id, listeners, run.taken))
    return limited


async def listening_runs(ledger: Ledger, scope: PlaybookScope) -> list[ListeningRun]:
    """The playbook's runs with open listens for playbook events, within the playbook's limit."""
    rows = await ledger.queries.workflow_listeners.of_playbook(scope.org, scope.playbook)
    decoded = [WORKFLOW_LISTENERS_PROJECTION.decode_row(row) for row in rows]
    runs = [ListeningRun(str(row["run_id"]), dict(row["listeners"]), frozenset(row["taken"] or [])) for row in decoded]
    return _within_limit(runs)
