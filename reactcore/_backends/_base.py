"""What the scheduler asks of a backend (see the package docstring)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

Runner = Callable[[Any], Awaitable[None]]  # runs one job; what it raises ends the batch
# (is a plain Exception, index of the job, the exception): how ``first_error`` orders them.
BatchError = tuple[bool, int, BaseException]


class CallScope(Protocol):
    """The scope one call runs in: entered (``with scope:``) around the call's body.

    ``cancel()`` stops that call alone — before the body is entered it only marks the
    scope, and the body must then not start; ``cancel_called`` says whether it was
    cancelled or its deadline passed. A cancellation from outside the scope passes
    through it; its own ends at its ``with`` block.
    """

    @property
    def cancel_called(self) -> bool: ...

    def cancel(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc_info: Any) -> bool | None: ...


class Backend(Protocol):
    """A loop's clock, call scopes and batches (see the package docstring)."""

    @property
    def name(self) -> str: ...

    def clock(self) -> float: ...

    def call_scope(self, deadline: float) -> CallScope: ...

    async def run_batch(self, jobs: Sequence[Any], workers: int, run: Runner) -> None:
        """Run ``jobs`` on at most ``workers`` tasks, each taking the next job in order
        and awaiting ``run(job)``; a task is started only while jobs are left unclaimed
        after a turn of the loop (a batch of jobs that never wait runs on one task).
        When ``run`` raises (not a cancellation), the batch stops: the other jobs are
        cancelled, queued ones never start, and the error is raised (``first_error``).
        Cancelling the caller cancels every job, wherever it waits."""
        ...


def first_error(errors: Sequence[BatchError]) -> BaseException | None:
    """The error a failed batch raises as itself: the first in job order, a
    ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt`` …) before any
    ``Exception``."""
    return min(errors, key=lambda e: e[:2])[2] if errors else None
