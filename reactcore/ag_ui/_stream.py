"""One run's events as AG-UI events, written with the ``ag_ui`` package's own encoder.

``AgUiStream`` is the ``emit`` of ``reactcore.serving.relay``: each reactcore event in,
the AG-UI events it means out (the mapping table is in ``docs/ag-ui.md``):

- ``ModelCallStarted`` / ``ModelCallFinished``: ``STEP_STARTED`` / ``STEP_FINISHED``
  (step ``model``, or the call's purpose: ``summary``); the calls of one tool batch are
  wrapped in step ``tools``.
- ``ModelDelta``: reasoning → ``REASONING_START`` / ``REASONING_MESSAGE_*`` /
  ``REASONING_END``; text → ``TEXT_MESSAGE_START`` / ``_CONTENT`` / ``_END``; tool-call
  pieces → ``TOOL_CALL_START`` (once the call's id and name are known) / ``_ARGS`` /
  ``_END``, all of one model call under one message id (``parentMessageId``). What a
  model did not stream (a model answering whole) is sent at ``ModelCallFinished``.
- ``ModelCallRetried``: what the failed attempt streamed is closed and taken back by a
  ``MESSAGES_SNAPSHOT`` of the conversation as it stands (without the failed attempt),
  so no half message stays in the client's list; the next attempt streams anew.
- ``ToolCallStarted``: ``CUSTOM`` ``reactcore.tool_call_started`` (``{"toolCallId",
  "name"}``): the call now runs, and ``POST runs/{runId}/calls/{id}/cancel`` can stop it.
- ``ToolCallFinished`` / ``ToolCallCancelled`` / ``ToolCallTimedOut``:
  ``TOOL_CALL_RESULT`` with the text the model gets (a cancelled call's: the
  cancellation text); answers made without running the call (a rejection) are sent
  when the batch ends.
- ``StateUpdated``: ``STATE_DELTA`` of the shared state (``reactcore.ag_ui._state``),
  after a ``STATE_SNAPSHOT`` at the run's first event.
- ``RunInterrupted``: ``CUSTOM`` ``reactcore.approval`` (the pending calls); the stream
  stays open for ``Limits.pause_timeout`` for a decision.
- ``SubagentEvent``: ``SUBAGENT_STARTED``, the subagent's events mapped as these, each
  with its ``subagentRunId``, then ``SUBAGENT_FINISHED`` or ``SUBAGENT_ERROR``.
- The end (``finish``): ``RUN_FINISHED`` (outcome ``success``, with
  ``pendingToolCallIds`` when the run stopped at client tools; ``cancelled``; or
  ``interrupt`` when a pause was not answered in time; ``usage``: the tokens of this
  stream's model calls, when the model reported them), or ``RUN_ERROR``.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._events import (
    TERMINAL,
    Event,
    ModelCallFinished,
    ModelCallRetried,
    ModelCallStarted,
    ModelDelta,
    RunFailed,
    RunFinished,
    RunInterrupted,
    StateUpdated,
    SubagentEvent,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
)
from .._exceptions import RequestRefused, RunCancelled
from .._logging import get_logger
from .._messages import AssistantMessage, ToolCall, ToolResponse, ToolResponseMessage
from .._state import MESSAGES
from ._frontend import pending_client_calls
from ._messages import to_ag_ui
from ._state import SharedState, patch

if TYPE_CHECKING:
    from ag_ui import core

    from .._tools import Tool
    from ..models.base import ToolCallDelta, Usage

APPROVAL = "reactcore.approval"
TOOL_CALL_STARTED = "reactcore.tool_call_started"
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"enum": ["approve", "edit", "reject"]},
        "arguments": {"type": ["object", "string"]},
        "reason": {"type": "string"},
    },
    "required": ["type"],
}
"""The ``responseSchema`` of an approval interrupt: a resume entry's ``payload``."""

_log = get_logger(component="ag_ui")


