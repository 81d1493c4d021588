"""Thread ownership: one live run per thread, the claim taken before the run reads its
checkpoint and released when it ends; a second run gets ``ThreadBusy``.

``hold_lease`` turns a saver's blocking claim primitives (acquire, renew, release: a
``LeaseBackend``) into that claim, with a keeper task that renews it and relays cancel
requests (``request_cancel``) to the run. A claim that can lapse (a lease with a TTL)
fences its writes: the saver keeps the claim's token per (thread, owner) and stores a
checkpoint of that owner only while the token is still the thread's current one; a stale
owner's write raises ``LeaseLost``. ``LocalLeases`` is the claim among the runs of one
process (``MemorySaver``, and any saver without a ``claim`` of its own).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any, Literal, Protocol, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import attrs

from .._config import check_thread_id
from .._exceptions import LeaseLost, ThreadBusy
from .._logging import get_logger
from ._protocol import Saver

_T = TypeVar("_T")

Renewal = Literal["held", "cancel", "lost"]
"""What renewing a claim found: still ours, ours with a cancel request, or taken away."""

_log = get_logger(component="leases")

WAIT_POLL = 0.05
"""How often (seconds) a run that waits for a thread tries again."""


class LeaseBackend(Protocol):
    """The blocking primitives of one kind of claim, turned into ``claim`` by
    ``hold_lease`` (each method is called in a worker thread, or inline when cheap)."""

    def try_acquire(self, thread_id: str, owner: str) -> str | None:
        """Take ``thread_id`` for ``owner``: ``None`` when taken, else who holds it."""
        ...

    def renew(self, thread_id: str, owner: str) -> Renewal:
        """Keep the claim alive; say whether it is still ours and whether to cancel."""
        ...

    def release(self, thread_id: str, owner: str) -> None:
        """Give the claim up (nothing happens if ``owner`` no longer holds it)."""
        ...


Call = Callable[[Callable[..., Any], str, str], Any]


@attrs.define(eq=False)
class Lease:
    """What the claims of reactcore's savers give their block: the thread, its owner and,
    once the claim was taken over, ``lost``: the ``LeaseLost`` the run ends with."""

    thread_id: str
    owner: str
    lost: LeaseLost | None = None


async def _inline(function: Callable[..., _T], *args: Any) -> _T:
    await anyio.lowlevel.checkpoint()
    return function(*args)


async def _in_thread(function: Callable[..., _T], *args: Any) -> _T:
    return await anyio.to_thread.run_sync(function, *args)


@asynccontextmanager
async def hold_lease(
    backend: LeaseBackend,
    thread_id: str,
    owner: str,
    *,
    wait: float,
    heartbeat: float,
    on_cancel: Callable[[], None],
    lost_after: float | None = None,
    in_thread: bool = True,
) -> AsyncIterator[Lease]:
    """``claim`` for ``backend``: acquire (waiting up to ``wait`` seconds), renew every
    ``heartbeat`` seconds while the block runs, release when it ends (shielded).

    A claim that another owner took over, or that could not be renewed for
    ``lost_after`` seconds (its TTL: by then another process may have taken it), is
    lost: the lease's ``lost`` is set, then ``on_cancel()`` is called.
    """
    check_thread_id(thread_id)
    lease = Lease(thread_id, owner)
    call = _in_thread if in_thread else _inline
    deadline = anyio.current_time() + wait
    while True:
        # Shielded: an acquisition that succeeded is always followed by its release.
        with anyio.CancelScope(shield=True):
            holder = await call(backend.try_acquire, thread_id, owner)
        if holder is None:
            break
        remaining = deadline - anyio.current_time()
        if remaining <= 0:
            raise ThreadBusy(thread_id, holder)
        await anyio.sleep(min(WAIT_POLL, remaining))
    failure: Exception | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_keep, call, backend, lease, heartbeat, on_cancel, lost_after)
            try:
                yield lease
            except Exception as exc:  # raised after the group, as itself
                failure = exc
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await call(backend.release, thread_id, owner)
            except Exception as exc:  # the claim lapses at its TTL; the run's outcome stands
                _log.warning("lease_release_failed", thread_id=thread_id, error=repr(exc))
    if failure is not None:
        raise failure


async def _keep(
    call: Call,
    backend: LeaseBackend,
    lease: Lease,
    heartbeat: float,
    on_cancel: Callable[[], None],
    lost_after: float | None,
) -> None:
    """Renew the claim until cancelled; tell the run when it must stop."""
    thread_id, owner = lease.thread_id, lease.owner
    renewed = anyio.current_time()
    while True:
        await anyio.sleep(heartbeat)
        try:
            verdict: Renewal = await call(backend.renew, thread_id, owner)
        except Exception as exc:
            _log.warning("lease_renew_failed", thread_id=thread_id, error=repr(exc))
            if lost_after is not None and anyio.current_time() - renewed > lost_after:
                reason = (
                    f"its lease could not be renewed for {lost_after:g} s, so another owner "
                    "may have taken it over"
                )
                lease.lost = LeaseLost(thread_id, owner, reason=reason)
                on_cancel()
                return
            continue
        renewed = anyio.current_time()
        if verdict == "lost":
            _log.warning("lease_lost", thread_id=thread_id, run_id=owner)
            lease.lost = LeaseLost(thread_id, owner)
        if verdict != "held":
            on_cancel()
        if verdict == "lost":
            return


OUTSIDE_WRITE = "a checkpoint write outside any run"
"""Who holds a thread, for ``ThreadBusy``, while a ``put`` outside any claim writes it."""


@attrs.define(eq=False)
class _Holder:
    owner: str | None  # None: puts outside any claim, for the time of their writes
    cancel: bool = False
    writes: int = 0

    def name(self) -> str:
        return OUTSIDE_WRITE if self.owner is None else f"run {self.owner}"


@attrs.define(eq=False)
class LocalLeases:
    """Claims among the runs of this process: a table guarded by a threading lock (so
    runs on several event loops may share it)."""

    _held: dict[str, _Holder] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def try_acquire(self, thread_id: str, owner: str) -> str | None:
        with self._lock:
            holder = self._held.get(thread_id)
            if holder is not None:
                return holder.name()
            self._held[thread_id] = _Holder(owner)
            return None

    @contextmanager
    def writing(self, thread_id: str, owner: str) -> Iterator[None]:
        """Hold ``thread_id`` for one write of a checkpoint of run ``owner``: at once
        when ``owner`` claims it; when nobody does, as a write outside any claim (others
        such may write beside it; a claim meanwhile is ``ThreadBusy``); when another run
        does, ``ThreadBusy`` naming it."""
        with self._lock:
            holder = self._held.get(thread_id)
            if holder is not None and holder.owner not in (None, owner):
                raise ThreadBusy(thread_id, holder.name())
            outside = holder is None or holder.owner is None
            if outside:
                holder = self._held.setdefault(thread_id, _Holder(None))
                holder.writes += 1
        try:
            yield
        finally:
            if outside:
                with self._lock:
                    assert holder is not None
                    holder.writes -= 1
                    if not holder.writes:
                        del self._held[thread_id]

    def renew(self, thread_id: str, owner: str) -> Renewal:
        with self._lock:
            holder = self._held.get(thread_id)
            if holder is None or holder.owner != owner:
                return "lost"
            return "cancel" if holder.cancel else "held"

    def release(self, thread_id: str, owner: str) -> None:
        with self._lock:
            holder = self._held.get(thread_id)
            if holder is not None and holder.owner == owner:
                del self._held[thread_id]

    def request_cancel(self, thread_id: str) -> bool:
        with self._lock:
            holder = self._held.get(thread_id)
            if holder is None or holder.owner is None:
                return False
            holder.cancel = True
            return True

    def claim(
        self, thread_id: str, owner: str, wait: float, on_cancel: Callable[[], None]
    ) -> AbstractAsyncContextManager[Lease]:
        return hold_lease(
            self,
            thread_id,
            owner,
            wait=wait,
            heartbeat=0.1,
            on_cancel=on_cancel,
            in_thread=False,
        )


_fallback_leases: weakref.WeakKeyDictionary[Any, LocalLeases] = weakref.WeakKeyDictionary()
_fallback_lock = threading.Lock()


def _leases_of(saver: Any) -> LocalLeases:
    """The process-local claims of a saver that has no ``claim`` of its own."""
    with _fallback_lock:
        try:
            leases = _fallback_leases.get(saver)
            if leases is None:
                leases = _fallback_leases[saver] = LocalLeases()
        except TypeError:
            raise TypeError(
                f"{type(saver).__name__} has no claim() and cannot be weakly referenced: "
                "implement LeasingSaver.claim to give its threads ownership"
            ) from None
        return leases


def claim_thread(
    saver: Saver, thread_id: str, *, owner: str, wait: float, on_cancel: Callable[[], None]
) -> AbstractAsyncContextManager[object]:
    """Own ``thread_id`` through ``saver`` (see ``LeasingSaver``): its own ``claim``, or
    process-local ownership for a saver without one. The thread id is checked first
    (``check_thread_id``), whatever the saver."""
    check_thread_id(thread_id)
    claim = getattr(saver, "claim", None)
    if callable(claim):
        result: AbstractAsyncContextManager[object] = claim(
            thread_id, owner=owner, wait=wait, on_cancel=on_cancel
        )
        return result
    return _leases_of(saver).claim(thread_id, owner, wait, on_cancel)


async def request_cancel(saver: Saver, thread_id: str) -> bool:
    """Ask the run owning ``thread_id`` to stop, through ``saver``; whether one did."""
    check_thread_id(thread_id)
    ask = getattr(saver, "request_cancel", None)
    if callable(ask):
        answer: bool = await ask(thread_id)
        return answer
    await anyio.lowlevel.checkpoint()
    return _leases_of(saver).request_cancel(thread_id)
