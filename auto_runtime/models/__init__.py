"""Language models: references, aliases, the allow list, providers and their wire protocols, and the catalog.

The reasoning definition type calls this package through :class:`ModelDirectory`: ``resolve`` admits a
reference without calling anything (or raises :class:`ModelNotOffered`), ``check_provider_options``
refuses gateway options the entry does not allow, ``call`` makes one model call within its deadline
(or raises :class:`ModelCallFailure`), and ``list_models`` builds the catalog ``list_models`` shows::

    model = directory.resolve("anthropic/claude-sonnet-4-5")      # ModelNotOffered before any call
    directory.check_provider_options(document_provider_options)   # ProviderOptionRefused
    request = ModelRequest(
        turns=(UserTurn(message),),
        instructions=system_block,
        tools=offered_tools,
        output=JsonOutput(output_schema),
        settings=CallSettings(max_output_tokens=600),
        provider_options=document_provider_options,
    )
    answer = await directory.call(model, request, run_id=run_id)    # ModelCallFailure
    if answer.tool_calls:
        turns = (*request.turns, assistant_turn(answer), ToolResultsTurn(results))
"""

from auto_runtime.models.answers import FinishReason, ModelAnswer, Replay, SettingWarning, TokenUsage, ToolCall
from auto_runtime.models.conversation import (
    AssistantTurn,
    CallSettings,
    JsonOutput,
    ModelRequest,
    ToolDefinition,
    ToolResult,
    ToolResultsTurn,
    Turn,
    UserTurn,
    assistant_turn,
)
from auto_runtime.models.deadlines import RetryPolicy, call_deadline_seconds
from auto_runtime.models.directory import ModelDirectory
from auto_runtime.models.failures import FailureKind, ModelCallFailure
from auto_runtime.models.listed import ListedModel
from auto_runtime.models.listing import ModelList, catalog_words
from auto_runtime.models.provider_options import ProviderOptionRefused, offered_option_problems
from auto_runtime.models.rejections import failure_rejection, not_offered_rejection, option_rejection
from auto_runtime.models.resolution import ModelNotOffered, ResolvedModel

__all__ = [
    "AssistantTurn",
    "CallSettings",
    "FailureKind",
    "FinishReason",
    "JsonOutput",
    "ListedModel",
    "ModelAnswer",
    "ModelCallFailure",
    "ModelDirectory",
    "ModelList",
    "ModelNotOffered",
    "ModelRequest",
    "ProviderOptionRefused",
    "Replay",
    "ResolvedModel",
    "RetryPolicy",
    "SettingWarning",
    "TokenUsage",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "ToolResultsTurn",
    "Turn",
    "UserTurn",
    "assistant_turn",
    "call_deadline_seconds",
    "catalog_words",
    "failure_rejection",
    "not_offered_rejection",
    "offered_option_problems",
    "option_rejection",
]
