"""``AgentRun``: the handle on a live run in process — its events, cancelling one tool call
or the whole run, resuming it after a pause, and its result. It implements ``RunHandle``
(see ``_handle``), the protocol it shares with ``reactcore.temporal.TemporalRun``.

Events policy (bounded memory, and a run never stuck on an event nobody reads):

- Events go into a buffer of ``max_buffered_events``.
- Once a reader is attached (``run.events()``), a full buffer makes the run wait for the
  reader: a slow consumer applies backpressure.
- Before any reader is attached, events are kept until the buffer is full, then dropped
  (counted in ``run.dropped_events``): a caller that never reads never blocks the run.
- When the reader stops listening (closes the stream, or leaves ``async with
  run.events()``), later events are dropped.
- When no reader can ever attach (``agent.invoke`` keeps the handle: ``no_reader()``), no
  event is kept or counted, and the run does not build its per-call events at all.
- A run resumed after a pause (``await run.resume(...)``) starts a new leg with a new
  buffer: ``run.events()`` may then be called again, for the leg's events.

Both ends of every leg's buffer are closed on every path (no ``Unclosed
<MemoryObjectReceiveStream>`` under ``python -X dev``): the sending end when the leg ends;
the receiving end when its reader closes it or reads it to the end, and otherwise when
the ``agent.start`` block ends or the next leg starts (``release``). Events a reader never
asked for are dropped then: ``run.events()`` after the block is an error, not an empty
stream.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

import anyio
import anyio.lowlevel
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._approval import Resume
from ._events import TERMINAL, Event
from ._exceptions import RunCancelled
from ._handle import RunStatus
from ._result import AgentResult
from ._scheduler import Job


class _Reader(enum.Enum):
    NONE = "none"
    ATTACHED = "attached"
    GONE = "gone"
    NEVER = "never"  # the handle is never given out (``agent.invoke``): no events at all
    RELEASED = "released"  # the block that made the run ended with no reader: none can come


@attrs.define(eq=False)
class EventStream:
    """The run's events: ``async for event in stream``; close it (or use ``async with``)
    when you stop listening, so the run stops waiting for you.

    ``sent_at`` is when the run sent the event last read (``anyio.current_time()``): a
    reader that falls behind a burst of events still knows when each happened (the
    timeline's event log records it).
    """

    _receive: MemoryObjectReceiveStream[tuple[float, Event]]
    _run: AgentRun
    sent_at: float | None = attrs.field(default=None, init=False)

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        try:
            self.sent_at, event = await self._receive.receive()
            return event
        except anyio.EndOfStream:
            self._receive.close()  # read to the end: nothing is left to hold open
            raise StopAsyncIteration from None
        except anyio.ClosedResourceError:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Stop listening: later events are dropped, and the run never waits for them."""
        self._run._reader = _Reader.GONE
        self._receive.close()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


@attrs.define(eq=False)
class AgentRun:
    """A run in progress, made by ``agent.start(...)``: a ``RunHandle`` (see ``_handle``)
    and the module docstring. Besides the protocol's async members it has synchronous
    ones for code without a checkpoint to spare: ``status_nowait``, ``cancel_tool_nowait``,
    ``cancel_nowait``, and ``done``."""

    run_id: str
    thread_id: str | None
    max_buffered_events: int = 256
    dropped_events: int = 0
    # Each event goes with the time it was sent (``EventStream.sent_at``).
    _send: MemoryObjectSendStream[tuple[float, Event]] = attrs.field(init=False)
    _receive: MemoryObjectReceiveStream[tuple[float, Event]] = attrs.field(init=False)
    _reader: _Reader = attrs.field(default=_Reader.NONE, init=False)
    _scope: anyio.CancelScope = attrs.field(factory=anyio.CancelScope, init=False)
    _done: anyio.Event = attrs.field(factory=anyio.Event, init=False)
    _result: AgentResult | None = attrs.field(default=None, init=False)
    _error: BaseException | None = attrs.field(default=None, init=False)
    _error_raised: bool = attrs.field(default=False, init=False)
    _inflight: dict[str, Job] = attrs.field(factory=dict, init=False)
    _state: Any = attrs.field(default=None, init=False)
    _state_later: Callable[[], Any] | None = attrs.field(default=None, init=False)
    # Set by ``agent.start`` while its block is open: starts the next leg after a pause.
    _restart: Callable[[Resume], Awaitable[None]] | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        if self.max_buffered_events < 1:
            raise ValueError("max_buffered_events must be at least 1")
        self._open_stream()

    def _open_stream(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[tuple[float, Event]](
            self.max_buffered_events
        )

    @property
    def wants_events(self) -> bool:
        """Whether an event sent now may be read: a reader is attached, or may still be.
        False once the reader left, or when none can ever attach (``agent.invoke``):
        the run then need not build its per-call events at all."""
        return self._reader is _Reader.NONE or self._reader is _Reader.ATTACHED

    def no_reader(self) -> None:
        """No reader will ever attach (the handle stays inside ``agent.invoke``): events
        are neither kept nor counted, and ``events()`` is refused."""
        self._reader = _Reader.NEVER

    # --- for the caller -----------------------------------------------------------------

    def events(self) -> EventStream:
        """The events of the run's current leg, from the first; one reader per leg.

        ``RuntimeError`` when the leg has a reader already, and after the
        ``agent.start`` block that made the run (its unread events were dropped there)."""
        if self._reader is _Reader.RELEASED:
            raise RuntimeError(
                "run.events() works inside the `async with agent.start(...)` block that "
                "made the run: its events were dropped when the block ended"
            )
        if self._reader is not _Reader.NONE:
            raise RuntimeError("this run's events already have a reader")
        self._reader = _Reader.ATTACHED
        return EventStream(self._receive, self)

    async def cancel_tool(self, call_id: str, reason: str | None = None) -> bool:
        """Cancel the running tool call ``call_id``; the model is told, and the run goes on.

        From the moment the call's ``ToolCallStarted`` is sent (before its body starts)
        until it has ended, this cancels it and returns True: the model reads ``Error: Tool
        execution was cancelled by the caller: <reason>`` and ``ToolCallCancelled`` follows;
        made before the body started (the run waiting for a slow reader to take
        ``ToolCallStarted``), the body never runs.

        False, and nothing changes, for an unknown id, a call still queued for a slot, or a
        call that has already ended: its own answer (result, error, timeout, or an earlier
        cancel) is kept, and its end event (``ToolCallFinished``, ``ToolCallTimedOut``,
        ``ToolCallCancelled``) is sent. A fast call often ends before its reader sees
        ``ToolCallStarted``: then False means exactly that it had already finished.
        """
        await anyio.lowlevel.checkpoint()
        return self.cancel_tool_nowait(call_id, reason)

    def cancel_tool_nowait(self, call_id: str, reason: str | None = None) -> bool:
        """``cancel_tool`` without a checkpoint (from synchronous code of the run's loop)."""
        job = self._inflight.get(call_id)
        return job is not None and job.cancel(reason or "")

    async def cancel(self) -> bool:
        """Cancel the whole run; ``result()`` then raises ``RunCancelled``. True if the run
        was live and is now being cancelled, False if it had ended or was being cancelled."""
        await anyio.lowlevel.checkpoint()
        return self.cancel_nowait()

    def cancel_nowait(self) -> bool:
        """``cancel`` without a checkpoint (from synchronous code, callbacks)."""
        if self.done or self._scope.cancel_called:
            return False
        self._scope.cancel()
        return True

    async def resume(self, decisions: Resume) -> None:
        """Answer the run's pause for approval; the run goes on under this handle
        (``events()`` again for the new leg, ``result()`` for its end).

        ``ValueError`` if the run is not paused or the decisions do not fit; nothing
        changes then. Only inside the ``async with agent.start(...)`` block that made the
        run (its task group runs the new leg); elsewhere resume the thread with
        ``agent.invoke(Resume(...), config)``.
        """
        if self.status_nowait() != "interrupted":
            raise ValueError("nothing to approve: the run is not waiting for approval")
        if self._restart is None:
            raise RuntimeError(
                "run.resume() works inside the `async with agent.start(...)` block that "
                "made the run; after it, use agent.invoke(Resume(...), config)"
            )
        await self._restart(decisions)

    @property
    def done(self) -> bool:
        """Whether the run's current leg has ended (finished, failed, cancelled or
        interrupted)."""
        return self._done.is_set()

    async def status(self) -> RunStatus:
        """``"running"``; then ``"finished"``, ``"interrupted"``, ``"cancelled"``, ``"failed"``."""
        await anyio.lowlevel.checkpoint()
        return self.status_nowait()

    def status_nowait(self) -> RunStatus:
        """``status`` without a checkpoint."""
        if not self.done:
            return "running"
        if self._result is not None:
            return self._result.status
        return "cancelled" if isinstance(self._error, RunCancelled) else "failed"

    async def wait(self) -> None:
        """Wait for the leg's end, whatever it is, without raising its error."""
        await self._done.wait()

    async def result(self) -> AgentResult:
        """Wait for the leg's end: its result (status ``"finished"`` or ``"interrupted"``),
        or the error that ended it, raised as itself."""
        await self._done.wait()
        if self._error is not None:
            self._error_raised = True
            raise self._error
        assert self._result is not None
        return self._result

    @property
    def unraised_fatal_error(self) -> BaseException | None:
        """The ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``,
        ``SystemExit`` …) that ended the run, if ``result()`` has not raised it yet."""
        error = self._error
        if error is None or isinstance(error, Exception) or self._error_raised:
            return None
        return error

    # --- for the agent loop ------------------------------------------------------------

    @property
    def state(self) -> Any:
        """The run's state as of now (what ``RunCancelled`` carries)."""
        if self._state_later is not None:
            self._state, self._state_later = self._state_later(), None
        return self._state

    @state.setter
    def state(self, value: Any) -> None:
        self._state, self._state_later = value, None

    def state_later(self, compute: Callable[[], Any]) -> None:
        """Set the state to what ``compute`` gives, computed only if someone asks."""
        self._state_later = compute

    async def emit(self, event: Event) -> None:
        """Send ``event`` under the events policy (see the module docstring)."""
        if self._reader is not _Reader.ATTACHED:
            self._send_or_drop(event)
            return
        item = (anyio.current_time(), event)
        try:
            self._send.send_nowait(item)  # no trip through the scheduler while there is room
        except anyio.WouldBlock:
            try:
                await self._send.send(item)  # a slow reader: wait for it (backpressure)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._reader = _Reader.GONE
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._reader = _Reader.GONE

    def _send_or_drop(self, event: Event) -> None:
        if self._reader is _Reader.NEVER:
            return
        try:
            self._send.send_nowait((anyio.current_time(), event))
        except anyio.WouldBlock:
            self.dropped_events += 1
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._reader = _Reader.GONE

    def track(self, call_id: str, job: Job | None) -> None:
        """Register a running call (``job``) or forget it (``None``)."""
        if job is None:
            self._inflight.pop(call_id, None)
        else:
            self._inflight[call_id] = job

    async def finish(
        self, event: Event, result: AgentResult | None, error: BaseException | None
    ) -> None:
        """End the run: record the outcome, send the last event, close the stream."""
        assert isinstance(event, TERMINAL)
        self._result, self._error = result, error
        self._done.set()
        with anyio.CancelScope(shield=True):
            if self._reader is _Reader.ATTACHED and not self._scope.cancel_called:
                await self.emit(event)
            else:
                self._send_or_drop(event)
        self._send.close()

    def finish_nowait(self, event: Event, error: BaseException) -> None:
        """End the run from a cancelled context: the last event only if there is room."""
        self._result, self._error = None, error
        self._done.set()
        self._send_or_drop(event)
        self._send.close()

    @property
    def scope(self) -> anyio.CancelScope:
        """The cancel scope the run's loop runs in."""
        return self._scope

    def release(self) -> None:
        """Close the current leg's buffer where nobody will read it (``agent.start`` calls
        this when its block ends, ``next_leg`` before a new buffer): the sending end
        always; the receiving end too, unless a reader holds it with events still to read
        (then the reader closes it, by ``aclose`` or by reading to the end)."""
        self._send.close()
        if self._reader is not _Reader.ATTACHED:
            self._receive.close()
            if self._reader is _Reader.NONE:
                self._reader = _Reader.RELEASED
        elif self._receive.statistics().current_buffer_used == 0:
            self._receive.close()  # the reader has read all there is: it gets the end

    def next_leg(self) -> None:
        """Make the handle live again for the leg after a pause: a new scope, buffer and
        outcome (the run id and the dropped-events count are kept)."""
        assert self.done, "a leg starts only after the previous one ended"
        self.release()
        self._open_stream()
        self._reader = _Reader.NONE
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()
        self._result = self._error = None
        self._error_raised = False
        self._inflight.clear()


@asynccontextmanager
async def released(run: AgentRun) -> AsyncIterator[AgentRun]:
    """``run`` for the block that owns it (``agent.start``'s): ``run.release()`` when the
    block ends, however it ends."""
    try:
        yield run
    finally:
        run.release()
