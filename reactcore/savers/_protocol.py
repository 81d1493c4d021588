"""What every saver shares: the ``Checkpoint`` value, the ``Saver`` and ``LeasingSaver``
protocols, thread statuses, and the checks every saver applies before any I/O.

These four methods (``get``, ``put``, ``list``, ``delete``) are all a saver needs; a
saver of your own that has only them keeps working with every run. reactcore's savers
add: ``get(thread_id, checkpoint_id=...)`` for an older checkpoint (the ids ``list``
gives), ``threads``, ``claim`` / ``request_cancel`` (``LeasingSaver``) and
``statistics``.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Protocol

import attrs

from .._config import check_thread_id
from .._messages import ToolCall
from .._state import OverAllState

NextStep = Literal["model", "tools", "end"]


@attrs.frozen
class Checkpoint:
    """The conversation ``thread_id`` after step number ``step`` of run ``run_id``.

    ``next`` is where the loop goes on from (``"end"``: the run finished); ``interrupt``
    holds the tool calls waiting for a human, when the run paused for approval.

    ``checkpoint_id`` is the saver's name for a stored checkpoint (``None`` for one not
    read from a saver): ``saver.get(thread_id, checkpoint_id=...)`` reads it back. It is
    the saver's address, not part of the conversation: equality ignores it, and
    ``dump_checkpoint`` leaves it out.
    """

    thread_id: str
    state: OverAllState
    next: NextStep
    step: int
    run_id: str
    model_calls: int = 0
    interrupt: tuple[ToolCall, ...] | None = None
    created_at: float = 0.0
    metadata: dict[str, Any] = attrs.field(factory=dict, hash=False)
    checkpoint_id: str | None = attrs.field(default=None, eq=False, kw_only=True)


class Saver(Protocol):
    """Where checkpoints live. Every method is async (a saver may do I/O).

    These four methods are all a saver needs; ``LeasingSaver`` adds thread ownership
    across processes (without it, ownership holds among the runs of one process).
    """

    async def get(self, thread_id: str) -> Checkpoint | None:
        """The latest checkpoint of ``thread_id``, or ``None``."""
        ...

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` as the latest of ``thread_id``."""
        ...

    async def list(self, thread_id: str) -> list[Checkpoint]:
        """Every checkpoint of ``thread_id``, oldest first."""
        ...

    async def delete(self, thread_id: str) -> None:
        """Forget ``thread_id``."""
        ...


ThreadStatus = Literal["unfinished", "interrupted", "finished"]


@attrs.frozen
class ThreadInfo:
    """A thread as ``saver.threads()`` lists it, from its latest checkpoint.

    ``status``: ``"finished"`` (its last run ended), ``"interrupted"`` (it waits for a
    human's decision), or ``"unfinished"`` (a run stopped before its end: it crashed, was
    cancelled or failed, or is running right now; ``invoke(None, config)`` resumes it).
    """

    thread_id: str
    status: ThreadStatus
    run_id: str
    step: int
    updated_at: float


def thread_status(checkpoint: Checkpoint) -> ThreadStatus:
    """The status of a thread whose latest checkpoint is ``checkpoint``."""
    if checkpoint.next == "end":
        return "finished"
    return "interrupted" if checkpoint.interrupt else "unfinished"


@attrs.frozen
class SaverStatistics:
    """What a saver holds (``await saver.statistics()``; for one thread:
    ``statistics(thread_id)``), counted by the saver itself.

    ``checkpoints``: the checkpoints stored; ``messages``: the entries of the message
    logs (each message is stored once, however many checkpoints hold it); ``blobs``:
    the large texts and content-part data stored once by content hash; ``stored_bytes``:
    the bytes of all of it as stored (the text of every row; for ``MemorySaver``, the
    text the same records take in ``SqliteSaver``).
    """

    threads: int
    checkpoints: int
    messages: int
    blobs: int
    stored_bytes: int


class LeasingSaver(Saver, Protocol):
    """A saver that also keeps who owns each thread: one live run at a time.

    ``ReactAgent`` claims the thread of every run that has a ``thread_id`` before it
    reads the checkpoint, and holds the claim until the run ends. A saver with no
    ``claim`` method still gets ownership, but only among the runs of this process
    (a table kept per saver object); savers shared by processes must implement it.
    """

    def claim(
        self,
        thread_id: str,
        *,
        owner: str,
        wait: float = 0.0,
        on_cancel: Callable[[], None] = ...,
    ) -> AbstractAsyncContextManager[object]:
        """Own ``thread_id`` for the ``async with`` block, as ``owner`` (a run id).

        Raised on entering: ``ThreadBusy`` when another live run owns the thread, at
        once, or after waiting ``wait`` seconds for it to end; ``ValueError`` for a thread
        id that breaks the rule of ``check_thread_id``. While the block runs, the saver
        calls ``on_cancel()`` when someone asked to cancel the thread
        (``request_cancel``) or when the claim was lost. Leaving releases the claim,
        even when cancelled.

        **Fencing.** A saver whose claims can lapse (a lease with a TTL) must fence the
        writes of the block: ``put`` of a checkpoint whose ``run_id`` is ``owner`` is
        stored only while ``owner``'s claim is still the thread's current one, checked in
        the same atomic write, and otherwise raises ``LeaseLost``. The saver keeps the
        claim's token itself, per (thread, owner), so ``put(thread_id, checkpoint)``
        needs no extra argument. The block's value is the saver's own: reactcore's savers
        give a ``Lease`` (whose ``lost`` the run reports); ``None`` is fine.
        """
        ...

    async def request_cancel(self, thread_id: str) -> bool:
        """Ask the run that owns ``thread_id`` (in any process) to stop; whether one did."""
        ...

    async def threads(
        self,
        *,
        status: ThreadStatus | None = "unfinished",
        after: str | None = None,
        limit: int = 100,
    ) -> builtins.list[ThreadInfo]:
        """A page of threads with ``status`` (``None``: all), ordered by thread id, the
        first after ``after``; the next page starts after the last one's id."""
        ...


def _page(
    infos: Iterable[ThreadInfo], status: ThreadStatus | None, after: str | None, limit: int
) -> builtins.list[ThreadInfo]:
    """The ``threads()`` page of ``infos`` (in any order)."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if after is not None:
        check_thread_id(after)
    chosen = (
        i
        for i in infos
        if (status is None or i.status == status) and (after is None or i.thread_id > after)
    )
    return sorted(chosen, key=lambda i: i.thread_id)[:limit]


def _info(checkpoint: Checkpoint) -> ThreadInfo:
    return ThreadInfo(
        checkpoint.thread_id,
        thread_status(checkpoint),
        checkpoint.run_id,
        checkpoint.step,
        checkpoint.created_at,
    )


def _check_thread(thread_id: str, checkpoint: Checkpoint) -> None:
    """A checkpoint is stored under its own thread, a valid thread id (anything else is
    a caller's bug)."""
    check_thread_id(thread_id)
    if checkpoint.thread_id != thread_id:
        raise ValueError(
            f"cannot store a checkpoint of thread {checkpoint.thread_id!r} "
            f"under thread {thread_id!r}"
        )
