"""``UIMessageStream``: a run's events as the AI SDK's UI message stream chunks (the JSON
objects of ``uiMessageChunkSchema``, ``ai`` 7), one assistant message per request.

- A step (``start-step`` … ``finish-step``) is one model call of the agent and the tool
  batch it asked for, as the AI SDK's own ``streamText`` makes them: a client's
  ``lastAssistantMessageIsCompleteWithApprovalResponses`` looks for a step's approvals in
  that step.
- ``ModelDelta.text`` → ``text-start``/``text-delta``/``text-end``; ``ModelDelta.reasoning``
  → ``reasoning-*``; tool call pieces → ``tool-input-start``/``tool-input-delta``; the
  finished answer's calls → ``tool-input-available`` (the arguments parsed; the raw text
  when they are not JSON).
- ``ToolCallFinished`` → ``tool-output-available`` (the tool's ``data`` when it gave
  some, else its text), or ``tool-output-error`` when it answered with an error;
  ``ToolCallTimedOut`` / ``ToolCallCancelled`` → ``tool-output-error`` with the text the
  model gets.
- ``ModelCallRetried`` → ``reset-step``: the client drops what the failed attempt
  streamed, the next attempt streams into the same step.
- ``RunInterrupted`` → ``tool-approval-request`` per pending call (``approvalId`` is the
  call id); a call the client then rejects ends ``tool-output-denied``.
- ``RunFinished`` → ``finish`` with the model's finish reason; ``RunFailed`` → ``abort``
  when the run was cancelled, else ``error`` with a short message (its kind, never the
  text of an exception, which may hold a URL or a key).
- Model calls a hook makes for itself (``purpose`` other than ``"agent"``: a summary)
  and subagents' events are not shown.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from .._events import (
    Event,
    ModelCallFinished,
    ModelCallRetried,
    ModelCallStarted,
    ModelDelta,
    RunFailed,
    RunFinished,
    RunInterrupted,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
)
from .._exceptions import RunCancelled
from .._messages import ToolCall, ToolResponse
from ..models.base import ToolCallDelta

Chunk = dict[str, Any]

_FINISH_REASONS = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "content_filter": "content-filter",
    "tool_calls": "tool-calls",
    "tool_use": "tool-calls",
    "return_direct": "tool-calls",
}


def finish_reason(reason: str | None) -> str:
    """A provider's finish reason as one of the AI SDK's (``"other"`` when unknown)."""
    return _FINISH_REASONS.get(reason or "stop", "other")


def failure_text(error: BaseException) -> str:
    """What a client is told of a failed run: its kind, no detail (a message may hold a
    URL, a key, a stack)."""
    return f"the run failed ({type(error).__name__}); the service's log has the details"


def _input(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _output(response: ToolResponse) -> Any:
    return response.data if response.data is not None else response.response_data


@attrs.define
class _Streaming:
    """A tool call whose input is being streamed: its id once known, its name."""

    call_id: str | None = None
    name: str | None = None
    pending: str = ""
    started: bool = False


@attrs.define(eq=False)
class UIMessageStream:
    """Turns one request's events into UI message chunks (see the module docstring).

    ``awaiting`` holds the calls waiting for an approval (the ones a client answered in
    its request, or those of a pause of this stream): the ones that do not run (rejected)
    end ``tool-output-denied`` once the run goes past them. ``known`` holds the calls the
    client has parts for: those of its request's last message, and those this stream
    announced (an approval request or an output for any other call would name a part the
    client does not have).
    """

    awaiting: set[str] = attrs.field(factory=set)
    known: set[str] = attrs.field(factory=set)
    paused: bool = attrs.field(default=False, init=False)
    _step: bool = attrs.field(default=False, init=False)
    _text: str | None = attrs.field(default=None, init=False)
    _reasoning: str | None = attrs.field(default=None, init=False)
    _parts: int = attrs.field(default=0, init=False)
    _calls: dict[int, _Streaming] = attrs.field(factory=dict, init=False)
    _last_index: int | None = attrs.field(default=None, init=False)
    _hidden: bool = attrs.field(default=False, init=False)

    def start(self, message_id: str, run_id: str, thread_id: str | None) -> list[Chunk]:
        """The first chunk: the message id, and in the metadata the run id to steer by and
        the chat id (``thread_id``, as the client sent it)."""
        metadata = {"runId": run_id, "threadId": thread_id}
        return [{"type": "start", "messageId": message_id, "messageMetadata": metadata}]

    def chunks(self, event: Event) -> list[Chunk]:
        """The chunks for ``event`` (none for events the stream does not show)."""
        self.paused = False
        if isinstance(event, ModelCallStarted):
            return self._model_started(event)
        if isinstance(event, ModelCallFinished):
            return self._model_finished(event)
        if self._hidden and isinstance(event, ModelDelta | ModelCallRetried):
            return []
        if isinstance(event, ModelDelta):
            return self._delta(event)
        if isinstance(event, ModelCallRetried):
            return self._retried()
        if isinstance(event, ToolCallStarted):
            self.awaiting.discard(event.call_id)
            return []
        if isinstance(event, ToolCallFinished | ToolCallTimedOut | ToolCallCancelled):
            return self._tool_ended(event)
        if isinstance(event, RunInterrupted):
            return self._interrupted(event)
        if isinstance(event, RunFinished):
            reason = finish_reason(event.result.finish_reason)
            return [*self._denied(), *self.end_step(), {"type": "finish", "finishReason": reason}]
        if isinstance(event, RunFailed):
            return self._failed(event.error)
        return []

    def end_step(self) -> list[Chunk]:
        """Close what is open: the text or reasoning part, the step."""
        out = self._close_parts()
        if self._step:
            out.append({"type": "finish-step"})
            self._step = False
        return out

    def paused_end(self) -> list[Chunk]:
        """The end of a stream left at a pause: the client answers the approvals in its
        next request (``finishReason`` ``"tool-calls"``, as the AI SDK ends such a step)."""
        return [*self.end_step(), {"type": "finish", "finishReason": "tool-calls"}]

    def _id(self, prefix: str) -> str:
        self._parts += 1
        return f"{prefix}-{self._parts}"

    def _close_parts(self) -> list[Chunk]:
        out: list[Chunk] = []
        if self._text is not None:
            out.append({"type": "text-end", "id": self._text})
            self._text = None
        if self._reasoning is not None:
            out.append({"type": "reasoning-end", "id": self._reasoning})
            self._reasoning = None
        return out

    def _denied(self) -> list[Chunk]:
        out = [{"type": "tool-output-denied", "toolCallId": c} for c in sorted(self.awaiting)]
        self.awaiting.clear()
        return out

    def _model_started(self, event: ModelCallStarted) -> list[Chunk]:
        self._hidden = event.purpose != "agent"
        if self._hidden:
            return []
        out = [*self._denied(), *self.end_step(), {"type": "start-step"}]
        self._step = True
        self._calls.clear()
        self._last_index = None
        return out

    def _retried(self) -> list[Chunk]:
        self._text = self._reasoning = None
        self.known -= {s.call_id for s in self._calls.values() if s.call_id is not None}
        self._calls.clear()
        self._last_index = None
        return [{"type": "reset-step"}]

    def _delta(self, event: ModelDelta) -> list[Chunk]:
        out: list[Chunk] = []
        if event.reasoning:
            if self._text is not None:
                out.append({"type": "text-end", "id": self._text})
                self._text = None
            if self._reasoning is None:
                self._reasoning = self._id("reasoning")
                out.append({"type": "reasoning-start", "id": self._reasoning})
            out.append({"type": "reasoning-delta", "id": self._reasoning, "delta": event.reasoning})
        if event.text:
            if self._reasoning is not None:
                out.append({"type": "reasoning-end", "id": self._reasoning})
                self._reasoning = None
            if self._text is None:
                self._text = self._id("text")
                out.append({"type": "text-start", "id": self._text})
            out.append({"type": "text-delta", "id": self._text, "delta": event.text})
        if event.tool_call is not None:
            out += self._tool_delta(event.tool_call)
        return out

    def _tool_delta(self, delta: ToolCallDelta) -> list[Chunk]:
        index = delta.index if delta.index is not None else self._last_index
        if index is None:
            index = 0
        self._last_index = index
        streaming = self._calls.setdefault(index, _Streaming())
        if delta.id and streaming.call_id is None and delta.id not in self.known:
            streaming.call_id = delta.id
        if delta.name:
            streaming.name = (streaming.name or "") + delta.name
        streaming.pending += delta.arguments
        out = self._close_parts()
        if not streaming.started:
            if streaming.call_id is None or not streaming.name:
                return out
            streaming.started = True
            self.known.add(streaming.call_id)
            out.append(
                {
                    "type": "tool-input-start",
                    "toolCallId": streaming.call_id,
                    "toolName": streaming.name,
                }
            )
        if streaming.pending:
            piece, streaming.pending = streaming.pending, ""
            out.append(
                {
                    "type": "tool-input-delta",
                    "toolCallId": streaming.call_id,
                    "inputTextDelta": piece,
                }
            )
        return out

    def _model_finished(self, event: ModelCallFinished) -> list[Chunk]:
        if event.purpose != "agent":
            self._hidden = False
            return []
        out = self._close_parts()
        for call in event.message.tool_calls:
            out += self._input_available(call)
        return out

    def _input_available(self, call: ToolCall) -> list[Chunk]:
        out: list[Chunk] = []
        if call.id not in self.known:
            self.known.add(call.id)
            out.append({"type": "tool-input-start", "toolCallId": call.id, "toolName": call.name})
        available = {
            "type": "tool-input-available",
            "toolCallId": call.id,
            "toolName": call.name,
            "input": _input(call.arguments),
        }
        out.append(available)
        return out

    def _tool_ended(
        self, event: ToolCallFinished | ToolCallTimedOut | ToolCallCancelled
    ) -> list[Chunk]:
        self.awaiting.discard(event.call_id)
        response = event.response
        if isinstance(event, ToolCallFinished) and not event.is_error:
            output = None if response is None else _output(response)
            return [
                {"type": "tool-output-available", "toolCallId": event.call_id, "output": output}
            ]
        if response is not None:
            text = response.response_data
        elif isinstance(event, ToolCallTimedOut):
            text = f"Error: the tool call timed out after {event.timeout} s"
        elif isinstance(event, ToolCallCancelled):
            text = "Error: Tool execution was cancelled by the caller"
        else:
            text = "Error"
        return [{"type": "tool-output-error", "toolCallId": event.call_id, "errorText": text}]

    def _interrupted(self, event: RunInterrupted) -> list[Chunk]:
        waiting = {c.id for c in event.calls if c.id in self.known}
        self.awaiting -= waiting
        out = [*self._close_parts(), *self._denied()]
        for call in event.calls:
            if call.id in waiting:
                out.append(
                    {"type": "tool-approval-request", "approvalId": call.id, "toolCallId": call.id}
                )
        self.awaiting = waiting
        self.paused = True
        return out

    def _failed(self, error: BaseException) -> list[Chunk]:
        out = self._close_parts()
        if isinstance(error, RunCancelled):
            return [*out, {"type": "abort", "reason": "the run was cancelled"}]
        return [*out, {"type": "error", "errorText": failure_text(error)}]
