"""``RunHandle``: the one protocol of a handle on a live run, in process (``AgentRun``, from
``agent.start(...)``) or in Temporal (``reactcore.temporal.TemporalRun``).

Code that steers a run is written once against it and works with both:

    async with run.events() as events:
        async for event in events:
            if isinstance(event, ToolCallStarted) and event.name == "slow_search":
                await run.cancel_tool(event.call_id, "took too long")  # the run goes on
    result = await run.result()
    if result.status == "interrupted":
        await run.resume(Resume({c.id: Approve() for c in result.interrupt.calls}))
        result = await run.result()

Every member has one spelling and one meaning on both handles:

- ``run_id``, ``thread_id``: the run's id (``None`` for a Temporal handle from
  ``TemporalAgent.get`` that does not know it) and its thread (``None`` without one).
- ``await run.status()``: ``"running"``, ``"interrupted"`` (paused for approval),
  ``"finished"``, ``"cancelled"`` or ``"failed"``.
- ``run.events()``: an ``EventSource``, used as ``async with run.events() as events:
  async for event in events`` (``async for`` on it directly works too; leaving the block
  closes it). It gives the events of the run's current leg, from its first: from the start,
  or from the latest ``resume``, to its end (``RunFinished``, ``RunFailed``) or pause
  (``RunInterrupted``). After ``resume`` call ``events()`` again for the next leg.
- ``await run.result()``: waits for the leg's end and gives its ``AgentResult`` (status
  ``"finished"``, or ``"interrupted"`` with the calls waiting in ``result.interrupt``);
  a cancelled run raises ``RunCancelled``, a failed one its error.
- ``await run.cancel_tool(call_id, reason=None)``: cancels that running tool call; the
  model gets ``Error: Tool execution was cancelled by the caller: <reason>`` and the run
  goes on. ``True`` if the call was running and is now being cancelled; ``False`` (and
  nothing done) for an unknown, queued, finished or already-cancelled call. The call's
  ``ToolCallCancelled`` event comes once the tool has really stopped (a sync tool in a
  thread is abandoned then, and stops at its next ``check_cancelled()``).
- ``await run.cancel()``: cancels the whole run (finished calls kept; ``result()`` raises
  ``RunCancelled``). ``True`` if the run was live and is now being cancelled, ``False`` if
  it had ended or was being cancelled already.
- ``await run.resume(decisions)``: answers the run's pause for approval; the run goes on
  under the same handle. ``ValueError`` if it is not paused or the decisions do not fit
  (an unknown call id, edited arguments that do not parse); nothing changes then.
"""

from __future__ import annotations

from types import TracebackType
from typing import Literal, Protocol, runtime_checkable

from ._approval import Resume
from ._events import Event
from ._result import AgentResult

RunStatus = Literal["running", "interrupted", "finished", "cancelled", "failed"]
"""Where a run stands: ``await run.status()``."""


@runtime_checkable
class EventSource(Protocol):
    """What ``run.events()`` gives: an async iterator of events that is also an async
    context manager (leaving the block stops listening)."""

    def __aiter__(self) -> EventSource: ...

    async def __anext__(self) -> Event: ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> EventSource: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class RunHandle(Protocol):
    """A handle on a live run, in process or in Temporal; see the module docstring."""

    @property
    def run_id(self) -> str | None: ...

    @property
    def thread_id(self) -> str | None: ...

    async def status(self) -> RunStatus: ...

    def events(self) -> EventSource: ...

    async def result(self) -> AgentResult: ...

    async def cancel_tool(self, call_id: str, reason: str | None = None) -> bool: ...

    async def cancel(self) -> bool: ...

    async def resume(self, decisions: Resume) -> None: ...
