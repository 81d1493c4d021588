"""Benchmark: ``AgentToolNode`` against a bare anyio task group running the same coroutines.

Two workloads of async tools — no-ops (pure scheduling overhead) and tools sleeping 50 ms
(makespan under a limit) — run through a real ``AgentToolNode``, sequential and parallel
(``max_parallel_tools=k``), on asyncio and trio. Baselines measured in the same run:

- ``bare-native``: the floor without anyio — ``asyncio.gather`` on asyncio; on trio a
  nursery whose tasks each hold a ``trio.CapacityLimiter`` slot under ``move_on_after``;
- ``bare-tg``: one task per coroutine in a task group, no limit;
- ``bare-tg+lim``: the same, each task holding a ``CapacityLimiter(k)`` slot.

Columns: median wall time over the repeats, µs per call, ratio to ``bare-tg`` (``×tg``),
ratio to ``bare-native`` (``×nat``),
ratio to ``bare-tg+lim`` with the same k (``×tg+lim``, the node's own overhead) and, for
sleeping tools, ratio to the ideal makespan ``ceil(N/k)·L`` (``×ideal``; k=1 sequential).
A run whose ideal makespan exceeds the budget is skipped and listed as such.

The ``cancel`` table: 100 tools sleeping 10 s run in parallel; once all are running, the
scope around the run is cancelled; latency from ``cancel()`` to the run returning, and
whether every tool's ``finally`` ran.

Where a parallel no-op call's time went before the backend seam (N = 1,000, k = N;
medians of 5 in one run, then cProfile, py-spy and one-at-a-time timings of each piece;
Python 3.11, anyio 4.16, trio 0.35; µs per call; since the seam, see
``bench_backends.py``):

    ========================================================  =======  =====
    piece                                                     asyncio  trio
    ========================================================  =======  =====
    the backend's own task (bare-native)                          5.7   32.8
    anyio's task group on top of it (bare-tg − bare-native)      18.9    ≈ 0
    the node's own work per call (node-seq), of which:           20.7   31.5
      the call's cancel scope with its deadline (anyio)           6.8   11.9
      two clock reads (start, end)                                1.4    1.3
      four values: request, job, two validated responses          4.1    5.2
      parsing "{}", turning the result into text                  0.7    0.9
      five coroutine layers, bookkeeping, collection              7.7   12.2
    the rest: 1,000 tasks and deadlines alive at once             1.2   14.8
    node-par, total                                              46.5   76.4
    ========================================================  =======  =====

On asyncio two thirds of a call is anyio: its task spawn (19 µs over the loop's own 6)
and its cancel scope (7 µs); on trio it is trio itself — a task, a deadline in its heap
and a cancel scope each cost what the bare nursery pays. The node's own Python (values,
parsing, layers) is 14 µs on asyncio, 20 µs on trio.

    python benchmarks/bench_tool_node.py [--quick] [--backend asyncio|trio|both]
                                         [--repeat R] [--json PATH]
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import resource
import statistics
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import anyio
import attrs
import trio
from _common import backends, fmt, parse

from reactcore import (
    AgentToolNode,
    AssistantMessage,
    OverAllState,
    Tool,
    ToolCall,
    UserMessage,
)

ToolFn = Callable[[], Coroutine[Any, Any, Any]]
Run = Callable[[], Awaitable[None]]
Prepare = Callable[[ToolFn, int], Run]  # (tool function, N) -> the thing to time


# --- what runs ---------------------------------------------------------------------------


async def noop() -> None:
    """A tool that does nothing: all the time measured is scheduling overhead."""


def sleeper(seconds: float) -> ToolFn:
    async def sleep() -> None:
        await anyio.sleep(seconds)

    return sleep


@attrs.frozen
class Workload:
    name: str
    tool: ToolFn
    latency: float  # seconds each call takes when run alone (0 for no-ops)


@attrs.frozen
class Plan:
    """Which sizes and limits to run, and how much sleeping a single run may cost."""

    noop_sizes: tuple[int, ...]
    sleep_sizes: tuple[int, ...]
    repeat: int
    budget: float  # a run whose ideal makespan exceeds this (seconds) is skipped
    cancel_calls: int = 100

    def limits(self, workload: Workload, n: int) -> tuple[int, ...]:
        extra = (100,) if workload.latency and n >= 1000 else ()  # the makespan target case
        return tuple(sorted({5, n, *extra} & set(range(1, n + 1))))


FULL = Plan(noop_sizes=(10, 100, 1_000, 10_000), sleep_sizes=(10, 100, 1_000), repeat=5, budget=10)
QUICK = Plan(noop_sizes=(10, 100, 1_000), sleep_sizes=(10, 100), repeat=3, budget=0.1)


# --- executors: each prepares (outside the timing) a run of N calls to one coroutine -------


def _state(n: int, name: str) -> OverAllState:
    calls = [ToolCall(f"c{i}", name, "{}") for i in range(n)]
    return OverAllState({"messages": [UserMessage("go"), AssistantMessage("", calls)]})


def node_executor(k: int | None) -> Prepare:
    """A real ``AgentToolNode``: sequential when ``k`` is None, else parallel under ``k``."""

    def prepare(fn: ToolFn, n: int) -> Run:
        node = AgentToolNode(
            [Tool.from_function(fn, name="noop")],
            parallel_tool_execution=k is not None,
            max_parallel_tools=k or 1,
        )
        state = _state(n, "noop")

        async def run() -> None:
            out = await node(state)
            assert len(out["messages"][0].responses) == n

        return run

    return prepare


def native_executor(backend: str) -> Prepare:
    """The floor on each backend, with no anyio in between: ``asyncio.gather`` of the
    coroutines on asyncio; on trio a nursery whose tasks each hold a
    ``trio.CapacityLimiter(N)`` slot under ``trio.move_on_after`` (what a call needs: a
    bound and a deadline)."""

    def prepare(fn: ToolFn, n: int) -> Run:
        if backend == "asyncio":

            async def run() -> None:
                await asyncio.gather(*(fn() for _ in range(n)))

            return run
        limiter = trio.CapacityLimiter(n)

        async def task() -> None:
            async with limiter:
                with trio.move_on_after(300):
                    await fn()

        return _spawning(trio.open_nursery, task, n)

    return prepare


def bare_executor(k: int | None) -> Prepare:
    """A bare task group: one task per call, each holding a ``CapacityLimiter(k)`` slot if k."""

    def prepare(fn: ToolFn, n: int) -> Run:
        if k is None:
            task = fn
        else:
            limiter = anyio.CapacityLimiter(k)

            async def task() -> None:
                async with limiter:
                    await fn()

        return _spawning(anyio.create_task_group, task, n)

    return prepare


def _spawning(open_group: Callable[[], Any], task: ToolFn, n: int) -> Run:
    """A run that starts ``n`` tasks of ``task`` in a group (``open_group()``: an anyio task
    group, a trio nursery) and waits for them all."""

    async def run() -> None:
        async with open_group() as group:
            for _ in range(n):
                group.start_soon(task)

    return run


@attrs.frozen
class Executor:
    name: str
    k: int | None  # None: no limit (bare-tg); 1 for sequential
    prepare: Prepare

    def ideal(self, workload: Workload, n: int) -> float:
        return math.ceil(n / (self.k or n)) * workload.latency


def executors(limits: Sequence[int], backend: str) -> list[Executor]:
    found = [Executor("bare-native", None, native_executor(backend))]
    found.append(Executor("bare-tg", None, bare_executor(None)))
    found += [Executor("bare-tg+lim", k, bare_executor(k)) for k in limits]
    found.append(Executor("node-seq", 1, node_executor(None)))
    found += [Executor("node-par", k, node_executor(k)) for k in limits]
    return found


# --- measuring ---------------------------------------------------------------------------


@attrs.frozen
class Row:
    workload: str
    backend: str
    executor: str
    n: int
    k: int | None
    median_s: float | None  # None: skipped
    vs_tg: float | None = None
    vs_native: float | None = None
    vs_tg_lim: float | None = None
    vs_ideal: float | None = None
    note: str = ""

    @property
    def median_ms(self) -> float | None:
        return None if self.median_s is None else self.median_s * 1e3

    @property
    def us_per_call(self) -> float | None:
        return None if self.median_s is None else self.median_s / self.n * 1e6


async def _time(prepare: Prepare, fn: ToolFn, n: int) -> float:
    run = prepare(fn, n)
    gc.collect()
    start = time.perf_counter()
    await run()
    return time.perf_counter() - start


async def measure_case(workload: Workload, n: int, backend: str, plan: Plan) -> list[Row]:
    """All executors on one (workload, N), repeats interleaved so drift hits them alike."""
    found = executors(plan.limits(workload, n), backend)
    runnable = [ex for ex in found if ex.ideal(workload, n) <= plan.budget]
    samples: dict[Executor, list[float]] = {ex: [] for ex in runnable}
    for _ in range(plan.repeat):
        for ex in runnable:
            samples[ex].append(await _time(ex.prepare, workload.tool, n))
    medians = {(ex.name, ex.k): statistics.median(s) for ex, s in samples.items()}
    return [_row(workload, n, backend, plan, ex, medians) for ex in found]


def _row(
    workload: Workload,
    n: int,
    backend: str,
    plan: Plan,
    ex: Executor,
    medians: dict[tuple[str, int | None], float],
) -> Row:
    ideal = ex.ideal(workload, n)
    m = medians.get((ex.name, ex.k))
    if m is None:
        note = f"skipped: ideal {ideal:g} s > budget {plan.budget:g} s"
        return Row(workload.name, backend, ex.name, n, ex.k, None, note=note)
    base = medians.get(("bare-tg+lim", ex.k))  # none for k=1 (sequential)
    return Row(
        workload.name,
        backend,
        ex.name,
        n,
        ex.k,
        m,
        vs_tg=m / medians[("bare-tg", None)],
        vs_native=m / medians[("bare-native", None)],
        vs_tg_lim=m / base if base else None,
        vs_ideal=m / ideal if ideal else None,
    )


@attrs.frozen
class CancelRow:
    backend: str
    executor: str
    n: int
    latency_us: float  # median, cancel() to the run returning
    cleanups_ok: bool  # every call's finally had run when the run returned, in every repeat


async def _cancel_once(prepare: Prepare, n: int) -> tuple[float, bool]:
    running = 0
    all_running = anyio.Event()
    cleaned: list[int] = []

    async def slow() -> None:
        nonlocal running
        running += 1
        if running == n:
            all_running.set()
        try:
            await anyio.sleep(10)
        finally:
            cleaned.append(1)

    run = prepare(slow, n)
    scope = anyio.CancelScope()
    returned_at, cleaned_by_then = 0.0, 0

    async def guarded() -> None:
        nonlocal returned_at, cleaned_by_then
        with scope:
            await run()
        returned_at, cleaned_by_then = time.perf_counter(), len(cleaned)

    gc.collect()
    async with anyio.create_task_group() as tg:
        tg.start_soon(guarded)
        await all_running.wait()
        cancelled_at = time.perf_counter()
        scope.cancel()
    return returned_at - cancelled_at, cleaned_by_then == n


async def measure_cancel(backend: str, plan: Plan) -> list[CancelRow]:
    n = plan.cancel_calls
    rows = []
    for ex in (
        Executor("bare-tg", None, bare_executor(None)),
        Executor("node-par", n, node_executor(n)),
    ):
        results = [await _cancel_once(ex.prepare, n) for _ in range(plan.repeat)]
        latency = statistics.median(r[0] for r in results) * 1e6
        rows.append(CancelRow(backend, ex.name, n, latency, all(r[1] for r in results)))
    return rows


async def run_backend(backend: str, plan: Plan) -> tuple[list[Row], list[CancelRow]]:
    workloads = [
        (Workload("noop", noop, 0.0), plan.noop_sizes),
        (Workload("sleep50ms", sleeper(0.05), 0.05), plan.sleep_sizes),
    ]
    rows = []
    for workload, sizes in workloads:
        for n in sizes:
            rows += await measure_case(workload, n, backend, plan)
    return rows, await measure_cancel(backend, plan)


# --- reporting ---------------------------------------------------------------------------


def print_table(rows: Sequence[Row], cancels: Sequence[CancelRow]) -> None:
    head = (
        f"{'workload':<10} {'backend':<8} {'executor':<12} {'N':>6} {'k':>5} "
        f"{'median ms':>10} {'µs/call':>9} {'×tg':>6} {'×nat':>6} {'×tg+lim':>8} "
        f"{'×ideal':>7}  note"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.workload:<10} {r.backend:<8} {r.executor:<12} {r.n:>6} "
            f"{'-' if r.k is None else r.k:>5} "
            f"{fmt(r.median_ms, '.2f'):>10} {fmt(r.us_per_call, '.2f'):>9} "
            f"{fmt(r.vs_tg, '.2f'):>6} {fmt(r.vs_native, '.2f'):>6} {fmt(r.vs_tg_lim, '.2f'):>8} "
            f"{fmt(r.vs_ideal, '.3f'):>7}  {r.note}"
        )
    print()
    print(
        f"{'cancel':<10} {'backend':<8} {'executor':<12} {'N':>6} {'cancel→return µs':>17}  "
        "all cleanups ran"
    )
    for c in cancels:
        print(
            f"{'':<10} {c.backend:<8} {c.executor:<12} {c.n:>6} {c.latency_us:>17.1f}  "
            f"{c.cleanups_ok}"
        )


def print_targets(rows: Sequence[Row]) -> None:
    """The aims, per backend (``-`` where this run did not measure the case)."""
    print()
    for backend in sorted({r.backend for r in rows}):
        par = {
            (r.workload, r.n, r.k): r
            for r in rows
            if r.backend == backend and r.executor == "node-par" and r.median_s is not None
        }
        overheads = [r.vs_tg for (w, n, _), r in par.items() if w == "noop" and n >= 1000]
        makespan = par.get(("sleep50ms", 1000, 100))
        big = par.get(("noop", 10_000, 10_000))
        checks: list[tuple[str, float | None, float]] = [
            ("no-op ×tg (worst, N ≥ 1000)", max(filter(None, overheads), default=None), 2.0),
            ("makespan ×ideal (N=1000, k=100)", makespan.vs_ideal if makespan else None, 1.10),
            ("10,000 parallel no-ops (s)", big.median_s if big else None, 0.5),
        ]
        print(f"targets    {backend:<8} " + "; ".join(_check(*c) for c in checks))


def _check(name: str, value: float | None, aim: float) -> str:
    verdict = "" if value is None else ": met" if value <= aim else ": MISSED"
    return f"{name} {fmt(value, '.3f')} (aim ≤ {aim:g}{verdict})"


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    rows: list[Row] = []
    cancels: list[CancelRow] = []
    peak: dict[str, float] = {}
    for backend in backends(args):
        found, cancelled = anyio.run(run_backend, backend, plan, backend=backend)
        rows += found
        cancels += cancelled
        peak[backend] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows.sort(key=lambda r: (r.workload, r.n, r.backend))
    print_table(rows, cancels)
    print_targets(rows)
    print("peak RSS   " + "; ".join(f"after {b}: {mb:.0f} MB" for b, mb in peak.items()))
    if args.json:
        data = {
            "rows": [attrs.asdict(r) | {"us_per_call": r.us_per_call} for r in rows],
            "cancel": [attrs.asdict(c) for c in cancels],
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)


if __name__ == "__main__":
    main()
