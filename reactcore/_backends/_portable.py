"""The portable backend: anyio's task groups and cancel scopes, on either loop.

What every release before the seam ran, kept as the reference the native backends are
tested against (``forced``) and as the shape of the trio one: level-triggered
cancellation, shields respected, every task in a task group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import attrs

from ._base import BatchError, CallScope, Runner, first_error


async def grouped_batch(
    open_group: Callable[[], AbstractAsyncContextManager[Any]],
    cancelled: type[BaseException],
    jobs: Sequence[Any],
    workers: int,
    run: Runner,
) -> None:
    """``Backend.run_batch`` on a task group (an anyio task group or a trio nursery):
    the group's cancel scope stops every worker, wherever it waits."""
    errors: list[BatchError] = []
    queue = iter(enumerate(jobs))

    async def worker(cancel: Callable[[], None]) -> None:
        for index, job in queue:
            try:
                await run(job)
            except cancelled:
                raise
            except BaseException as exc:  # not into the task group: it would wrap it
                errors.append((isinstance(exc, Exception), index, exc))
                cancel()
                return

    async with open_group() as group:
        for _ in range(workers):
            group.start_soon(worker, group.cancel_scope.cancel)
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

    async def run_batch(self, jobs: Sequence[Any], workers: int, run: Runner) -> None:
        await grouped_batch(self.open_group, self.cancelled(), jobs, workers, run)


def _anyio_scope(deadline: float) -> anyio.CancelScope:
    return anyio.CancelScope(deadline=deadline)


PORTABLE = GroupBackend(
    "anyio",
    anyio.current_time,
    _anyio_scope,
    anyio.create_task_group,
    anyio.get_cancelled_exc_class,
)
