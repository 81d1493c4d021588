"""A thread's timeline from its checkpoints: ``await timeline_of_thread(saver, thread_id)``.

A run that was not recorded (no event log) still left its checkpoints, each with the
wall-clock time it was stored (``created_at``). This module turns them into the events
``TimelineBuilder`` reads (reactcore's event values, in their ``to_json`` form) and draws
them like a recorded run's:

- a model step (a checkpoint adding the model's answer): a model call from the previous
  checkpoint's time to this one's, with the answer and its tool calls;
- a tools step: each tool response the checkpoint added ends its call at the
  checkpoint's time (a batch stores a checkpoint as its calls end, so parallel calls end
  apart); ``is_error`` responses are errors, the cancellation text (``Error: Tool
  execution was cancelled by the caller``) a cancellation, the timeout text a timeout.
  Checkpoints do not record when a call started: every call of an answer is drawn as
  started when that answer was stored (after a pause for approval: when the first
  checkpoint after the pause was stored);
- a checkpoint waiting for approval (``interrupt``): a pause until the next step;
- the thread's last checkpoint: the run finished there (``next == "end"``), waits for
  approval, or stopped before its end (crashed, cancelled, failed, or running now: a
  warning says so).

Times are seconds from the thread's first checkpoint, at the granularity of steps (the
timeline's warnings say so, and the page shows them). One pass over the checkpoints, each
message compared once: linear in the thread's history.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from .._events import (
    Event,
    ModelCallFinished,
    ModelCallStarted,
    RunFinished,
    RunInterrupted,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
)
from .._messages import AssistantMessage, Message, ToolCall, ToolResponse, ToolResponseMessage
from .._result import AgentResult
from .._shapes import to_json
from .._state import MESSAGES
from ._model import Timeline
from ._timeline import TimelineBuilder

if TYPE_CHECKING:
    from ..savers import Checkpoint, Saver

CANCELLED_PREFIX = "Error: Tool execution was cancelled by the caller"
"""How a cancelled call's response starts (``reactcore`` writes it for the model)."""

_TIMED_OUT = re.compile(r"Error: Tool execution timed out after ([0-9][0-9.e+-]*)s")

CHECKPOINT_TIMES = (
    "times come from the thread's checkpoints (when each step was stored), not from a "
    "recorded run: a model call is drawn from the step before it, and checkpoints do not "
    "record when a tool call started, so each call is drawn from when the answer naming "
    "it was stored to when its response was"
)
"""The warning every timeline from checkpoints carries."""


class ThreadNotFound(LookupError):
    """``timeline_of_thread``: the saver holds no checkpoint of the thread."""


def _messages(checkpoint: Checkpoint | None) -> Sequence[Message]:
    if checkpoint is None:
        return ()
    found = checkpoint.state.get(MESSAGES)
    return found if isinstance(found, Sequence) else ()


def _added(old: Sequence[Message], new: Sequence[Message]) -> Sequence[Message]:
    """The messages ``new`` added to ``old``: when it only appended (the usual step),
    found by comparing the last old message; else from the first difference."""
    if len(new) >= len(old) and (not old or new[len(old) - 1] == old[-1]):
        return new[len(old) :]
    common = 0
    while common < min(len(old), len(new)) and old[common] == new[common]:
        common += 1
    return new[common:]


def _ended(response: ToolResponse, started: float, t: float) -> Event:
    """The end event of a call answered by ``response`` at ``t``."""
    duration = max(t - started, 0.0)
    text = response.response_data
    if response.is_error and text.startswith(CANCELLED_PREFIX):
        reason = text[len(CANCELLED_PREFIX) :].removeprefix(":").strip() or None
        return ToolCallCancelled(response.id, response.name, reason, response, duration)
    timed_out = _TIMED_OUT.match(text) if response.is_error else None
    if timed_out is not None:
        try:
            timeout = float(timed_out.group(1))
        except ValueError:
            timeout = duration
        return ToolCallTimedOut(response.id, response.name, timeout, response)
    return ToolCallFinished(response.id, response.name, response.is_error, duration, response)


def checkpoint_events(
    checkpoints: Sequence[Checkpoint],
) -> Iterator[tuple[float, Event]]:
    """The events a thread's ``checkpoints`` (oldest first, as ``saver.list`` gives them)
    stand for, each with its time in seconds from the first checkpoint (see the module
    docstring)."""
    if not checkpoints:
        return
    origin = checkpoints[0].created_at
    before: Checkpoint | None = None
    requested: dict[str, ToolCall] = {}  # asked for by the last answer, not answered yet
    batch_start: float | None = None  # when its calls are drawn as started (None: next step)
    started: set[str] = set()
    for checkpoint in checkpoints:
        t = max(checkpoint.created_at - origin, 0.0)
        previous = 0.0 if before is None else max(before.created_at - origin, 0.0)
        if batch_start is None:
            batch_start = t
        for message in _added(_messages(before), _messages(checkpoint)):
            if isinstance(message, AssistantMessage):
                yield previous, ModelCallStarted(max(checkpoint.model_calls - 1, 0))
                yield t, ModelCallFinished(message)
                requested = {c.id: c for c in message.tool_calls}
                batch_start, started = t, set()
            elif isinstance(message, ToolResponseMessage):
                for response in message.responses:
                    call = requested.pop(response.id, None)
                    if call is None:  # answered already (a partial batch completed)
                        continue
                    if call.id not in started:
                        yield batch_start, ToolCallStarted(call.id, call.name, call.arguments)
                        started.add(call.id)
                    yield t, _ended(response, batch_start, t)
        if checkpoint.interrupt:
            yield t, RunInterrupted(checkpoint.interrupt)
            batch_start = None  # the calls run once the pause is answered
        before = checkpoint
    assert before is not None
    if before.next == "end":
        t = max(before.created_at - origin, 0.0)
        yield t, RunFinished(AgentResult(before.state, _final_text(before)))


def _final_text(checkpoint: Checkpoint) -> str:
    for message in reversed(_messages(checkpoint)):
        if isinstance(message, AssistantMessage):
            return message.text or ""
    return ""


def timeline_of_checkpoints(checkpoints: Sequence[Checkpoint]) -> Timeline:
    """The timeline of a thread's ``checkpoints`` (oldest first; see the module
    docstring)."""
    builder = TimelineBuilder(warnings=[CHECKPOINT_TIMES])
    for t, event in checkpoint_events(checkpoints):
        builder.add(t, to_json(event))
    if checkpoints:
        last = checkpoints[-1]
        if last.next != "end" and not last.interrupt:
            builder.warnings.append(
                "the thread's last run stopped before its end (it crashed, was cancelled or "
                "failed, or is running now): its last step is the last checkpoint"
            )
    return builder.timeline()


async def timeline_of_thread(saver: Saver, thread_id: str) -> Timeline:
    """The timeline of thread ``thread_id`` from ``saver``'s checkpoints (see the module
    docstring); ``ThreadNotFound`` when it has none."""
    if not isinstance(thread_id, str):
        raise TypeError(f"thread_id must be a str, got {type(thread_id).__name__}")
    checkpoints = await saver.list(thread_id)
    if not checkpoints:
        raise ThreadNotFound(f"no checkpoints of thread {thread_id!r}")
    return timeline_of_checkpoints(checkpoints)
