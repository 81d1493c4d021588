"""The native asyncio backend: tasks, timer handles and each task's cancel count.

anyio emulates trio's cancel scopes on asyncio and pays for it on every task and scope,
cancelled or not; a call here costs a task (or a turn of a worker), a timer handle and a
few attribute writes, and the emulation's work is done only when something is cancelled.
What is kept of anyio's semantics, so tools written against anyio behave as before:

- Level-triggered: a call whose deadline passed, or that ``cancel_tool`` cancelled, gets
  a ``CancelledError`` at every await until its body ends — a tool that catches it and
  awaits again is cancelled again; one that catches it and returns ends as timed out (or
  cancelled) and its value is dropped.
- Shields: an anyio ``CancelScope(shield=True)`` entered inside the call (or, for a
  cancelled batch, anywhere in a worker) holds the cancellation back until it exits.
- Counted: a call's scope takes back exactly the cancellations it made
  (``Task.uncancel``), so a cancellation from outside that arrives meanwhile still
  propagates through it.

Knowing whether a task is inside a shield means reading anyio's per-task scope records
(``anyio._backends._asyncio``), as anyio's own delivery reads asyncio's task internals;
``SUPPORTED`` is False if that anyio no longer has them, and ``current()`` then gives the
portable backend instead. Every worker task has ended before ``run_batch`` returns or
raises, also when the caller is cancelled.
"""

from __future__ import annotations

import asyncio  # the seam: asyncio directly, for what anyio's emulation costs per call
import contextvars
import math
from collections.abc import Sequence
from typing import Any

from ._base import BatchError, Runner, first_error

try:
    from anyio._backends._asyncio import CancelScope as _Scope
    from anyio._backends._asyncio import _task_states

    _probe = _Scope()
    SUPPORTED = _probe._shield is False and _probe._parent_scope is None
except (ImportError, AttributeError):  # pragma: no cover - another anyio
    SUPPORTED = False


def _innermost(task: asyncio.Task[Any]) -> Any:
    """The anyio cancel scope ``task`` is in now, or None."""
    state = _task_states.get(task)
    return None if state is None else state.cancel_scope


def _deliverable(task: asyncio.Task[Any], boundary: Any) -> bool:
    """Whether cancelling ``task`` now lands as anyio would deliver it: it waits (a
    result it was about to get is never lost), has no cancellation pending, and no anyio
    scope it entered after ``boundary`` is shielded."""
    if task.done() or task._must_cancel:  # type: ignore[attr-defined]
        return False
    waiter = task._fut_waiter  # type: ignore[attr-defined]
    if waiter is not None and waiter.done():
        return False
    scope = _innermost(task)
    while scope is not None and scope is not boundary:
        if scope._shield:
            return False
        scope = scope._parent_scope
    return True


class _Call:
    """``CallScope`` on asyncio (see the module docstring)."""

    __slots__ = (
        "_base",
        "_boundary",
        "_cancel_called",
        "_context",
        "_deadline",
        "_entered",
        "_handle",
        "_loop",
        "_ours",
        "_task",
    )

    def __init__(
        self, loop: asyncio.AbstractEventLoop, deadline: float, context: contextvars.Context
    ) -> None:
        self._loop = loop
        self._context = context  # what the deadline's callback runs in (no copy per call)
        self._deadline = deadline
        self._task: asyncio.Task[Any] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._ours = 0  # cancellations this scope made and must take back
        self._base = 0  # the task's cancel count when the scope was entered
        self._boundary: Any = None  # the anyio scope the task was in then
        self._cancel_called = False
        self._entered = False

    @property
    def cancel_called(self) -> bool:
        return self._cancel_called

    @property
    def deadline(self) -> float:
        return self._deadline

    @deadline.setter
    def deadline(self, value: float) -> None:
        """Move the deadline (a running call's too), as anyio's ``CancelScope.deadline``."""
        self._deadline = value
        if not self._entered or self._cancel_called:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if value != math.inf:
            self._handle = self._loop.call_at(value, self._expire, context=self._context)

    def __enter__(self) -> _Call:
        task = asyncio.current_task(self._loop)
        assert task is not None, "a call scope is entered in a task"
        self._task = task
        self._base = task.cancelling()
        self._boundary = _innermost(task)
        if not self._cancel_called:
            deadline = self._deadline
            if deadline <= self._loop.time():
                self._cancel_called = True
            elif deadline != math.inf:
                self._handle = self._loop.call_at(deadline, self._expire, context=self._context)
        self._entered = True
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: Any) -> bool:
        self._entered = False
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if not self._ours:
            return False
        assert self._task is not None
        remaining = 0
        for _ in range(self._ours):
            remaining = self._task.uncancel()
        self._ours = 0
        # Our own cancellation ends here; one from outside (counted above ours) goes on.
        ours = exc_type is not None and issubclass(exc_type, asyncio.CancelledError)
        return ours and remaining <= self._base

    def cancel(self) -> None:
        if self._cancel_called:
            return
        self._cancel_called = True
        if self._entered:  # else the body will not start
            # As a callback: never into the running task (a call cancelling itself).
            self._loop.call_soon(self._deliver)

    def _expire(self) -> None:
        self._handle = None
        if not self._cancel_called:
            self._cancel_called = True
            self._deliver()

    def _deliver(self) -> None:
        """Cancel the task while it is in the body, at every turn of the loop."""
        if not self._entered:
            return
        assert self._task is not None
        if _deliverable(self._task, self._boundary):
            self._ours += 1
            self._task.cancel()
        self._loop.call_soon(self._deliver)


