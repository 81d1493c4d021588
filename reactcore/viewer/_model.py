"""The timeline of a run as values: what the page draws, independent of how it draws.

A ``Timeline`` has the run's model calls (``ModelSpan``), tool calls (``ToolSpan``, each
split into ``Segment``s: waiting for approval, queued for a slot, running), pauses for
approval (``ApprovalWait``), the run's end (``Outcome``), and the ``Lane`` each span is
drawn in. Times are seconds from the log's start. A span of a subagent's run names, in
``parent``, the key of the tool call that ran it.

``Timeline.to_json()`` is the form the page's script reads (one object, JSON-native).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

ToolState = Literal[
    "finished", "error", "timed_out", "cancelled", "running", "not_run", "unfinished"
]
"""How a tool call ended: with an answer (``finished``), an error answer (``error``), its
timeout (``timed_out``), cancelled by the caller or with the run (``cancelled``); still
``running`` (a live run); ``not_run`` (named by the model, never started: rejected, or the
run ended first); ``unfinished`` (started, but the run failed or the log stops first)."""

TOOL_STATES: tuple[str, ...] = (
    "finished",
    "error",
    "timed_out",
    "cancelled",
    "running",
    "not_run",
    "unfinished",
)

SegmentKind = Literal["approval", "queued", "running"]
"""A part of a tool call's bar: waiting for a human's decision, waiting for its slots
(the model's answer named it; it has not started), running (its state colours it)."""


@attrs.frozen
class Segment:
    """A part of a tool call's bar, from ``start`` to ``end`` seconds."""

    kind: SegmentKind
    start: float
    end: float


@attrs.frozen
class ToolSpan:
    """A tool call: ``key`` is unique in the timeline (a subagent's call ids are prefixed
    by the path of calls that ran it, ``outer/inner``); ``parent`` the key of the call
    whose subagent made it, or None."""

    key: str
    call_id: str
    name: str
    state: ToolState
    segments: tuple[Segment, ...]
    lane: int = 0
    parent: str | None = None
    agent: str | None = None
    reason: str | None = None
    duration: float | None = None
    timeout: float | None = None
    arguments: str = ""
    response: str = ""

    @property
    def start(self) -> float:
        """When the bar starts: the model's answer that named it, or its start."""
        return self.segments[0].start

    @property
    def end(self) -> float:
        """When the bar ends."""
        return self.segments[-1].end

    @property
    def running(self) -> Segment | None:
        """The segment it ran in, or None if it never started."""
        last = self.segments[-1]
        return last if last.kind == "running" else None


@attrs.frozen
class Retry:
    """The model call failed at ``t`` and is tried again (``ModelCallRetried``)."""

    t: float
    attempt: int
    reason: str
    delay_s: float
    model: str | None = None


@attrs.frozen
class ModelSpan:
    """A model call from ``start`` to ``end``; ``progress`` is ``(t, characters)`` of
    the streamed answer so far (a few points, enough to draw), ``deltas`` and
    ``characters`` its totals (of the attempt that answered), ``calls`` the tool calls
    it named."""

    key: str
    iteration: int
    purpose: str
    start: float
    end: float
    state: Literal["finished", "running", "failed"]
    lane: int = 0
    parent: str | None = None
    agent: str | None = None
    retries: tuple[Retry, ...] = ()
    progress: tuple[tuple[float, int], ...] = ()
    deltas: int = 0
    characters: int = 0
    calls: int = 0
    text: str = ""
    tokens: int | None = None


@attrs.frozen
class ApprovalWait:
    """The run paused at ``start`` for a human to decide on ``calls`` (tool names), until
    ``end`` (the next leg's first event, or the end of the log: ``answered`` False)."""

    start: float
    end: float
    calls: tuple[str, ...]
    answered: bool
    lane: int = 0
    parent: str | None = None


@attrs.frozen
class Outcome:
    """How the run ended: ``finished``, ``failed``, ``cancelled``, ``interrupted``, or
    ``running`` (no end in the log yet); ``error`` says what failed."""

    status: Literal["finished", "failed", "cancelled", "interrupted", "running"]
    t: float
    error: str | None = None
    text: str = ""


@attrs.frozen
class Lane:
    """A row of the picture: ``kind`` ``"model"`` (a run's model calls and pauses) or
    ``"tools"``; ``depth`` 0 for the run, 1 for a subagent's, …; ``parent`` the call
    whose subagent the row belongs to."""

    kind: Literal["model", "tools"]
    label: str
    depth: int = 0
    parent: str | None = None


@attrs.frozen
class Timeline:
    """A run drawn on a time axis of ``duration`` seconds (see the module docstring);
    ``timed`` False when the log had no times (events evenly spaced); ``warnings`` about
    the log, shown above the picture."""

    duration: float
    lanes: tuple[Lane, ...]
    tools: tuple[ToolSpan, ...]
    models: tuple[ModelSpan, ...]
    waits: tuple[ApprovalWait, ...]
    outcome: Outcome
    events: int
    timed: bool = True
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The timeline as JSON-native values, for the page's script."""
        data: dict[str, Any] = attrs.asdict(self)
        return data
