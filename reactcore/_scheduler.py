"""Running a batch of tool calls: one after another, or in a task group under a limit.

Each call runs inside its own cancel scope whose deadline is set when the call starts
running — after it got its limiter slots (and its worker-thread slot, if it needs one), so
time spent queueing never counts against it. Cancelling that scope (``Job.cancel``) stops
that one call and the batch goes on; a cancellation from outside stops the whole batch,
and every async call's cleanup has run before the batch returns. The scheduler knows
nothing of tools or messages: it runs ``Job.invoke`` and reports how each job ended.

A running call lends the limiter slots it holds to the calls it runs itself (a sub-agent's
tool calls, inside the call that runs the sub-agent): a nested call that names a limiter
its caller holds takes turns on the caller's slot instead of waiting for another one, so
one limiter shared by a parent and its sub-agent never deadlocks (the child's calls would
otherwise wait for the slot their caller holds until it times out), and what the limiter
bounds is still the calls working at once, over the whole tree.

Scopes, tasks and the clock come from the backend seam (``_backends``): native on asyncio
and on trio, anyio's portable implementation as the reference.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any, Protocol

import anyio
import attrs

from ._backends import PORTABLE, Backend, CallScope, current
from ._threads import ThreadBudget, ThreadSlot, bind_slot, unbind_slot

Invoke = Callable[[Any], Awaitable[Any]]  # called with the job's key


class JobObserver(Protocol):
    """Told when a job starts running (before its body; ``Job.cancel`` works from then on)
    and when it has ended."""

    async def job_started(self, job: Job) -> None: ...

    async def job_ended(self, job: Job) -> None: ...


class Status(enum.Enum):
    """How a job ended."""

    DONE = "done"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


@attrs.define(eq=False)
class Job:
    """One call to run: ``invoke(key)``, its timeout, its own limiter (or ``None``) and,
    when it will run in a worker thread, the thread budget to take a slot from.

    While it runs, ``cancel(reason)`` stops it alone; ``result`` and ``status`` say how it
    ended, ``duration`` how long it ran (seconds, queueing excluded).
    """

    invoke: Invoke
    timeout: float
    limiter: anyio.CapacityLimiter | None = None
    key: Any = None
    observer: JobObserver | None = None
    threads: ThreadBudget | None = None
    status: Status | None = None
    result: Any = None
    duration: float = 0.0
    cancel_reason: str | None = None
    _scope: CallScope | None = None
    # Lending (``_lent``): the limiters the job holds a slot of (or its turn on one), as
    # the job named them; the job it runs inside, if that one holds limiters; the
    # one-token limiters the calls it runs take turns on, per limiter it lends.
    _holds: Sequence[anyio.CapacityLimiter] = attrs.field(default=(), init=False)
    _enclosing: Job | None = attrs.field(default=None, init=False)
    _turns: dict[anyio.CapacityLimiter, anyio.CapacityLimiter] | None = attrs.field(
        default=None, init=False
    )

    @property
    def running(self) -> bool:
        """True between the moment the job got its slots and the moment it ended."""
        return self._scope is not None and self.status is None

    def cancel(self, reason: str = "") -> bool:
        """Cancel this job if it is running (its body then never starts, if it had not
        yet); False if it is not (queued, or ended: its result is kept) or already was."""
        if not self.running or self.cancel_reason is not None:
            return False
        assert self._scope is not None
        self.cancel_reason = reason
        self._scope.cancel()
        return True


# In the task of a running job that holds limiters, and in the tasks it starts (a
# sub-agent's run, its batches' workers: context variables reach them on every backend):
# that job, the innermost one, whose limiter slots the calls it runs borrow (``_lent``).
_RUNNING: ContextVar[Job | None] = ContextVar("reactcore_running_job", default=None)


def _lent(limiter: anyio.CapacityLimiter, enclosing: Job | None) -> anyio.CapacityLimiter | None:
    """Where a job run inside ``enclosing`` takes its turn on ``limiter``: the one-token
    limiter of the innermost enclosing job that holds ``limiter`` (made when first asked
    for), or ``None`` when none holds it (the job then takes ``limiter`` itself)."""
    job = enclosing
    while job is not None:
        if _in(limiter, job._holds):
            lent = job._turns = job._turns if job._turns is not None else {}
            if limiter not in lent:
                lent[limiter] = anyio.CapacityLimiter(1)
            return lent[limiter]
        job = job._enclosing
    return None


def _try_acquire(limiter: anyio.CapacityLimiter) -> bool:
    # acquire() always yields to the scheduler; with a free slot there is no need to.
    try:
        limiter.acquire_nowait()
    except anyio.WouldBlock:
        return False
    return True


def _settle(job: Job, start: float, now: float, deadline: float, cancel_called: bool) -> None:
    """Record how ``job`` ended (at ``now``), once its scope has exited."""
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


def _in(limiter: anyio.CapacityLimiter, limiters: Sequence[Any]) -> bool:
    return any(limiter is other for other in limiters)


async def _acquire(job: Job, limiters: Sequence[anyio.CapacityLimiter]) -> list[Any]:
    """Take the job's own limiter, then ``limiters`` in order (each at most once), then a
    thread slot if the job needs one; what was taken, to ``_release``. Nothing is held if
    the wait is cancelled.

    A job's own limiter that is also one of ``limiters`` (a tool limited by the shared cap
    itself) is taken once, at the cap's place: every job of the batch then takes it in the
    same order, so none holds it while waiting for a slot another holds while waiting for it.
    A limiter that a job this one runs inside holds is not taken: this job takes its turn
    on that job's slot instead (``_lent``), at the same place in the order.
    """
    own = job.limiter
    order = limiters if own is None or _in(own, limiters) else (own, *limiters)
    enclosing = job._enclosing = _RUNNING.get()
    held: list[Any] = []
    try:
        for index, limiter in enumerate(order):
            if index and _in(limiter, order[:index]):
                continue  # the same limiter passed twice: taken once
            turns = None if enclosing is None else _lent(limiter, enclosing)
            taken = limiter if turns is None else turns
            if not _try_acquire(taken):
                await taken.acquire()
            held.append(taken)
        if job.threads is not None:
            held.append(await job.threads.reserve(job.key))
    except BaseException:
        _release(held)
        raise
    job._holds = order
    return held


def _release(held: Sequence[Any]) -> None:
    for taken in reversed(held):
        if isinstance(taken, ThreadSlot):
            taken.close()  # given back now, or when the thread it abandoned ends
        else:
            taken.release()


async def run_limited(
    job: Job, limiters: Sequence[anyio.CapacityLimiter] = (), backend: Backend = PORTABLE
) -> None:
    """Run ``job`` under its deadline, holding its own limiter, then ``limiters``, then a
    thread slot (if ``job.threads``); record how it ended. Exceptions propagate.

    The job's own (per-resource) limiter is taken first so a call waiting for a busy
    resource does not sit on a slot another call could use; every job takes its limiters
    in the same order and each one once, so two batches sharing a limiter cannot deadlock.
    The deadline is set once all are held: time spent queueing never counts. While it
    runs, the job lends the limiter slots it holds to the calls it runs (``_lent``).
    """
    plain = job.limiter is None and not limiters and job.threads is None
    held: Sequence[Any] = () if plain else await _acquire(job, limiters)
    try:
        start = backend.clock()
        deadline = start + job.timeout
        # The tool node finds the call's thread slot here (the task's context), and the
        # calls this one runs the limiter slots it lends them.
        bound = bind_slot(held[-1]) if job.threads is not None else None
        lends = _RUNNING.set(job) if job._holds else None
        try:
            scope = job._scope = backend.call_scope(deadline)
            if job.observer is not None:
                # Outside the call's scope: cancelling the call (``Job.cancel``) while the
                # observer waits (a slow reader of the run's events) never cuts its report
                # short, and the call then ends before its body runs.
                await job.observer.job_started(job)
            with scope:
                if not scope.cancel_called:
                    job.result = await job.invoke(job.key)
        finally:
            if lends is not None:
                _RUNNING.reset(lends)
            if bound is not None:
                unbind_slot(bound)
        _settle(job, start, backend.clock(), deadline, scope.cancel_called)
    finally:
        _release(held)
    if job.observer is not None:
        await job.observer.job_ended(job)


async def run_sequential(
    jobs: Sequence[Job], limiters: Sequence[anyio.CapacityLimiter] = ()
) -> None:
    """Run ``jobs`` one after another, in order, each holding ``limiters`` while it runs."""
    backend = current()
    for job in jobs:
        await run_limited(job, limiters, backend)


async def run_parallel(
    jobs: Sequence[Job], limit: int, limiters: Sequence[anyio.CapacityLimiter] = ()
) -> None:
    """Run ``jobs`` concurrently, at most ``limit`` of them at a time (the batch's own
    bound), each also holding ``limiters`` (caps shared with other batches).

    When no job has a limiter of its own, at most ``limit`` worker tasks take the jobs in
    order: they bound the batch, and no task waits for a slot. Otherwise up to one task
    per job, each job also taking a batch limiter of ``limit``. Either way workers start
    as they are needed (a job that never waits leaves its worker free for the next one),
    and a job's clock starts when it runs.

    If a job raises, the others are cancelled and the exception is raised as itself (not
    inside an ``ExceptionGroup``): the first in job order, a ``BaseException`` that is not
    an ``Exception`` (``KeyboardInterrupt``, ``SystemExit`` …) before any ``Exception``.
    The backend's cancellation is never taken for a job's error.
    """
    backend = current()
    shared: Sequence[anyio.CapacityLimiter] = limiters
    workers = len(jobs)
    if all(job.limiter is None for job in jobs):
        workers = min(workers, limit)
    else:
        shared = (anyio.CapacityLimiter(limit), *limiters)

    await backend.run_batch(
        jobs, workers, functools.partial(run_limited, limiters=shared, backend=backend)
    )
