"""The event log: a run's events in a JSON lines file, each with the time it happened.

Events carry no time of their own, so the file adds one. Each line is::

    {"t": 0.012345, "event": <reactcore.to_json(event)>}

where ``t`` is seconds since the log was opened, on anyio's clock
(``anyio.current_time()``: a test on a fake clock gets fake times). A file of bare event
objects, one ``to_json(event)`` a line, is read too: its events get evenly spaced times (1
per event) and a warning says so; a file mixes neither form.

``open_event_log(path)`` writes the file: ``await log.record(run)`` reads one leg of the
run's events to its end (call it again after ``run.resume(...)``: the legs share the
clock, so the time waiting for a human shows), or ``await log.write(event, at=...)`` for a
caller that reads the events itself. Each event is timed when the run sent it
(``EventStream.sent_at``), not when the log got it: a reader behind a burst of events (a
batch of calls starting at once, a loaded machine) does not shift them. A handle whose
events carry no send time (a Temporal run) is timed as its events are read.

``read_event_log(path)`` reads one, line by line: memory stays bounded by the longest line
(at most ``MAX_LINE_BYTES``), every line is parsed with reactcore's bounded JSON parser,
and a bad line raises ``EventLogError`` naming its number.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio
import anyio.to_thread
import attrs

from .._events import Event
from .._handle import RunHandle
from .._json import loads
from .._shapes import to_json

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line ``read_event_log`` reads (a ``RunFinished`` holds the whole result)."""

_FLUSH_EVERY = 256  # lines kept before they go to the file (in a worker thread)


class EventLogError(ValueError):
    """Raised by ``read_event_log`` (and ``reactcore timeline``) when a line of an event
    log is not what the format says: ``line`` is its number, from 1."""

    def __init__(self, message: str, *, line: int) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@attrs.frozen
class TimedEvent:
    """One line of an event log: ``event`` (its JSON form) at ``t`` seconds; ``line``
    is where it was read (0 when it comes from a live run); ``timed`` False when the log
    had no times (``t`` is then the line's number)."""

    t: float
    event: dict[str, Any]
    line: int = 0
    timed: bool = True


# --- writing ----------------------------------------------------------------------------


@attrs.define(eq=False)
class EventLog:
    """An event log being written; made by ``open_event_log``."""

    _file: IO[str]
    _origin: float
    _pending: list[str] = attrs.field(factory=list, init=False)
    written: int = attrs.field(default=0, init=False)
    """How many events were written so far."""

    async def write(self, event: Event, *, at: float | None = None) -> None:
        """Add ``event`` that happened at ``at`` (``anyio.current_time()`` then; default:
        now); pass ``events.sent_at`` when reading ``run.events()`` yourself."""
        t = max(0.0, (anyio.current_time() if at is None else at) - self._origin)
        line = json.dumps({"t": round(t, 6), "event": to_json(event)}, separators=(",", ":"))
        self._pending.append(line + "\n")
        self.written += 1
        if len(self._pending) >= _FLUSH_EVERY:
            await self.flush()
        else:
            await anyio.lowlevel.checkpoint()

    async def record(self, run: RunHandle) -> None:
        """Read the events of ``run``'s current leg to its end (``RunFinished``,
        ``RunFailed`` or ``RunInterrupted``), writing each."""
        async with run.events() as events:
            async for event in events:
                await self.write(event, at=getattr(events, "sent_at", None))

    async def flush(self) -> None:
        """Send the lines written so far to the file (done every few hundred lines, and
        when the log closes)."""
        if not self._pending:
            await anyio.lowlevel.checkpoint()
            return
        text, self._pending = "".join(self._pending), []

        def put() -> None:
            self._file.write(text)
            self._file.flush()

        await anyio.to_thread.run_sync(put)


@asynccontextmanager
async def open_event_log(path: str | os.PathLike[str]) -> AsyncIterator[EventLog]:
    """Write an event log to ``path`` (replacing the file): ``async with
    open_event_log("events.jsonl") as log: await log.record(run)``.

    Times in the file count from when the log opened; the file is complete when the block
    ends.
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a file path, got {type(path).__name__}")
    origin = anyio.current_time()
    file = await anyio.to_thread.run_sync(lambda: open(path, "w", encoding="utf-8"))  # noqa: SIM115
    log = EventLog(file, origin)
    try:
        yield log
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await log.flush()
            finally:
                await anyio.to_thread.run_sync(file.close)


# --- reading ----------------------------------------------------------------------------


def _lines(file: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    number = 0
    while True:
        raw = file.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise EventLogError(f"longer than {MAX_LINE_BYTES} bytes", line=number)
        yield number, raw


def _object(raw: bytes, number: int) -> dict[str, Any] | None:
    """The line's JSON object, or None for a blank line."""
    if not raw.strip():
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EventLogError(f"not UTF-8 text ({exc.reason})", line=number) from None
    try:
        value = loads(text)
    except ValueError as exc:
        raise EventLogError(f"not JSON: {exc}", line=number) from None
    if not isinstance(value, dict):
        raise EventLogError(f"not a JSON object but {type(value).__name__}", line=number)
    return value


def _event(value: Any, number: int) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise EventLogError(
            'no event: expected {"t": <seconds>, "event": {"type": ...}} or an event object',
            line=number,
        )
    return value


def iter_event_log(file: IO[bytes], warnings: list[str] | None = None) -> Iterator[TimedEvent]:
    """The events of an event log opened in binary mode, one at a time (see the module
    docstring). A warning about the file (no times in it) is appended to ``warnings``."""
    timed: bool | None = None
    last = 0.0
    for number, raw in _lines(file):
        value = _object(raw, number)
        if value is None:
            continue
        has_time = "t" in value and "event" in value
        if timed is None:
            timed = has_time
            if not timed and warnings is not None:
                warnings.append(
                    "the events carry no times: they are drawn evenly spaced, one unit "
                    "apart (record them with reactcore.viewer.open_event_log for real times)"
                )
        elif has_time != timed:
            first = "timed" if timed else "bare events"
            raise EventLogError(f"the first line was {first} and this one is not", line=number)
        if not timed:
            yield TimedEvent(float(number), _event(value, number), number, timed=False)
            continue
        t = value["t"]
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
            raise EventLogError(f'"t" must be a number of seconds, got {t!r}', line=number)
        if t < last:
            raise EventLogError(f"time goes backwards ({t} after {last})", line=number)
        last = float(t)
        yield TimedEvent(last, _event(value["event"], number), number)


def read_event_log(
    path: str | os.PathLike[str], warnings: list[str] | None = None
) -> list[TimedEvent]:
    """All the events of the event log at ``path``; ``EventLogError`` for a bad line."""
    with open(path, "rb") as file:
        return list(iter_event_log(file, warnings))
