"""The bench's workloads: the tools a batch of N calls runs, and what each call should cost.

A workload is a cycle of tool kinds (call ``i`` calls ``pattern[i % len(pattern)]``); each
kind makes its tool function for a run and says how long a call of it takes when nothing
gets in the way (its *nominal* time), from which the ideal makespan follows.

- ``io``: async tools awaiting a sleep of L;
- ``blocking``: sync tools calling ``time.sleep(L)`` (worker threads at work);
- ``overhead``: async no-ops (the cost of the machinery per call);
- ``mixed``: async and sync tools taking L, tools running past the timeout, tools raising;
- ``cancel``: async tools that hold until the caller cancels the batch (``Probe``).
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import attrs

from .._messages import ToolCall, ToolResponse
from .._tools import Tool

SEED_TIMEOUT = 300.0  # the seed's toolExecutionTimeout default: 5 minutes
HOLD_POLL = 0.05  # how often a holding tool looks whether it was released
HOLD_MAX = 60.0  # a holding tool gives up after this, whatever happens


@attrs.define(eq=False)
class Probe:
    """What the tools of one run report, from any thread: starts, cleanups, release.

    ``all_running`` is set when ``target`` calls have started; holding tools return once
    ``released`` is set (the bench sets it after measuring, so abandoned calls end).
    """

    target: int = 0
    started: int = 0
    cleaned: int = 0
    all_running: threading.Event = attrs.field(factory=threading.Event)
    released: threading.Event = attrs.field(factory=threading.Event)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def start(self) -> None:
        with self._lock:
            self.started += 1
            if self.started == self.target:
                self.all_running.set()

    def clean(self) -> None:
        with self._lock:
            self.cleaned += 1


@attrs.frozen
class Timing:
    """A run's latency L and the node's timeout (both in seconds)."""

    latency: float
    timeout: float


ToolFactory = Callable[[Timing, Probe], Callable[..., Any]]


def _io(timing: Timing, probe: Probe) -> Callable[..., Any]:
    async def io() -> str:
        await anyio.sleep(timing.latency)
        return "ok"

    return io


def _blocking(timing: Timing, probe: Probe) -> Callable[..., Any]:
    def blocking() -> str:
        time.sleep(timing.latency)
        return "ok"

    return blocking


def _noop(timing: Timing, probe: Probe) -> Callable[..., Any]:
    async def noop() -> str:
        return "ok"

    return noop


def _slow(timing: Timing, probe: Probe) -> Callable[..., Any]:
    async def slow() -> str:
        await anyio.sleep(2 * timing.timeout)
        return "too late"

    return slow


def _boom(timing: Timing, probe: Probe) -> Callable[..., Any]:
    async def boom() -> str:
        raise ValueError("boom")

    return boom


def _hold(timing: Timing, probe: Probe) -> Callable[..., Any]:
    async def hold() -> str:
        probe.start()
        try:
            with anyio.move_on_after(HOLD_MAX):
                # A thread-safe flag: the seed runs this on its own loop in a pool thread.
                while not probe.released.is_set():  # noqa: ASYNC110
                    await anyio.sleep(HOLD_POLL)
        finally:
            probe.clean()
        return "released"

    return hold


@attrs.frozen
class ToolKind:
    """One tool of the bench: how to make it, and its nominal time per call."""

    make: ToolFactory
    nominal: Callable[[Timing], float]


KINDS: Mapping[str, ToolKind] = {
    "io": ToolKind(_io, lambda t: t.latency),
    "blocking": ToolKind(_blocking, lambda t: t.latency),
    "noop": ToolKind(_noop, lambda t: 0.0),
    "slow": ToolKind(_slow, lambda t: t.timeout),  # cut at the timeout
    "boom": ToolKind(_boom, lambda t: 0.0),
    "hold": ToolKind(_hold, lambda t: 0.0),
}


@attrs.frozen
class Workload:
    """A batch of N calls cycling through ``pattern``; see the module docstring."""

    name: str
    description: str
    pattern: tuple[str, ...]
    sizes: tuple[int, ...]  # the default N of a full run
    quick_sizes: tuple[int, ...]
    timeout_factor: float | None = None  # timeout = factor × L (else the seed's 300 s)
    cancel: bool = False  # measured as cancel → return, not as a makespan

    def timing(self, latency: float) -> Timing:
        if self.timeout_factor is None:
            return Timing(latency, SEED_TIMEOUT)
        return Timing(latency, max(self.timeout_factor * latency, 0.01))

    def calls(self, n: int) -> list[ToolCall]:
        return [ToolCall(f"call{i}", self.pattern[i % len(self.pattern)]) for i in range(n)]

    def tools(self, timing: Timing, probe: Probe) -> list[Tool]:
        return [
            Tool.from_function(KINDS[name].make(timing, probe), name=name)
            for name in dict.fromkeys(self.pattern)
        ]

    def timeouts(self, n: int) -> int:
        """How many of N calls run past the timeout by design."""
        return sum(1 for c in self.calls(n) if c.name == "slow")

    def ideal(self, n: int, k: int, timing: Timing) -> float:
        """The makespan of the calls started in order on ``k`` slots at nominal times."""
        durations = [KINDS[c.name].nominal(timing) for c in self.calls(n)]
        return list_schedule(durations, k)


def list_schedule(durations: Sequence[float], k: int) -> float:
    """When the last of ``durations`` ends, each started in order on the first free of k slots."""
    slots = [0.0] * max(1, min(k, len(durations)))
    for duration in durations:
        heapq.heappush(slots, heapq.heappop(slots) + duration)
    return max(slots)


WORKLOADS: Mapping[str, Workload] = {
    w.name: w
    for w in (
        Workload("io", "async tools awaiting a sleep of L", ("io",), (10, 100, 1000), (4, 16)),
        Workload("blocking", "sync tools in time.sleep(L)", ("blocking",), (10, 100), (4, 16)),
        Workload("overhead", "async no-op tools", ("noop",), (10, 100, 1000), (10, 100)),
        Workload(
            "mixed",
            "3 async + 3 sync tools of L, 2 past the timeout (3L), 2 raising, per 10",
            ("io", "io", "io", "blocking", "blocking", "blocking", "slow", "slow", "boom", "boom"),
            (10, 100),
            (40,),
            timeout_factor=3.0,
        ),
        Workload(
            "cancel",
            "async tools holding until the caller cancels the batch",
            ("hold",),
            (10, 100),
            (8,),
            cancel=True,
        ),
    )
}


def answer_kind(response: ToolResponse) -> str:
    """``ok``, ``timeout``, ``cancelled`` or ``error``: how a call was answered."""
    if not response.is_error:
        return "ok"
    text = response.response_data
    if text.startswith("Error: Tool execution timed out"):
        return "timeout"
    if text.startswith("Error: Tool execution was cancelled"):
        return "cancelled"
    return "error"
