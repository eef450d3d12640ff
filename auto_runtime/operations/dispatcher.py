"""The dispatcher pipeline, the same for every transport.

authenticate (done by the transport) → org of the caller → permission → playbook access → playbook exists
(a retired playbook answers commands with `conflict`, kind `retired`) → decode input → handler → output.
A handler that fails with a reason its operation does not declare, or with any other exception, is an
`internal` error with an incident reference; the input is never logged. A ledger that cannot take writes
(`LedgerUnavailable`: a full disk, or its writer's mailbox full) is a passing fault of any operation: `unavailable`
with `Retry-After`. So is an actor that cannot take the request now: its bounded mailbox is full (`MailboxFull`),
it stopped (`ActorStoppedError`: with the server, which answers that it is stopping, or for a restart by its
supervisor, which answers that the part is starting again), or it did not answer within the ask's bound
(`AskTimeoutError`).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal, Protocol

from auto_runtime.actors import ActorStoppedError, AskTimeoutError, MailboxFull
from auto_runtime.auth.caller import Caller
from auto_runtime.ledger import LedgerUnavailable
from auto_runtime.operations.decode import decode_input
from auto_runtime.operations.operation import Operation, OperationContext
from auto_runtime.problems import Rejection, conflict, forbidden, not_found, unavailable
from auto_runtime.telemetry import name_request

log = logging.getLogger("auto_runtime.operations")

PLAYBOOK_ID = re.compile(r"^[a-z][a-z0-9-]{2,47}$")
ORG_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ALWAYS_ALLOWED_REASONS = frozenset({"client_closed_request"})
PlaybookStatus = Literal["active", "retired"]
OVERLOADED = "The server has more requests for this playbook in hand than it takes at once; send it again shortly."
STOPPING = "The server is stopping; send the request again, to this server once it is back or to another one."
RESTARTING = (
    "The server is starting again the part that handles this playbook's requests; send the request again shortly."
)


class PlaybookDirectory(Protocol):
    """What the dispatcher needs to know of playbooks: whether one exists, and whether it is retired."""

    async def playbook_status(self, org: str, playbook: str) -> PlaybookStatus | None: ...


def incident(error: BaseException, operation: str, request_id: str) -> Rejection:
    reference = f"urn:uuid:{uuid.uuid4()}"
    log.error(
        "operation %s failed: %s (incident %s, request %s)",
        operation,
        type(error).__name__,
        reference,
        request_id,
        exc_info=(type(error), error, error.__traceback__),
        extra={"incident": reference, "operation": operation, "request_id": request_id},
    )
    return Rejection(
        "internal",
        "Something went wrong inside the server. Report the incident reference to its operator.",
        instance=reference,
    )


class Dispatcher:
    def __init__(self, services: Any, playbooks: PlaybookDirectory | None) -> None:
        self.services = services
        self.playbooks = playbooks

    def _stopping(self) -> bool:
        """Whether the server is really stopping (else an actor that stopped is one being restarted)."""
        workflows = getattr(self.services, "workflows", None)
        return bool(getattr(workflows, "stopping", False))

    async def check_access(self, operation: Operation, caller: Caller, org: str, playbook: str | None) -> None:
        if not caller.may_act_in_org(org):
            raise forbidden(f"This {caller.credential_named} belongs to the org {caller.org}, not to that org.")
        if not ORG_ID.match(org):
            raise not_found("This server has no such org: an org id is 1 to 64 letters, digits, _ and -.")
        if operation.permissions and not caller.holds_any(operation.permissions):
            needed = " or ".join(sorted(str(p) for p in operation.permissions))
            raise forbidden(
                f"{operation.name} needs the permission {needed}, which this {caller.credential_named} does not have."
            )
        if operation.scope != "playbook":
            return
        assert playbook is not None
        if not caller.may_access_playbook(playbook):
            raise forbidden(f"This {caller.credential_named} may not access the playbook {playbook}.")
        status = await self.playbook_status(org, playbook)
        if status is None:
            raise not_found(f"The org {org} has no playbook {playbook}.")
        if status == "retired" and operation.is_command:
            raise conflict(f"The playbook {playbook} is retired, so nothing in it can change.", kind="retired")

    async def playbook_status(self, org: str, playbook: str) -> PlaybookStatus | None:
        if not PLAYBOOK_ID.match(playbook) or self.playbooks is None:
            return None
        return await self.playbooks.playbook_status(org, playbook)

    async def dispatch(
        self,
        operation: Operation,
        caller: Caller,
        org: str,
        playbook: str | None,
        raw_input: Mapping[str, Any],
        *,
        request_id: str,
        transport: Literal["http", "mcp"] = "http",
        body: AsyncIterator[bytes] | None = None,
    ) -> Any:
        name_request(operation.name)
        await self.check_access(operation, caller, org, playbook)
        data = decode_input(operation, raw_input)
        context = OperationContext(
            caller=caller,
            org=org,
            playbook=playbook,
            services=self.services,
            request_id=request_id,
            transport=transport,
            body=body,
        )
        try:
            return await operation.handler(context, data)
        except Rejection as rejection:
            if rejection.reason in operation.reasons or rejection.reason in ALWAYS_ALLOWED_REASONS:
                raise
            raise incident(rejection, operation.name, request_id) from None
        except LedgerUnavailable as error:
            raise unavailable(error.detail) from None
        except (MailboxFull, AskTimeoutError):
            raise unavailable(OVERLOADED) from None
        except ActorStoppedError:
            raise unavailable(STOPPING if self._stopping() else RESTARTING) from None
        except Exception as error:
            raise incident(error, operation.name, request_id) from None