class _Abort:
    """A cancelled batch's cancellation of one worker task, at every turn of the loop
    until the task ends (anyio's task group does the same)."""

    __slots__ = ("_loop", "_task")

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self._loop = loop
        self._task = task

    def __call__(self) -> None:
        if self._task.done():
            return
        if _deliverable(self._task, None):
            self._task.cancel()
        self._loop.call_soon(self)


class _Batch:
    """One ``run_batch``: worker tasks taking the jobs in order, started as they are
    needed (see ``_grow``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, jobs: Sequence[Any], run: Runner) -> None:
        self.loop = loop
        self.jobs = jobs
        self.claimed = 0  # jobs taken by a worker so far, in order
        self.run = run
        self.errors: list[BatchError] = []
        self.aborted = False
        self.tasks: list[asyncio.Task[None]] = []
        self.pending = 0  # workers whose body has not ended
        self.done: asyncio.Future[None] | None = None

    async def worker(self) -> None:
        jobs = self.jobs
        try:
            while not self.aborted and self.claimed < len(jobs):
                index = self.claimed
                self.claimed = index + 1
                try:
                    await self.run(jobs[index])
                except asyncio.CancelledError:
                    raise
                except BaseException as exc:  # raised by the batch, as itself, once all ended
                    self.errors.append((isinstance(exc, Exception), index, exc))
                    self.abort()
                    return
        finally:
            self.pending -= 1
            if not self.pending:
                self._wake()

    def _wake(self) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def abort(self) -> None:
        """Stop the batch: no job starts any more; every other worker is cancelled
        wherever it waits (inside a call, a limiter, an observer), shields respected."""
        if self.aborted:
            return
        self.aborted = True
        me = asyncio.current_task(self.loop)
        for task in self.tasks:
            if task is not me and not task.done():
                self.loop.call_soon(_Abort(self.loop, task))
        self._wake()  # a worker cancelled before it started never says it ended

    def _spawn(self, count: int) -> None:
        for _ in range(count):
            self.tasks.append(self.loop.create_task(self.worker()))
        self.pending += count

    async def _grow(self, workers: int) -> None:
        """Start workers, at most ``workers``: one, then after each turn of the loop as
        many again while jobs are left unclaimed — which means every worker started so
        far waits inside a job. Jobs that never wait (a tool that does not await) all run
        on the first worker, and no task is made for nobody."""
        self._spawn(1)
        while len(self.tasks) < workers:
            await asyncio.sleep(0)  # a turn: the workers run until they wait or end
            unclaimed = len(self.jobs) - self.claimed
            if self.aborted or not unclaimed:
                return
            self._spawn(min(len(self.tasks), unclaimed, workers - len(self.tasks)))

    async def __call__(self, workers: int) -> None:
        # Structured: every task has ended before this returns or raises, cancelled or not.
        try:
            await self._grow(workers)
            if self.pending and not self.aborted:
                self.done = self.loop.create_future()
                await self.done
            left = [task for task in self.tasks if not task.done()]
            if left:  # after an abort: workers that were cancelled, ending now
                await asyncio.wait(left)
        except asyncio.CancelledError:
            self.abort()
            await self._drain()
            raise
        error = first_error(self.errors)
        if error is not None:
            raise error

    async def _drain(self) -> None:
        """Wait for every worker to end; further cancellations of the caller are the one
        being handled, raised again by the caller once this returns."""
        while left := [task for task in self.tasks if not task.done()]:
            try:
                await asyncio.wait(left)
            except asyncio.CancelledError:
                continue


class AsyncioBackend:
    """``Backend`` on one asyncio loop (see the module docstring)."""

    __slots__ = ("clock", "context", "loop")
    name = "asyncio"

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.clock = loop.time
        # The deadlines' callbacks read no context variable: one empty context for all.
        self.context = contextvars.Context()

    def call_scope(self, deadline: float) -> _Call:
        return _Call(self.loop, deadline, self.context)

    async def run_batch(self, jobs: Sequence[Any], workers: int, run: Runner) -> None:
        if workers:
            await _Batch(self.loop, jobs, run)(workers)


def running() -> AsyncioBackend:
    """The backend of the running loop."""
    return AsyncioBackend(asyncio.get_running_loop())
