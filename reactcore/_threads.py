"""A node's thread budget: at most ``total`` worker threads for its sync tools, the
abandoned ones included, the same on asyncio and trio.

A sync tool runs in a worker thread. When its call times out or is cancelled, the call
ends at once and the thread is *abandoned*: it goes on until the tool returns or reaches
its next ``check_cancelled()``. The budget keeps counting such a thread until it has
really ended, so a node never has more than ``total`` threads alive, and
``ThreadBudget.abandoned`` says how many of them belong to calls that have ended.

A call that will need a thread takes its slot while it queues, before its clock starts
(``ThreadBudget.reserve``, from the scheduler): waiting for a thread never counts against
the call's timeout. ``anyio.to_thread.run_sync`` then gets a limiter that never blocks.
(Left to themselves, anyio's backends differ: on asyncio the thread limiter's token comes
back as soon as the awaiting task is cancelled, on trio only once the thread has ended,
and on both the wait for a token happens inside the caller's deadline.)

A thread that returns while its call waits for it gives nothing to report: the call gives
the slot back as it ends. An abandoned thread reports its own end to the event loop
(``anyio.from_thread.run_sync``); when that loop has ended too, the next ``reserve`` — in
whatever loop uses the node next — counts it, so no slot is lost with the loop.
"""

from __future__ import annotations

import enum
import math
import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
import attrs

from ._logging import Logger, get_logger

T = TypeVar("T")
Describe = Callable[[Any], Mapping[str, Any]]  # a job's key → the fields its logs carry

_SLOT: ContextVar[ThreadSlot | None] = ContextVar("reactcore_thread_slot", default=None)


def _no_fields(key: Any) -> Mapping[str, Any]:
    return {}


class _Thread(enum.Enum):
    """Where one thread hand-off stands; changed under the hand-off's lock."""

    PENDING = "pending"  # handed to anyio, not started
    RUNNING = "running"  # the tool runs in the thread, its caller waits for it
    FINISHED = "finished"  # the tool has returned (or raised)
    SKIPPED = "skipped"  # the caller gave up before the thread started: never run it
    ABANDONED = "abandoned"  # the caller gave up while it ran: it reports its own end


@attrs.define(eq=False)
class _Handoff:
    state: _Thread = _Thread.PENDING
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    cancelled: type[BaseException] = BaseException  # the loop's cancellation exception


# In a worker thread: the hand-off of the call it runs (what ``abandoned_exception`` reads).
_HERE = threading.local()


def abandoned_exception() -> BaseException | None:
    """In a worker thread whose call has ended (timed out or cancelled): the exception
    that stops it — also where the call's cancellation was the native backend's, which
    anyio's ``from_thread.check_cancelled`` cannot see; else None."""
    handoff: _Handoff | None = getattr(_HERE, "handoff", None)
    if handoff is None or handoff.state is not _Thread.ABANDONED:
        return None
    return handoff.cancelled()


@attrs.define(eq=False)
class ThreadSlot:
    """One call's place in the budget: taken while the call queued, given back when the call
    has ended and no thread it started is still alive."""

    budget: ThreadBudget
    key: Any = None
    _alive: int = 0  # threads abandoned by this call that have not ended yet
    _closed: bool = False

    async def run_sync(self, func: Callable[[], T]) -> T:
        """``func()`` in a worker thread; if the caller is cancelled meanwhile, the thread
        is abandoned and keeps this slot until ``func`` has returned."""
        handoff = _Handoff(cancelled=anyio.get_cancelled_exc_class())

        def work() -> Any:
            with handoff.lock:
                if handoff.state is _Thread.SKIPPED:
                    return None  # nobody waits for the result any more
                handoff.state = _Thread.RUNNING
            _HERE.handoff = handoff
            try:
                return func()
            finally:
                _HERE.handoff = None
                with handoff.lock:
                    abandoned = handoff.state is _Thread.ABANDONED
                    handoff.state = _Thread.FINISHED
                if abandoned:
                    self.budget.report_end(self)

        try:
            result: T = await anyio.to_thread.run_sync(
                work, abandon_on_cancel=True, limiter=self.budget.unbounded
            )
            return result
        finally:
            with handoff.lock:
                if handoff.state is _Thread.PENDING:
                    handoff.state = _Thread.SKIPPED
                elif handoff.state is _Thread.RUNNING:
                    handoff.state = _Thread.ABANDONED
                    self._alive += 1

    def close(self) -> None:
        """The call has ended: give the slot back now, or when its last thread ends."""
        self._closed = True
        if self._alive:
            self.budget.abandon(self, self._alive)
        else:
            self.budget.release(self)

    def thread_ended(self) -> None:
        """An abandoned thread has really ended (runs in the event loop's thread)."""
        self._alive -= 1
        if not self._closed:
            return  # ended before its call did: it was never counted as abandoned
        self.budget.thread_ended(self)
        if not self._alive:
            self.budget.release(self)


