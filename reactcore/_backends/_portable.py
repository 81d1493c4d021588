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

from ._base import BatchError, Runner, first_error


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
class PortableBackend:
    """``Backend`` through anyio (see the module docstring)."""

    name: str = "anyio"

    def clock(self) -> float:
        return anyio.current_time()

    def call_scope(self, deadline: float) -> anyio.CancelScope:
        return anyio.CancelScope(deadline=deadline)

    async def run_batch(self, jobs: Sequence[Any], workers: int, run: Runner) -> None:
        cancelled = anyio.get_cancelled_exc_class()
        await grouped_batch(anyio.create_task_group, cancelled, jobs, workers, run)


PORTABLE = PortableBackend()
