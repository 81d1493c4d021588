"""The events of a run, in the order they happen; read them with ``run.events()``.

Order is a contract: ``ToolCallStarted`` is sent once the call has its slots, before its
body starts (``run.cancel_tool`` works from then until the call has ended; a reader may
see the ``ToolCallStarted`` of a fast call that has already finished, and ``cancel_tool``
then says False); with a saver, ``ToolCallFinished`` is sent after that call's checkpoint
is written; a cancelled or timed-out call sends ``ToolCallCancelled`` /
``ToolCallTimedOut`` instead of ``ToolCallFinished``; a retried model call sends
``ModelCallRetried`` after the failed attempt's ``ModelDelta``s and before the next
attempt's; the stream ends after ``RunFinished``, ``RunFailed`` or ``RunInterrupted``.
A subagent's events (``SubagentEvent``) come between the ``ToolCallStarted`` and the end
event of the tool call that runs it, in the order the subagent sent them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ._messages import AssistantMessage, ToolCall, ToolResponse
from .models.base import ToolCallDelta, Usage

if TYPE_CHECKING:
    from ._result import AgentResult


@attrs.frozen
class ModelCallStarted:
    """The model is being asked; ``iteration`` counts from 0 within the run.

    ``purpose`` is ``"agent"`` for the loop's own turns; a call a hook makes on the run's
    behalf says what it is for (``"summary"``: ``SummarizationHook``), with the
    ``iteration`` of the turn it comes before.
    """

    iteration: int
    purpose: str = "agent"


@attrs.frozen
class ModelDelta:
    """A streamed fragment of the model's answer: text, a piece of a tool call, or a piece
    of the model's reasoning (``reasoning``, when the provider streams it)."""

    text: str = ""
    tool_call: ToolCallDelta | None = None
    reasoning: str = ""


@attrs.frozen
class ModelCallRetried:
    """The model call is tried again: attempt ``attempt`` (from 1) failed for ``reason``,
    the next starts after ``delay_s`` seconds, on ``model`` when a fallback switched
    models (else ``None``). ``ModelDelta``s sent before it belong to the failed attempt:
    a UI discards them."""

    attempt: int
    delay_s: float
    reason: str
    model: str | None = None


@attrs.frozen
class ModelCallFinished:
    """The model answered with ``message``; ``purpose`` as in ``ModelCallStarted``."""

    message: AssistantMessage
    usage: Usage | None = None
    purpose: str = "agent"


@attrs.frozen
class ToolCallStarted:
    """A tool call is running (it holds its slots; its timeout clock runs)."""

    call_id: str
    name: str
    arguments: str


@attrs.frozen
class ToolCallFinished:
    """A tool call ended with an answer (``is_error`` for an error shown to the model).

    ``response`` is that answer as the model gets it (text, parts, and the tool's ``data``),
    so a reader (a UI, a protocol adapter) never digs it out of the state.
    """

    call_id: str
    name: str
    is_error: bool
    duration: float
    response: ToolResponse | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class ToolCallTimedOut:
    """A tool call ran out of time after ``timeout`` seconds; ``response`` is the error
    the model gets for it."""

    call_id: str
    name: str
    timeout: float
    response: ToolResponse | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class ToolCallCancelled:
    """A tool call was cancelled by the caller (``run.cancel_tool``); ``response`` is the
    cancellation text the model gets for it, ``duration`` how long the call ran until it
    really stopped (seconds, as ``ToolCallFinished.duration``)."""

    call_id: str
    name: str
    reason: str | None = None
    response: ToolResponse | None = attrs.field(default=None, eq=False, repr=False)
    duration: float | None = attrs.field(default=None, eq=False)


@attrs.frozen
class StateUpdated:
    """A step of the loop (``node``: a hook position, "model", "tools", or "output" when
    a structured answer was checked) changed ``keys``."""

    node: str
    keys: tuple[str, ...]


@attrs.frozen
class RunFinished:
    """The run ended with ``result``; the last event."""

    result: AgentResult


@attrs.frozen
class RunFailed:
    """The run ended with ``error`` (``RunCancelled`` when it was cancelled); the last event."""

    error: BaseException = attrs.field(eq=False)


@attrs.frozen
class RunInterrupted:
    """The run paused for a human to approve ``calls``; the last event."""

    calls: tuple[ToolCall, ...]
    result: Any = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class SubagentCall:
    """One level of a ``SubagentEvent``'s path: the tool call ``call_id`` of the run above
    ran the agent ``agent`` as its run ``run_id``."""

    call_id: str
    agent: str
    run_id: str


@attrs.frozen
class SubagentEvent:
    """An event of a subagent's run (``agent.as_tool()``), passed up to the run that
    called it: ``event`` as the subagent sent it, never itself a ``SubagentEvent``, and
    ``path``, from the outermost call down to the run that sent it (one ``SubagentCall``
    per level: a subagent's subagent has two)."""

    path: tuple[SubagentCall, ...]
    event: Event


Event = (
    ModelCallStarted
    | ModelDelta
    | ModelCallRetried
    | ModelCallFinished
    | ToolCallStarted
    | ToolCallFinished
    | ToolCallTimedOut
    | ToolCallCancelled
    | StateUpdated
    | RunFinished
    | RunFailed
    | RunInterrupted
    | SubagentEvent
)
TERMINAL = (RunFinished, RunFailed, RunInterrupted)
