"""How the workflow hands its calls to activities: the innermost model and tool
interceptors of the workflow's agent, the retry policy mapped from the agent's own, and
the payloads kept under Temporal's limit."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError
from temporalio.workflow import ActivityCancellationType

from .._approval import Interrupt, Resume
from .._exceptions import ModelError, ModelHTTPError, ToolExecutionError
from .._interceptors import ToolCallRequest, ToolCallResponse, ToolHandler
from .._llm_node import MODEL_ITERATION, STREAM, visible_names
from .._run_context import DYNAMIC_TOOLS, dynamic_tools
from .._state import MESSAGES, OverAllState
from .._tools import TOOL_DECISIONS
from ..interceptors._retry import ModelRetryInterceptor
from ..models.base import ModelRequest, ModelResponse
from . import _codec as codec

if TYPE_CHECKING:
    from .._agent import ReactAgent
    from ._workflow import ReactAgentWorkflow

MODEL_ACTIVITY = "reactcore.model"
TOOL_ACTIVITY = "reactcore.tool"
SAVE_ACTIVITY = "reactcore.save"
LOAD_ACTIVITY = "reactcore.load"
PAYLOAD_LIMIT = 2 * 2**20 - 64 * 2**10  # Temporal's 2 MB, less room for the envelope


def model_retry(agent: ReactAgent) -> ModelRetryInterceptor | None:
    """The agent's own ``ModelRetryInterceptor``: its settings become the model activity's
    retry policy (and it is left out of the workflow's chain, so calls are not retried twice)."""
    found = [i for i in agent.interceptors if isinstance(i, ModelRetryInterceptor)]
    return found[0] if found else None


def model_retry_policy(agent: ReactAgent) -> RetryPolicy:
    """Temporal's retry policy mapped from the agent's ``ModelRetryInterceptor``.

    Without one a failed model call is not retried (as in process) — but a call lost with
    its worker (a heartbeat or start-to-close timeout) always is, on another worker.
    Whether an error is worth retrying is decided in the activity (``retry_on``).
    """
    retry = model_retry(agent)
    if retry is None:
        return RetryPolicy(initial_interval=timedelta(seconds=0.5), maximum_attempts=0)
    return RetryPolicy(
        initial_interval=timedelta(seconds=retry.initial_delay),
        backoff_coefficient=retry.backoff_factor,
        maximum_interval=timedelta(seconds=max(retry.max_delay, retry.initial_delay)),
        maximum_attempts=retry.max_attempts,
    )


def _model_error(exc: ActivityError) -> Exception:
    """The reactcore error a failed model activity stands for."""
    cause = exc.cause
    if isinstance(cause, ApplicationError):
        details = cause.details[0] if cause.details else {}
        if cause.type == "ModelHTTPError" and isinstance(details, Mapping):
            return ModelHTTPError(
                cause.message,
                status_code=int(details.get("status_code", 0)),
                request_id=details.get("request_id"),
                body=str(details.get("body", "")),
            )
        return ModelError(f"{cause.type}: {cause.message}" if cause.type else cause.message)
    return ModelError(f"the model activity failed: {exc.message or exc}")


@attrs.define(eq=False)
class ModelActivities:
    """The innermost model interceptor of the workflow: each model call is an activity."""

    owner: ReactAgentWorkflow

    async def wrap_model_call(self, request: ModelRequest, handler: Any) -> ModelResponse:
        settings = self.owner.settings
        if request.chat_model is not None and request.chat_model is not settings.agent.model:
            raise TypeError(
                "reactcore.temporal runs model calls with the agent's own model only; an "
                "interceptor chose another (request.chat_model)"
            )
        if request.dynamic_tools:
            added = {t.name: t for t in request.dynamic_tools}
            request.context[DYNAMIC_TOOLS] = {**dynamic_tools(request.context), **added}
        conversation = self.owner.conversation(request.messages)
        payload = codec.ModelInput(
            settings.name,
            list(request.messages) if conversation is None else [],
            request.system_message,
            list(request.tools),
            list(request.tool_specs),
            request.context.get(MODEL_ITERATION, 0),
            bool(request.context.get(STREAM, True)),
            self.owner.thread_id,
            codec.dump_options(request.options),
            conversation,
        )
        try:
            text = await workflow.execute_activity(
                MODEL_ACTIVITY,
                bounded(codec.dumps(payload), "a model call's input"),
                start_to_close_timeout=timedelta(seconds=settings.model_timeout),
                heartbeat_timeout=timedelta(seconds=settings.heartbeat_timeout),
                retry_policy=model_retry_policy(settings.agent),
                result_type=str,
            )
        except ActivityError as exc:
            raise _model_error(exc) from exc
        self.owner.stored(conversation, len(request.messages))
        out = codec.loads(text, codec.ModelOutput)
        message = out.message
        if message.tool_calls:
            # As the node's own innermost handler does: the tools this request showed.
            message = attrs.evolve(message, visible_tools=visible_names(request))
        return ModelResponse(message, out.usage)


@attrs.define(eq=False)
class ToolActivities:
    """The innermost tool interceptor of the workflow: each tool call is an activity,
    with the call's timeout (``tool.timeout`` or the node's) as its own."""

    owner: ReactAgentWorkflow

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolCallResponse:
        settings = self.owner.settings
        node = settings.agent.tool_node
        assert node is not None
        call = request.call
        timeout = request.tool.timeout or node.tool_execution_timeout
        state, conversation, count = None, None, 0
        if request.tool.wants_context:
            messages = request.state.get(MESSAGES) or ()
            conversation, count = self.owner.conversation(messages), len(messages)
            state = codec.dump_state(without_messages(request.state, conversation))
        decided: Resume | None = request.config.context.get(TOOL_DECISIONS, {}).get(call.id)
        payload = codec.ToolInput(
            settings.name,
            call,
            timeout,
            self.owner.thread_id,
            state,
            dict(request.config.metadata),
            conversation,
            None if decided is None else codec.dump_resume(decided),
        )
        handle = workflow.start_activity(
            TOOL_ACTIVITY,
            bounded(codec.dumps(payload), "a tool call's input"),
            start_to_close_timeout=timedelta(seconds=timeout + settings.timeout_grace),
            heartbeat_timeout=timedelta(seconds=settings.heartbeat_timeout),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=0.5),
                maximum_attempts=settings.tool_attempts,
            ),
            # A cancelled call resolves once its activity has really stopped (not as soon
            # as the cancel is asked): the ToolCallCancelled event and the model's answer
            # then say the tool is no longer running.
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            result_type=str,
        )
        self.owner.inflight[call.id] = handle
        try:
            text = await handle
        except ActivityError as exc:
            if isinstance(exc.cause, CancelledError) or self.owner.cancel_asked(call.id):
                # The job carries the reason (set by cancel_tool): the node answers with
                # the usual "cancelled by the caller" error. (A cancelled call whose worker
                # was lost ends with a timeout instead: it was cancelled all the same.)
                return ToolCallResponse("", is_error=True)
            cause = exc.cause
            message = cause.message if isinstance(cause, ApplicationError) else str(exc)
            raise ToolExecutionError(message, call=call) from exc
        finally:
            self.owner.inflight.pop(call.id, None)
        self.owner.stored(conversation, count)
        out = codec.loads(text, codec.ToolOutput)
        if out.timed_out:
            text = f"Error: Tool execution timed out after {timeout:g}s (tool '{call.name}')"
            return ToolCallResponse(text, is_error=True)
        update = {} if out.update is None else dict(codec.load_state(out.update).state.data)
        interrupt = None if out.interrupt is None else Interrupt(out.interrupt)
        return ToolCallResponse(
            out.text, out.is_error, update, out.parts, out.data, interrupt=interrupt
        )


def bounded(text: str, what: str) -> str:
    """``text``, if it fits in a Temporal payload; else a clear error (the server would
    fail the workflow task over and over)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > PAYLOAD_LIMIT:
        raise ValueError(
            f"{what} is {size / 2**20:.1f} MB, over Temporal's 2 MB payload limit: give the "
            "TemporalAgent a store (TemporalAgent(agent, store=FileStore(...))) so that "
            "conversations and large results go by reference"
        )
    return text


def without_messages(state: OverAllState, conversation: codec.Conversation | None) -> OverAllState:
    """``state`` as sent beside ``conversation``: without its messages when they go by
    reference."""
    if conversation is None:
        return state
    data = {k: v for k, v in state.data.items() if k != MESSAGES}
    return OverAllState(data, state.key_strategies)
