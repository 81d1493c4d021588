"""Recording a served app's runs for the live viewer: a ``Recorder`` attached to the app's
``LiveRuns`` (``reactcore.serving``) gives each run listed a ``Recording`` — its
``TimelineBuilder`` fed by the events ``relay`` passes on, timed when the run sent them —
and keeps the last ``keep`` finished ones; older ones are dropped, so memory stays bounded
by the runs streaming plus ``keep``.

Everything here runs in the served app's event loop (the viewer is served beside the app,
in the same loop), so no lock is needed.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from typing import Any

import anyio
import attrs

from .._events import Event
from .._exceptions import RequestRefused
from .._shapes import to_json
from ..serving._live import LiveRun, Tap
from ._timeline import TimelineBuilder

KEEP_FINISHED = 20
"""How many finished runs' timelines a viewer keeps to show."""


@attrs.define(eq=False)
class Recording:
    """One run as the viewer sees it: who started it, its ids, its timeline so far.

    ``key`` names it in the viewer's URLs: random, so two principals' runs of the same id
    never collide and no id a client chose appears in a URL. ``live`` is the run's handle
    while it streams (``None`` once it ended: nothing holds the run then)."""

    key: str
    principal: str
    run_id: str
    thread_id: str | None
    started: float  # wall clock, for people
    origin: float  # anyio clock: the timeline's 0
    live: LiveRun | None
    builder: TimelineBuilder = attrs.field(factory=TimelineBuilder)
    ended_status: str | None = None
    _changed: anyio.Event = attrs.field(factory=anyio.Event, init=False)

    def add(self, event: Event, sent_at: float) -> None:
        """Take one of the run's events (a ``Tap``)."""
        try:
            self.builder.add(max(0.0, sent_at - self.origin), to_json(event))
        except ValueError:  # an event this timeline cannot read: counted, not fatal
            self.builder.warnings.append(f"an event could not be drawn: {type(event).__name__}")
        self._touch()

    def end(self) -> None:
        """The run left the live list: a run not done then is being cancelled (its
        stream's block ends, and the run with it)."""
        assert self.live is not None
        run = self.live.run
        self.ended_status = run.status_nowait() if run.done else "cancelled"
        self.live = None
        self._touch()

    def _touch(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def changed(self, seconds: float) -> None:
        """Wait until the timeline changes, at most ``seconds``."""
        with anyio.move_on_after(seconds):
            await self._changed.wait()

    @property
    def status(self) -> str:
        """``running``, ``interrupted`` (waiting for a decision), or how it ended."""
        if self.live is None:
            return self.ended_status or "unknown"
        return self.live.run.status_nowait()

    def summary(self) -> dict[str, Any]:
        """The run as the run list shows it."""
        return {
            "key": self.key,
            "principal": self.principal,
            "runId": self.run_id,
            "threadId": self.thread_id,
            "status": self.status,
            "live": self.live is not None,
            "started": self.started,
        }

    def snapshot(self) -> dict[str, Any]:
        """What the page draws: the summary, the timeline so far (open spans reach now),
        and the calls waiting for a decision."""
        now = None if self.live is None else anyio.current_time() - self.origin
        pending = [] if self.live is None else self.live.pending()
        return {
            **self.summary(),
            "pending": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in pending],
            "timeline": self.builder.timeline(now=now).to_json(),
        }

    def steer(self) -> LiveRun:
        """The run's handle to steer it by; 409 once it ended."""
        if self.live is None:
            raise RequestRefused(409, "run_ended", "the run has ended")
        return self.live


@attrs.define(eq=False)
class Recorder:
    """The runs of one served app, live and recently finished (a ``RunWatcher``)."""

    keep: int = KEEP_FINISHED
    _live: dict[int, Recording] = attrs.field(factory=dict, init=False)
    _finished: OrderedDict[str, Recording] = attrs.field(factory=OrderedDict, init=False)

    def opened(self, live: LiveRun) -> Tap:
        recording = Recording(
            secrets.token_urlsafe(12),
            live.principal,
            live.run_id,
            live.thread_id,
            time.time(),
            anyio.current_time(),
            live,
        )
        self._live[id(live)] = recording
        return recording.add

    def closed(self, live: LiveRun) -> None:
        recording = self._live.pop(id(live), None)
        if recording is None:
            return
        recording.end()
        self._finished[recording.key] = recording
        while len(self._finished) > self.keep:
            self._finished.popitem(last=False)

    def recordings(self) -> list[Recording]:
        """Live runs first, then finished ones; newest first in each."""
        live = sorted(self._live.values(), key=lambda r: r.origin, reverse=True)
        return [*live, *reversed(self._finished.values())]

    def find(self, key: str) -> Recording:
        """The recording named ``key``; 404 when there is none (or it was dropped)."""
        for recording in self._live.values():
            if recording.key == key:
                return recording
        found = self._finished.get(key)
        if found is None:
            raise RequestRefused(404, "not_found", "no such run")
        return found