@attrs.define(eq=False)
class ThreadBudget:
    """At most ``total`` worker threads alive for one node, shared by all its runs.

    ``abandoned`` counts the threads of calls that have ended (timed out or cancelled)
    while their thread still runs; each is logged once (``tool_thread_abandoned``, a
    warning) and, with ``log_ends``, again when it ends (``tool_thread_ended``, info).
    """

    total: int
    log: Logger = attrs.field(factory=get_logger)
    describe: Describe = _no_fields
    log_ends: bool = False
    _abandoned: int = attrs.field(default=0, init=False)
    # Slots whose abandoned thread ended after its event loop had: counted at the next
    # reserve() (in a loop's thread), so an agent used again in a new loop gets them back.
    _orphans: list[ThreadSlot] = attrs.field(factory=list, init=False)
    _orphans_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _limiter: anyio.CapacityLimiter = attrs.field(init=False)
    unbounded: anyio.CapacityLimiter = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._limiter = anyio.CapacityLimiter(self.total)
        # What anyio.to_thread.run_sync waits on: never, since the budget already did.
        self.unbounded = anyio.CapacityLimiter(math.inf)

    @property
    def abandoned(self) -> int:
        """Threads of ended calls that still run."""
        return self._abandoned - len(self._orphans)

    @property
    def in_use(self) -> int:
        """Slots taken: calls that hold one, and ended calls whose threads still run."""
        return int(self._limiter.borrowed_tokens) - len(self._orphans)

    async def reserve(self, key: Any = None) -> ThreadSlot:
        """Wait for a free slot and take it for the call ``key`` (give it back: ``close``)."""
        if self._orphans:
            self._adopt_orphans()
        slot = ThreadSlot(self, key)
        try:
            self._limiter.acquire_on_behalf_of_nowait(slot)
        except anyio.WouldBlock:
            await self._limiter.acquire_on_behalf_of(slot)
        return slot

    def release(self, slot: ThreadSlot) -> None:
        self._limiter.release_on_behalf_of(slot)

    def abandon(self, slot: ThreadSlot, threads: int) -> None:
        self._abandoned += threads
        fields = self.describe(slot.key)
        for _ in range(threads):
            self.log.warning("tool_thread_abandoned", **fields, abandoned_threads=self.abandoned)

    def thread_ended(self, slot: ThreadSlot) -> None:
        self._abandoned -= 1
        if self.log_ends:
            fields = self.describe(slot.key)
            self.log.info("tool_thread_ended", **fields, abandoned_threads=self.abandoned)

    def report_end(self, slot: ThreadSlot) -> None:
        """Tell the event loop that an abandoned thread of ``slot`` has ended; called from
        that thread. If the loop has ended too, the next ``reserve`` counts it."""
        try:
            anyio.from_thread.run_sync(slot.thread_ended)
        except RuntimeError:  # RunFinishedError, or asyncio's "Event loop is closed"
            with self._orphans_lock:
                self._orphans.append(slot)

    def _adopt_orphans(self) -> None:
        with self._orphans_lock:
            orphans, self._orphans = self._orphans, []
        for slot in orphans:
            slot.thread_ended()


def current_slot() -> ThreadSlot | None:
    """The thread slot of the call running in this task, if the scheduler reserved one."""
    return _SLOT.get()


def bind_slot(slot: ThreadSlot | None) -> Any:
    """Make ``slot`` the current task's (returns the token to ``unbind_slot`` with)."""
    return _SLOT.set(slot)


def unbind_slot(token: Any) -> None:
    _SLOT.reset(token)


async def run_in_thread(budget: ThreadBudget, func: Callable[[], T]) -> T:
    """``func()`` in a worker thread counted in ``budget``: in the slot the call reserved
    while it queued, or, for a thread the scheduler did not plan for (an interceptor
    swapped in a sync tool), in a slot taken now."""
    slot = current_slot()
    if slot is not None and slot.budget is budget:
        return await slot.run_sync(func)
    slot = await budget.reserve()
    try:
        return await slot.run_sync(func)
    finally:
        slot.close()
