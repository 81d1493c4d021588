"""``LiveRuns``: the runs an app is streaming, found by run id for the principal that
started them (anyone else gets 404, so run ids are never confirmed); ``relay`` hands a
run's events to a protocol's encoder across approval pauses.

A ``RunWatcher`` (the run viewer, ``reactcore.viewer.viewer_app``) may be attached to an
app's ``LiveRuns``: it hears of each run listed and unlisted, and may tap its events as
``relay`` passes them on. Without one nothing more is done than one attribute check per
event."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

import anyio
import attrs

from .._approval import Resume
from .._events import Event, RunInterrupted
from .._exceptions import RequestRefused
from .._messages import ToolCall
from .._run import AgentRun

NOT_FOUND = "no such run"

Tap = Callable[[Event, float], None]
"""Hears each event ``relay`` passes on, with when the run sent it (``anyio.current_time()``
clock); called before the event goes to the client, and must not block."""


class RunWatcher(Protocol):
    """Hears of every run an app lists (``opened``: its tap, or ``None`` for no events)
    and unlists (``closed``)."""

    def opened(self, live: LiveRun) -> Tap | None: ...

    def closed(self, live: LiveRun) -> None: ...


@attrs.define(eq=False)
class LiveRun:
    """One streaming run: who started it, its handle, the id clients steer it by
    (``run_id``: the client's own where its protocol names runs, else the handle's), and
    the thread id as its client named it (``None`` without one)."""

    principal: str
    run: AgentRun
    run_id: str
    thread_id: str | None = None
    tap: Tap | None = attrs.field(default=None, init=False)
    """Set by the app's ``RunWatcher`` while the run is listed."""
    _resumed: anyio.Event = attrs.field(factory=anyio.Event, init=False)

    def pending(self) -> tuple[ToolCall, ...]:
        """The calls waiting for a decision (empty unless the run is paused)."""
        result = self.run._result
        if self.run.status_nowait() != "interrupted" or result is None or result.interrupt is None:
            return ()
        calls: tuple[ToolCall, ...] = result.interrupt.calls
        return calls

    async def decide(self, decisions: Resume) -> None:
        """Resume the paused run with ``decisions``: 409 when it is not paused, 422 when
        they do not fit its pending calls (nothing changes then)."""
        if self.run.status_nowait() != "interrupted":
            raise RequestRefused(409, "not_paused", "the run is not waiting for a decision")
        try:
            await self.run.resume(decisions)
        except ValueError as exc:
            raise RequestRefused(422, "bad_decisions", str(exc)) from exc
        self._resumed.set()

    async def wait_resumed(self, seconds: float) -> bool:
        """Whether ``decide`` resumed the run within ``seconds``."""
        with anyio.move_on_after(seconds):
            await self._resumed.wait()
        resumed = self._resumed.is_set()
        self._resumed = anyio.Event()
        return resumed


@attrs.define(eq=False)
class LiveRuns:
    """The runs one app is streaming, at most ``max_runs`` at once (503 beyond)."""

    max_runs: int
    _runs: dict[tuple[str, str], LiveRun] = attrs.field(factory=dict, init=False)
    _reserved: int = attrs.field(default=0, init=False)
    watcher: RunWatcher | None = attrs.field(default=None, init=False)
    """Hears of each run listed and unlisted (the run viewer); ``None``: nobody."""

    def check_room(self) -> None:
        """503 when ``max_runs`` runs are streaming: asked before a stream's answer starts,
        so a client turned away gets a status, not an error inside a stream."""
        if self._reserved >= self.max_runs:
            raise RequestRefused(503, "busy", "too many runs are streaming; try again later")

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the ``max_runs`` places while a run starts and streams."""
        self.check_room()
        self._reserved += 1
        try:
            yield
        finally:
            self._reserved -= 1

    @contextmanager
    def listed(self, live: LiveRun) -> Iterator[LiveRun]:
        """``live`` found by ``find`` while the block runs (409 when its principal already
        streams a run of that id)."""
        key = (live.principal, live.run_id)
        if key in self._runs:
            raise RequestRefused(409, "run_exists", "a run of this id is streaming")
        self._runs[key] = live
        watcher = self.watcher
        try:
            if watcher is not None:
                live.tap = watcher.opened(live)
            yield live
        finally:
            del self._runs[key]
            if watcher is not None:
                live.tap = None
                watcher.closed(live)

    def find(self, principal: str, run_id: str) -> LiveRun:
        """The live run ``run_id`` of ``principal``; 404 for any other (or none): runs are
        listed per principal, so another's id is not even looked at."""
        live = self._runs.get((principal, run_id))
        if live is None:
            raise RequestRefused(404, "not_found", NOT_FOUND)
        return live

    def __len__(self) -> int:
        return len(self._runs)


async def relay(
    live: LiveRun, emit: Callable[[Event], Awaitable[None]], pause_timeout: float
) -> None:
    """Pass every event of ``live``'s run to ``emit``, leg after leg: after a pause for
    approval (``RunInterrupted``) wait up to ``pause_timeout`` for a decision (``decide``)
    and go on with the next leg; return when the run ended, or the pause outlasted it.
    ``live.tap`` (a run viewer's) hears each event first."""
    run = live.run
    while True:
        last: Event | None = None
        async with run.events() as events:
            async for event in events:
                if live.tap is not None:
                    sent = events.sent_at
                    live.tap(event, anyio.current_time() if sent is None else sent)
                await emit(event)
                last = event
        if not isinstance(last, RunInterrupted) or not await live.wait_resumed(pause_timeout):
            return
