"""An actor stopped while its registry restarts answers `unavailable` in the words of a restart, and only a server
that is really stopping says it is stopping (issue 15 follow-up, point 4)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from auto_runtime.actors import Actor, Registry
from auto_runtime.auth.access import AccessGate
from auto_runtime.auth.api_keys import KeyRing
from auto_runtime.http.app import PublishedDocuments, create_app
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.dispatcher import RESTARTING, STOPPING, Dispatcher
from auto_runtime.operations.operation import Hints, Operation, OperationContext


class Nothing(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Echo(Actor[int, int]):
    async def receive(self, message: int) -> int:
        return message


REGISTRY: Registry[str, int, int] = Registry("between-restarts", lambda key: Echo())
"""A registry that is not running, as one is while its supervisor restarts it."""


async def asks(context: OperationContext, data: Nothing) -> dict[str, Any]:
    return {"echo": await REGISTRY.ask("key", 1)}


def app_of(stopping: bool) -> Any:
    operation = Operation(
        name="asks",
        title="asks",
        description="asks",
        scope="org",
        permissions=frozenset(),
        method="POST",
        route="/asks",
        input_model=Nothing,
        output_model=None,
        handler=asks,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="test",
    )
    services = SimpleNamespace(workflows=SimpleNamespace(stopping=stopping))  # the flag the server sets at its stop
    return create_app(
        catalog=Catalog([operation]),
        dispatcher=Dispatcher(services=services, playbooks=None),
        gate=AccessGate.build(local_mode=True, keys=KeyRing([]), allowed_origins=()),
        documents=PublishedDocuments(openapi=b"{}", guides={}),
        public_url=None,
    )


@pytest.mark.parametrize(("stopping", "detail"), [(False, RESTARTING), (True, STOPPING)])
async def test_a_stopped_actor_answers_unavailable_in_the_words_of_what_stopped_it(stopping: bool, detail: str) -> None:
    response = await app_of(stopping).test_client().post("/v1/orgs/acme/asks", json={})
    assert response.status_code == 503
    assert response.headers["retry-after"]
    problem = await response.get_json()
    assert (problem["reason"], problem["detail"]) == ("unavailable", detail)
