"""One batch of the tool node: the calls answering one assistant message, what is done so
far, and the node's update — with the finished calls' state updates kept aside while the
batch is unfinished (cut short, or paused), applied together in call order at its end.

A call may pause the run instead of ending (``ToolCallResponse.interrupt``: a subagent
waiting for approval): it gets no answer yet; the node's update then names the calls
that paused and what each waits for (``PAUSED``), and the loop pauses the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from . import _validate as valid
from ._approval import Interrupt
from ._messages import AssistantMessage, ToolCall, ToolResponse, ToolResponseMessage
from ._result import TOKEN_USAGE
from ._scheduler import Job, Status
from ._serde import converter
from ._state import MESSAGES, OverAllState, Remove
from ._tools import USAGE_ADDED, Tool
from ._tracing import ToolTrace, Tracer, current
from .models.base import Usage

if TYPE_CHECKING:
    from ._tool_node import AgentToolNode

RETURN_DIRECT = "return_direct"
PENDING_UPDATES = "_pending_updates_"
PAUSED = "_paused_calls_"
"""In the node's update (never merged into the state): each call that paused the run →
its ``Interrupt`` (the loop lists their calls scoped under it: ``c1/a1``)."""


def pending_calls(state: Mapping[str, Any]) -> tuple[AssistantMessage, ToolResponseMessage | None]:
    """The assistant message whose calls the node must answer, and the partial answer so far.

    ``ValueError`` names what was found when the last message is neither.
    """
    messages: Sequence[Any] = state.get(MESSAGES) or ()
    last = messages[-1] if messages else None
    if isinstance(last, AssistantMessage) and last.tool_calls:
        return last, None
    if isinstance(last, ToolResponseMessage) and len(messages) >= 2:
        before = messages[-2]
        ids = {c.id for c in getattr(before, "tool_calls", ())}
        if ids and all(r.id in ids for r in last.responses):
            return before, last
    found = "no messages" if last is None else f"{valid.a_or_an(type(last).__name__)} last"
    raise ValueError(
        "AgentToolNode needs the last message to be an AssistantMessage with tool calls, or "
        f"a ToolResponseMessage answering some of them; found {found}"
    )


def has_pending_updates(message: Any) -> bool:
    """Whether ``message`` is a partial answer whose calls' state updates wait to be applied."""
    return isinstance(message, ToolResponseMessage) and PENDING_UPDATES in message.metadata


def paused_by(job: Job) -> Interrupt | None:
    """What an ended call waits for, if it paused the run instead of answering."""
    if job.status is not Status.DONE:
        return None
    found: Interrupt | None = getattr(job.result, "interrupt", None)
    return found


def _usage_added(state: OverAllState, updates: Iterable[Mapping[str, Any]]) -> Usage | None:
    """The run's usage with what the calls added (``ToolContext.add_usage``), if any did."""
    added = [u[USAGE_ADDED] for u in updates if USAGE_ADDED in u]
    if not added:
        return None
    total: Usage = state.get(TOKEN_USAGE) or Usage()
    for usage in added:
        total = total + converter.structure(usage, Usage)
    return total


class ToolCallObserver(Protocol):
    """Told of each call of a batch as it starts and ends (the run handle is one).

    ``call_started`` runs before the call's body starts, and ``job.cancel()`` from there on
    stops the call (made while ``call_started`` still waits, the body never runs) until the
    call has ended. ``call_ended`` gets the call's response and ``partial``, which builds
    the node's update as it would be if the batch stopped now (see ``partial_update``); a
    call that paused the run (``paused_by(job)``) has no answer in it.
    """

    async def call_started(self, call: ToolCall, job: Job) -> None: ...

    async def call_ended(
        self,
        call: ToolCall,
        response: ToolResponse,
        job: Job,
        partial: Callable[[], dict[str, Any]],
    ) -> None: ...


def trace_exception(error: Exception) -> None:
    """Tell the current tracer a tool raised ``error``."""
    tracer = current.get()
    if tracer is not None:
        tracer.exception(error)


