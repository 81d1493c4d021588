"""Running a batch of tool calls: one after another, or in a task group under a limit.

Each call runs inside its own cancel scope whose deadline is set when the call starts
running — after it got its limiter slots, so time spent queueing never counts against
it. Cancelling that scope (``Job.cancel``) stops that one call and the batch goes on; a
cancellation from outside stops the whole batch, and every async call's cleanup has run
before the batch returns. The scheduler knows nothing of tools or messages: it runs
``Job.invoke`` and reports how each job ended.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import anyio
import attrs

Invoke = Callable[[], Awaitable[Any]]


class JobObserver(Protocol):
    """Told when a job starts running (inside its scope) and when it has ended."""

    async def job_started(self, job: Job) -> None: ...

    async def job_ended(self, job: Job) -> None: ...


class Status(enum.Enum):
    """How a job ended."""

    DONE = "done"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


@attrs.define(eq=False)
class Job:
    """One call to run: its coroutine, its timeout and its own limiter (or ``None``).

    While it runs, ``cancel(reason)`` stops it alone; ``result`` and ``status`` say how it
    ended, ``duration`` how long it ran (seconds, queueing excluded).
    """

    invoke: Invoke
    timeout: float
    limiter: anyio.CapacityLimiter | None = None
    key: Any = None
    observer: JobObserver | None = None
    status: Status | None = None
    result: Any = None
    duration: float = 0.0
    cancel_reason: str | None = None
    _scope: anyio.CancelScope | None = None

    @property
    def running(self) -> bool:
        """True between the moment the job got its slots and the moment it ended."""
        return self._scope is not None and self.status is None

    def cancel(self, reason: str = "") -> bool:
        """Cancel this job if it is running; False if it is not (queued or ended)."""
        if not self.running or self.cancel_reason is not None:
            return False
        assert self._scope is not None
        self.cancel_reason = reason
        self._scope.cancel()
        return True


async def _acquire(limiter: anyio.CapacityLimiter) -> None:
    # acquire() always yields to the scheduler; with a free slot there is no need to.
    try:
        limiter.acquire_nowait()
    except anyio.WouldBlock:
        await limiter.acquire()


async def _run_job(job: Job) -> None:
    """Run ``job`` under its deadline; record how it ended. Exceptions propagate."""
    start = anyio.current_time()
    deadline = start + job.timeout
    with anyio.CancelScope(deadline=deadline) as scope:
        job._scope = scope
        if job.observer is not None:
            await job.observer.job_started(job)
        job.result = await job.invoke()
    now = anyio.current_time()
    job.duration = now - start
    if job.cancel_reason is not None:
        job.status, job.result = Status.CANCELLED, None
    elif scope.cancel_called or now >= deadline:
        # Also a call that ignored its cancellation, or a sync tool that blocked the loop
        # past its deadline: its result arrived too late and is dropped.
        job.status, job.result = Status.TIMED_OUT, None
    else:
        job.status = Status.DONE


async def run_limited(job: Job, limiter: anyio.CapacityLimiter | None) -> None:
    """Run ``job`` holding its own limiter, then ``limiter`` (the node's), if any.

    The job's own (per-resource) limiter is taken first so a call waiting for a busy
    resource does not sit on a node slot another call could use.
    """
    if job.limiter is not None:
        await _acquire(job.limiter)
    try:
        if limiter is not None:
            await _acquire(limiter)
        try:
            await _run_job(job)
        finally:
            if limiter is not None:
                limiter.release()
    finally:
        if job.limiter is not None:
            job.limiter.release()
    if job.observer is not None:
        await job.observer.job_ended(job)


async def run_sequential(jobs: Sequence[Job]) -> None:
    """Run ``jobs`` one after another, in order."""
    for job in jobs:
        await run_limited(job, None)


async def run_parallel(jobs: Sequence[Job], limiter: anyio.CapacityLimiter) -> None:
    """Run ``jobs`` at once in a task group, at most ``limiter`` of them at a time.

    If a job raises, the others are cancelled and the first exception in job order is
    raised as itself (not inside an ``ExceptionGroup``).
    """
    errors: list[tuple[int, BaseException]] = []

    async def run(index: int, job: Job, cancel: Callable[[], None]) -> None:
        try:
            await run_limited(job, limiter)
        except Exception as exc:
            errors.append((index, exc))
            cancel()

    async with anyio.create_task_group() as tg:
        for index, job in enumerate(jobs):
            tg.start_soon(run, index, job, tg.cancel_scope.cancel)
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
