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

Invoke = Callable[[Any], Awaitable[Any]]  # called with the job's key


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
    """One call to run: ``invoke(key)``, its timeout and its own limiter (or ``None``).

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


def _try_acquire(limiter: anyio.CapacityLimiter) -> bool:
    # acquire() always yields to the scheduler; with a free slot there is no need to.
    try:
        limiter.acquire_nowait()
    except anyio.WouldBlock:
        return False
    return True


def _settle(job: Job, start: float, deadline: float, cancel_called: bool) -> None:
    """Record how ``job`` ended, once its scope has exited."""
    now = anyio.current_time()
    job.duration = now - start
    job._scope = None  # not needed any more; keeping it alive costs memory and GC time
    if job.cancel_reason is not None:
        job.status, job.result = Status.CANCELLED, None
    elif cancel_called or now >= deadline:
        # Also a call that ignored its cancellation, or a sync tool that blocked the loop
        # past its deadline: its result arrived too late and is dropped.
        job.status, job.result = Status.TIMED_OUT, None
    else:
        job.status = Status.DONE


async def run_limited(job: Job, limiter: anyio.CapacityLimiter | None) -> None:
    """Run ``job`` under its deadline, holding its own limiter, then ``limiter`` (the
    node's), if any; record how it ended. Exceptions propagate.

    The job's own (per-resource) limiter is taken first so a call waiting for a busy
    resource does not sit on a node slot another call could use. The deadline is set
    once both are held: time spent queueing never counts.
    """
    own = job.limiter
    if own is not None and not _try_acquire(own):
        await own.acquire()
    try:
        if limiter is not None and not _try_acquire(limiter):
            await limiter.acquire()
        try:
            start = anyio.current_time()
            deadline = start + job.timeout
            with anyio.CancelScope(deadline=deadline) as scope:
                job._scope = scope
                if job.observer is not None:
                    await job.observer.job_started(job)
                job.result = await job.invoke(job.key)
            _settle(job, start, deadline, scope.cancel_called)
        finally:
            if limiter is not None:
                limiter.release()
    finally:
        if own is not None:
            own.release()
    if job.observer is not None:
        await job.observer.job_ended(job)


async def run_sequential(jobs: Sequence[Job]) -> None:
    """Run ``jobs`` one after another, in order."""
    for job in jobs:
        await run_limited(job, None)


async def run_parallel(jobs: Sequence[Job], limiter: anyio.CapacityLimiter) -> None:
    """Run ``jobs`` concurrently in a task group, at most ``limiter`` of them at a time.

    With k slots and N > k jobs that have no limiter of their own, k worker tasks take
    the jobs in order (each still holding a slot per job, so a limiter shared with other
    batches keeps its meaning); otherwise each job gets its own task. Either way at most k
    run at once, and a job's clock starts when it runs.

    If a job raises, the others are cancelled and the first exception in job order is
    raised as itself (not inside an ``ExceptionGroup``).
    """
    errors: list[tuple[int, BaseException]] = []
    queue = iter(enumerate(jobs))

    async def worker(cancel: Callable[[], None]) -> None:
        for index, job in queue:
            try:
                await run_limited(job, limiter)
            except Exception as exc:
                errors.append((index, exc))
                cancel()
                return

    workers: float = len(jobs)
    if all(job.limiter is None for job in jobs):
        workers = min(workers, limiter.total_tokens)
    async with anyio.create_task_group() as tg:
        for _ in range(int(workers)):
            tg.start_soon(worker, tg.cancel_scope.cancel)
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
