"""The prediction type's handlers in the run actors' table, and how the type is served by the playbooks' actors.

`serve_builds` is called where the type's services are composed (`server.compose_services`), once the
playbooks' actors exist: it adds a handler per build message (`runs.prediction_messages`) to the run actors'
table, and gives the builds their way to claim a function's build slot from its playbook's actor.

Each handler runs inside the build's run actor and records through the run's writer only; the texts a run
that kept moving answers are the ones the build routes gave before the run actors.
"""

from __future__ import annotations

from typing import Any

from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.decisions import AnswerDecider, CandidateDecider, EndingDecider, answered_fact
from auto_runtime.playbooks.playbook_host import PlaybookActors
from auto_runtime.playbooks.run_slots import SlotClaims
from auto_runtime.problems import conflict
from auto_runtime.runs import RunHandlers, RunWriter
from auto_runtime.runs.prediction_messages import (
    AnswerBuild,
    BuildEnding,
    CandidateMessage,
    EndBuildPastDeadline,
    EndCancelledBuild,
    ExpireBuild,
    RefuseCandidate,
    ScoreBuild,
    UploadCandidate,
)


def _candidate_moved() -> Exception:
    return conflict("The build changed at the same moment; send the candidate again.")


def _answer_moved() -> Exception:
    return conflict("The build changed at the same moment; send the answer again.")


async def record_candidate(writer: RunWriter, message: CandidateMessage) -> None:
    await writer.write(CandidateDecider(writer.run_id), message, kept_moving=_candidate_moved)


async def answer_build(writer: RunWriter, message: AnswerBuild) -> dict[str, Any]:
    written = await writer.write(AnswerDecider(writer.scope, writer.run_id), message, kept_moving=_answer_moved)
    if written.appended:
        return answered_fact(written.appended[0], writer.run_id)
    assert written.reply is not None
    return written.reply


async def end_build(writer: RunWriter, message: BuildEnding) -> bool:
    def kept_moving() -> Exception:
        return RuntimeError(f"the build {writer.run_id} kept moving while its ending was recorded")

    written = await writer.write(EndingDecider(writer.scope, writer.run_id), message, kept_moving=kept_moving)
    return written.reply


def add_build_handlers(handlers: RunHandlers) -> None:
    handlers.add(UploadCandidate, record_candidate)
    handlers.add(RefuseCandidate, record_candidate)
    handlers.add(AnswerBuild, answer_build)
    handlers.add(ScoreBuild, end_build)
    handlers.add(ExpireBuild, end_build)
    handlers.add(EndBuildPastDeadline, end_build)
    handlers.add(EndCancelledBuild, end_build)


def serve_builds(builds: Builds, actors: PlaybookActors) -> None:
    """Serve the builds through the playbooks' actors: their run messages, and their build slots."""
    add_build_handlers(actors.runs.handlers)
    builds.claim_slots_with(SlotClaims(actors))