def _new_id() -> str:
    return uuid.uuid4().hex


@attrs.define
class _Call:
    """A tool call being streamed: what is known of it, and its arguments not yet sent."""

    id: str = ""
    name: str = ""
    started: bool = False
    ended: bool = False
    held: list[str] = attrs.field(factory=list)


def calls_json(calls: Sequence[ToolCall]) -> list[dict[str, str]]:
    return [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]


def interrupts(calls: Sequence[ToolCall]) -> list[core.Interrupt]:
    """Pending approvals as AG-UI interrupts, answered by ``RunAgentInput.resume``."""
    from ag_ui import core

    return [
        core.Interrupt(
            id=c.id,
            reason="tool_approval",
            message=f"Approve the call of {c.name} with {c.arguments}?",
            tool_call_id=c.id,
            response_schema=DECISION_SCHEMA,
        )
        for c in calls
    ]


@attrs.define(eq=False)
class AgUiStream:
    """Writes one run's AG-UI events (see the module docstring)."""

    write: Callable[[bytes], Awaitable[None]]
    thread_id: str
    run_id: str
    shared: SharedState
    client_tools: Mapping[str, Tool]
    pause_timeout: float
    state: Callable[[], Mapping[str, Any] | None] = attrs.field(default=lambda: None)
    scoped_thread: str | None = None
    batch: set[str] = attrs.field(factory=set)
    subagent: str | None = None
    last: Event | None = None
    _encoder: Any = attrs.field(init=False)
    _view: dict[str, Any] | None = None
    _steps: list[str] = attrs.field(factory=list)
    _purpose: str = "agent"
    _message: str = attrs.field(factory=_new_id)
    _text: bool = False
    _texted: bool = False
    _reasoning: str | None = None
    _reasoned: bool = False
    _calls: dict[int | None, _Call] = attrs.field(factory=dict)
    _answered: set[str] = attrs.field(factory=set)
    _usage: Usage | None = None
    _children: dict[str, tuple[str, AgUiStream]] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        from ag_ui.encoder import EventEncoder

        self._encoder = EventEncoder()

    async def send(self, event: core.BaseEvent) -> None:
        if self.subagent is not None and "subagent_run_id" in type(event).model_fields:
            event = event.model_copy(update={"subagent_run_id": self.subagent})
        await self.write(self._encoder.encode(event).encode())

    # --- the run's start ----------------------------------------------------------------

    async def run_started(self) -> None:
        from ag_ui import core

        await self.send(core.RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id))

    async def messages_snapshot(self, messages: Sequence[Any]) -> None:
        from ag_ui import core

        await self.send(core.MessagesSnapshotEvent(messages=to_ag_ui(messages)))

    # --- events in ----------------------------------------------------------------------

    async def __call__(self, event: Event) -> None:
        """``relay``'s ``emit``: one reactcore event as AG-UI events."""
        from ag_ui import core

        self.last = event
        if self._view is None and self.shared.shared:
            self._view = self.shared.view(self.state())
            await self.send(core.StateSnapshotEvent(snapshot=self._view))
        if isinstance(event, SubagentEvent):
            await self._subagent_event(event)
        elif isinstance(event, ModelDelta):
            if self._purpose == "agent":  # a hook's call (a summary) is no message
                await self._delta(event)
        elif isinstance(event, ModelCallStarted):
            await self._answers(self.state())
            self._purpose = event.purpose
            await self._open_step("model" if event.purpose == "agent" else event.purpose)
            self._message, self._texted, self._reasoned = _new_id(), False, False
            self._calls = {}
        elif isinstance(event, ModelCallFinished) and event.purpose == "agent":
            self._count(event.usage)
            await self._model_finished(event.message)
        elif isinstance(event, ModelCallFinished):  # a hook's call (a summary): no message
            self._count(event.usage)
            await self._close_streams()
            await self._close_steps()
        elif isinstance(event, ModelCallRetried):
            await self._retried()
        elif isinstance(event, ToolCallStarted):
            await self._open_step("tools")
            started = {"toolCallId": event.call_id, "name": event.name}
            await self.send(core.CustomEvent(name=TOOL_CALL_STARTED, value=started))
        elif isinstance(event, ToolCallFinished | ToolCallCancelled | ToolCallTimedOut):
            await self._end_subagents(event.call_id)
            await self._open_step("tools")
            if event.response is not None:
                await self._result(event.response)
        elif isinstance(event, StateUpdated):
            await self._state_updated(event)
        elif isinstance(event, RunInterrupted):
            await self._close_steps()
            value: dict[str, Any] = {
                "runId": self.run_id,
                "calls": calls_json(event.calls),
                "decisions": f"runs/{self.run_id}/decisions",
                "timeoutSeconds": self.pause_timeout,
            }
            await self.send(core.CustomEvent(name=APPROVAL, value=value))

    async def _subagent_event(self, event: SubagentEvent) -> None:
        """A subagent's event: ``SUBAGENT_STARTED`` at its first, then the event as this
        stream would send it, attributed (``subagentRunId``); its end as
        ``SUBAGENT_FINISHED`` (``suspended`` when it paused) or ``SUBAGENT_ERROR``."""
        from ag_ui import core

        here = event.path[-1]
        found = self._children.get(here.run_id)
        if found is None:
            parent = event.path[-2].run_id if len(event.path) > 1 else None
            await self.send(
                core.SubagentStartedEvent(
                    subagent_run_id=here.run_id,
                    name=here.agent,
                    parent_subagent_run_id=parent,
                    parent_tool_call_id=here.call_id,
                )
            )
            child = AgUiStream(
                self.write,
                self.thread_id,
                self.run_id,
                SharedState(),
                {},
                self.pause_timeout,
                subagent=here.run_id,
            )
            found = self._children[here.run_id] = (here.call_id, child)
        child = found[1]
        if isinstance(event.event, TERMINAL):
            del self._children[here.run_id]
            child.last = event.event
            await child.end_subagent()
        else:
            await child(event.event)

    async def _end_subagents(self, call_id: str | None = None) -> None:
        """End the subagents still open that ran in call ``call_id`` (all: ``None``)."""
        for run_id, (call, child) in list(self._children.items()):
            if call_id is None or call == call_id:
                del self._children[run_id]
                await child.end_subagent()

    async def end_subagent(self) -> None:
        """This stream's subagent ended (see ``_subagent_event``)."""
        from ag_ui import core

        await self._end_subagents()
        await self._close_streams()
        await self._close_steps()
        last, run_id = self.last, self.subagent or ""
        if isinstance(last, RunInterrupted):
            ids = [c.id for c in last.calls]
            outcome: Any = core.SubagentFinishedSuspendedOutcome(interrupt_ids=ids)
            await self.send(core.SubagentFinishedEvent(subagent_run_id=run_id, outcome=outcome))
        elif isinstance(last, RunFailed):
            failure = _failure(last.error, None, self.thread_id)
            await self.send(
                core.SubagentErrorEvent(
                    subagent_run_id=run_id, message=failure.message, code=failure.code
                )
            )
        else:  # finished, or its call ended without its last event
            outcome = core.SubagentFinishedSuccessOutcome()
            await self.send(core.SubagentFinishedEvent(subagent_run_id=run_id, outcome=outcome))

    def _count(self, usage: Usage | None) -> None:
        if usage is not None:
            self._usage = usage if self._usage is None else self._usage + usage

    async def _open_step(self, name: str) -> None:
        from ag_ui import core

        if self._steps and self._steps[-1] == name:
            return
        await self._close_steps()
        self._steps.append(name)
        await self.send(core.StepStartedEvent(step_name=name))

    async def _close_steps(self) -> None:
        from ag_ui import core

        while self._steps:
            await self.send(core.StepFinishedEvent(step_name=self._steps.pop()))

    async def _delta(self, delta: ModelDelta) -> None:
        from ag_ui import core

        if delta.reasoning:
            if self._reasoning is None:
                self._reasoning = _new_id()
                await self.send(core.ReasoningStartEvent(message_id=self._reasoning))
                await self.send(core.ReasoningMessageStartEvent(message_id=self._reasoning))
            self._reasoned = True
            await self.send(
                core.ReasoningMessageContentEvent(message_id=self._reasoning, delta=delta.reasoning)
            )
        if delta.text:
            await self._close_reasoning()
            await self._text_content(delta.text)
        if delta.tool_call is not None:
            await self._close_reasoning()
            await self._tool_delta(delta.tool_call)

    async def _text_content(self, text: str) -> None:
        from ag_ui import core

        if not self._text:
            self._text = self._texted = True
            await self.send(core.TextMessageStartEvent(message_id=self._message, role="assistant"))
        await self.send(core.TextMessageContentEvent(message_id=self._message, delta=text))

    async def _tool_delta(self, delta: ToolCallDelta) -> None:
        from ag_ui import core

        call = self._calls.setdefault(delta.index, _Call())
        call.id = call.id or delta.id or ""
        call.name = call.name or delta.name or ""
        if delta.arguments:
            call.held.append(delta.arguments)
        if not call.started and call.id and call.name:
            call.started = True
            await self.send(
                core.ToolCallStartEvent(
                    tool_call_id=call.id, tool_call_name=call.name, parent_message_id=self._message
                )
            )
        if call.started and call.held:
            pieces, call.held = "".join(call.held), []
            await self.send(core.ToolCallArgsEvent(tool_call_id=call.id, delta=pieces))

    async def _close_reasoning(self) -> None:
        from ag_ui import core

        if self._reasoning is not None:
            await self.send(core.ReasoningMessageEndEvent(message_id=self._reasoning))
            await self.send(core.ReasoningEndEvent(message_id=self._reasoning))
            self._reasoning = None

    async def _close_streams(self) -> None:
        """End what is open: the reasoning, the text, the tool calls."""
        from ag_ui import core

        await self._close_reasoning()
        if self._text:
            self._text = False
            await self.send(core.TextMessageEndEvent(message_id=self._message))
        for call in self._calls.values():
            if call.started and not call.ended:
                call.ended = True
                await self.send(core.ToolCallEndEvent(tool_call_id=call.id))

    async def _model_finished(self, message: AssistantMessage) -> None:
        from ag_ui import core

        if message.reasoning and not self._reasoned:
            await self._delta(ModelDelta(reasoning=message.reasoning))
        if message.text and not self._texted:
            await self._text_content(message.text)
        await self._close_streams()
        streamed = {c.id for c in self._calls.values() if c.started}
        for call in message.tool_calls:
            if call.id in streamed:
                continue
            await self.send(
                core.ToolCallStartEvent(
                    tool_call_id=call.id, tool_call_name=call.name, parent_message_id=self._message
                )
            )
            await self.send(core.ToolCallArgsEvent(tool_call_id=call.id, delta=call.arguments))
            await self.send(core.ToolCallEndEvent(tool_call_id=call.id))
        self.batch = {c.id for c in message.tool_calls}
        await self._close_steps()

    async def _retried(self) -> None:
        """Take back what the failed attempt streamed (see the module docstring)."""
        streamed = self._texted or self._reasoned or any(c.started for c in self._calls.values())
        await self._close_streams()
        self._message, self._texted, self._reasoned, self._calls = _new_id(), False, False, {}
        if streamed:
            await self.messages_snapshot(list((self.state() or {}).get(MESSAGES) or ()))

    async def _result(self, response: ToolResponse) -> None:
        from ag_ui import core

        if response.id in self._answered:
            return
        self._answered.add(response.id)
        await self.send(
            core.ToolCallResultEvent(
                message_id=_new_id(),
                tool_call_id=response.id,
                content=response.response_data,
                role="tool",
            )
        )

    async def _answers(self, state: Mapping[str, Any] | None) -> None:
        """Send the answers of the batch's calls made without running them (a rejection
        has no end event): found in the state's answer to the batch."""
        for message in reversed((state or {}).get(MESSAGES) or ()):
            if isinstance(message, ToolResponseMessage) and any(
                r.id in self.batch for r in message.responses
            ):
                for response in message.responses:
                    if response.id in self.batch and response.id not in self._answered:
                        await self._open_step("tools")
                        await self._result(response)
                return

    async def _state_updated(self, event: StateUpdated) -> None:
        from ag_ui import core

        state = self.state()
        if event.node == "tools":
            await self._answers(state)
            await self._close_steps()
        if self._view is not None and self.shared.touches(event.keys):
            view = self.shared.view(state)
            ops = patch(self._view, view)
            self._view = view
            if ops:
                await self.send(core.StateDeltaEvent.model_validate({"delta": ops}))

    # --- the end ------------------------------------------------------------------------

    async def finish(self) -> None:
        """The run's last AG-UI event, from the last reactcore event relayed."""
        from ag_ui import core

        await self._end_subagents()
        await self._close_streams()
        await self._close_steps()
        last = self.last
        if isinstance(last, RunFinished):
            pending = pending_client_calls(last.result.state, self.client_tools)
            outcome = core.RunFinishedSuccessOutcome(pending_tool_call_ids=pending or None)
            await self._finished(outcome)
        elif isinstance(last, RunInterrupted):
            await self._finished(
                core.RunFinishedInterruptOutcome(interrupts=interrupts(last.calls))
            )
        elif isinstance(last, RunFailed) and isinstance(last.error, RunCancelled):
            await self._finished(core.RunFinishedCancelledOutcome())
        elif isinstance(last, RunFailed):
            await self.error(_failure(last.error, self.scoped_thread, self.thread_id))
        else:
            await self.error(RequestRefused(500, "internal", "the run ended without an outcome"))

    async def _finished(self, outcome: Any) -> None:
        from ag_ui import core

        used = self._usage
        usage = None
        if used is not None and used.total_tokens:
            usage = [
                core.TokenUsage(
                    input_tokens=used.prompt_tokens,
                    output_tokens=used.completion_tokens,
                    total_tokens=used.total_tokens,
                    reasoning_tokens=used.reasoning_tokens or None,
                    cached_input_tokens=used.cached_tokens or None,
                )
            ]
        await self.send(
            core.RunFinishedEvent(
                thread_id=self.thread_id, run_id=self.run_id, outcome=outcome, usage=usage
            )
        )

    async def error(self, refused: RequestRefused) -> None:
        """``RUN_ERROR`` with ``refused``'s code and message (nothing else)."""
        from ag_ui import core

        await self._close_streams()
        await self.send(core.RunErrorEvent(message=refused.message, code=refused.code))


def _failure(error: BaseException, scoped: str | None, thread_id: str) -> RequestRefused:
    """What a client is told of a failed run: a refusal as itself, why its input did not
    fit (a ``ValueError`` of the run's start: decisions for no pending call …; the
    thread named as the client names it), else the error's kind only (the details are
    logged here, never sent)."""
    if isinstance(error, RequestRefused):
        return error
    if type(error) is ValueError:
        message = str(error)
        if scoped is not None:
            message = message.replace(scoped, thread_id)
        return RequestRefused(422, "bad_request", message)
    _log.warning("ag_ui_run_failed", error=type(error).__name__)
    _log.debug("ag_ui_run_failed_detail", error=repr(error))
    return RequestRefused(500, "run_failed", f"the run failed ({type(error).__name__})")
