"""The portable backend: anyio's task groups and cancel scopes, on either loop.

What every release before the seam ran, kept as the reference the native backends are
tested against (``using``) and as the shape of the trio one: level-triggered
cancellation, shields respected, every task in a task group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import anyio.lowlevel
import attrs

from ._base import BatchError, CallScope, Runner, first_error


async def grouped_batch(
    backend: GroupBackend, jobs: Sequence[Any], workers: int, run: Runner
) -> None:
    """``Backend.run_batch`` on a task group (an anyio task group or a trio nursery):
    the group's cancel scope stops every worker, wherever it waits.

    Workers are started as they are needed: one, then after each turn of the loop as
    many again while jobs are left unclaimed (every worker started so far then waits
    inside a job), up to ``workers``.
    """
    cancelled = backend.cancelled()
    errors: list[BatchError] = []
    claimed = 0

    async def worker(cancel: Callable[[], None]) -> None:
        nonlocal claimed
        while claimed < len(jobs):
            index = claimed
            claimed = index + 1
            try:
                await run(jobs[index])
            except cancelled:
                raise
            except BaseException as exc:  # not into the task group: it would wrap it
                errors.append((isinstance(exc, Exception), index, exc))
                claimed = len(jobs)  # no job starts any more
                cancel()
                return

    async with backend.open_group() as group:
        group.start_soon(worker, group.cancel_scope.cancel)
        started = 1
        while started < workers:
            await backend.checkpoint()  # a turn: the workers run until they wait or end
            unclaimed = len(jobs) - claimed
            if not unclaimed:
                break
            more = min(started, unclaimed, workers - started)
            for _ in range(more):
                group.start_soon(worker, group.cancel_scope.cancel)
            started += more
    error = first_error(errors)
    if error is not None:
        raise error


@attrs.frozen
class GroupBackend:
    """``Backend`` on a task group and its cancel scopes: anyio's (``PORTABLE``) or
    trio's own (``_trio.TRIO``), which differ only in whose functions these are."""

    name: str
    clock: Callable[[], float]
    call_scope: Callable[[float], CallScope]  # a cancel scope with that deadline
    open_group: Callable[[], AbstractAsyncContextManager[Any]]
    cancelled: Callable[[], type[BaseException]]  # the loop's cancellation exception
    checkpoint: Callable[[], Awaitable[None]]  # one turn of the loop (cancellable)

    async def run_batch(self, jobs: Sequence[Any], workers: int, run: Runner) -> None:
        await grouped_batch(self, jobs, workers, run)


def _anyio_scope(deadline: float) -> anyio.CancelScope:
    return anyio.CancelScope(deadline=deadline)


PORTABLE = GroupBackend(
    "anyio",
    anyio.current_time,
    _anyio_scope,
    anyio.create_task_group,
    anyio.get_cancelled_exc_class,
    anyio.lowlevel.checkpoint,
)