@attrs.define(eq=False)
class Batch:
    """The calls answering one assistant message: what is done so far, and the update.

    It is also the scheduler's job observer, so each response is recorded (and logged,
    and reported to the run's observer) the moment its call ends.
    """

    node: AgentToolNode
    state: OverAllState
    assistant: AssistantMessage
    previous: ToolResponseMessage | None
    return_direct: bool
    observer: ToolCallObserver | None
    tools: Mapping[str, Tool | None] = attrs.field(factory=dict)
    done: dict[str, ToolResponse] = attrs.field(factory=dict)
    updates: dict[str, Mapping[str, Any]] = attrs.field(factory=dict)
    paused: dict[str, Interrupt] = attrs.field(factory=dict)
    tracer: Tracer | None = None
    traces: dict[str, ToolTrace] = attrs.field(factory=dict)

    def record(self, job: Job) -> ToolResponse:
        call: ToolCall = job.key.call
        response = self.node.response(job)
        interrupt = paused_by(job)
        if interrupt is not None:
            self.paused[call.id] = interrupt  # no answer yet: it runs again on resume
            return response
        self.done[call.id] = response
        if job.status is Status.DONE and not response.is_error and job.result.update:
            self.updates[call.id] = job.result.update
        return response

    def _message(self, stash: bool) -> ToolResponseMessage:
        calls = self.assistant.tool_calls
        responses = [self.done[c.id] for c in calls if c.id in self.done]
        metadata: dict[str, Any] = {"finish_reason": RETURN_DIRECT} if self.return_direct else {}
        if stash and self.updates:
            metadata[PENDING_UPDATES] = {i: dict(u) for i, u in self.updates.items()}
        return ToolResponseMessage(responses, metadata)

    def _replacing(self, message: ToolResponseMessage) -> list[Any]:
        return [Remove(self.previous), message] if self.previous is not None else [message]

    def partial_update(self) -> dict[str, Any]:
        """The update if the batch stopped now: the answers so far, with the finished calls'
        state updates kept aside in the message (``_pending_updates_``), not applied.

        When the batch goes on later (resumed from a checkpoint), all the calls' updates
        are then applied together in call order, exactly as if it had never stopped.
        """
        return {MESSAGES: self._replacing(self._message(stash=True))}

    def paused_update(self) -> dict[str, Any]:
        """The update of a batch some calls paused: the answers so far, as a partial
        update (none if no call has one yet), and under ``PAUSED`` each paused call's id →
        its ``Interrupt``, in call order."""
        update = self.partial_update() if self.done else {}
        calls = self.assistant.tool_calls
        update[PAUSED] = {c.id: self.paused[c.id] for c in calls if c.id in self.paused}
        return update

    def abandon_traces(self) -> None:
        """End the spans of calls that never ended (the batch was cancelled or failed)."""
        for trace in self.traces.values():
            trace.ended(None, None)
        self.traces.clear()

    def update(self) -> dict[str, Any]:
        """The node's update: the answers, and every call's state updates in call order
        (with the model usage calls added to the run's)."""
        calls = self.assistant.tool_calls
        ordered = [self.updates[c.id] for c in calls if c.id in self.updates]
        usage = _usage_added(self.state, ordered)
        if usage is not None:
            ordered = [{k: v for k, v in u.items() if k != USAGE_ADDED} for u in ordered]
        out = self.state.combine_updates(ordered)
        if usage is not None:
            out[TOKEN_USAGE] = usage
        extra = out.pop(MESSAGES, None)
        messages = self._replacing(self._message(stash=False))
        if extra is not None:
            messages.extend(extra if isinstance(extra, list | tuple) else [extra])
        out[MESSAGES] = messages
        return out

    async def job_started(self, job: Job) -> None:
        call: ToolCall = job.key.call
        if self.node.enable_acting_log:
            log = self.node.log
            log.info("tool_call_started", call_id=call.id, tool=call.name)
            log.debug("tool_call_arguments", call_id=call.id, arguments=call.arguments)
        if self.tracer is not None:
            self.traces[call.id] = self.tracer.tool_call(self.node.agent_name, call, job.key.tool)
        if self.observer is not None:
            await self.observer.call_started(call, job)

    async def job_ended(self, job: Job) -> None:
        response = self.record(job)
        self.node.log_end(job, response)
        trace = self.traces.pop(job.key.call.id, None)
        if trace is not None:
            trace.ended(job, response)
        if self.observer is not None:
            await self.observer.call_ended(job.key.call, response, job, self.partial_update)
