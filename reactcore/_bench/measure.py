"""Measuring: every (workload, N) × executor, R times, on each backend; one loop.

A makespan sample is the wall time of one ``run()``. A cancel sample starts the batch in
a task, waits (on a thread-safe event the tools set, no sleeps) until as many calls run as
the executor allows at once, cancels the caller's scope, and takes the time from
``cancel()`` to the batch returning, and how many started calls had run their ``finally``
by then. Repeats are interleaved across executors, so drift hits them alike; each run is
prepared, and what it left behind is settled, outside the timing. A run whose ideal
makespan at the executor's real concurrency exceeds the budget is skipped, and listed.
"""

from __future__ import annotations

import concurrent.futures
import gc
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

import anyio
import anyio.to_thread
import attrs

from .._messages import ToolResponse
from .executors import Case, Executor, Setup, executors_for
from .seed_baseline import default_pool_size, seed_pool
from .workloads import WORKLOADS, Workload, answer_kind


class Progress(Protocol):
    """Told of each sample before it is taken (and of skipped ones, in bulk)."""

    def step(self, label: str, count: int = 1) -> None: ...


@attrs.frozen
class Plan:
    """What to measure; ``sizes`` of None means each workload's own defaults."""

    workloads: tuple[Workload, ...]
    sizes: tuple[int, ...] | None = None
    latency: float = 0.05
    max_parallel: int = 5
    repeat: int = 5
    backends: tuple[str, ...] = ("asyncio", "trio")
    agent: bool = False
    budget: float = 2.5
    quick: bool = False
    pool_size: int = attrs.field(factory=default_pool_size)

    def sizes_for(self, workload: Workload) -> tuple[int, ...]:
        if self.sizes is not None:
            return self.sizes
        return workload.quick_sizes if self.quick else workload.sizes

    def cases(self) -> list[Case]:
        return [
            Case(w, n, w.timing(self.latency), self.agent)
            for w in self.workloads
            for n in self.sizes_for(w)
        ]

    def steps(self) -> int:
        """How many samples the plan takes (skipped ones included)."""
        per_backend = sum(
            len(executors_for(c.n, self.max_parallel)) * self.repeat for c in self.cases()
        )
        return per_backend * len(self.backends)


@attrs.frozen
class Sample:
    """One timed run: its seconds, its answers; for a cancel, who ran and who cleaned up."""

    seconds: float
    responses: Sequence[ToolResponse] = ()
    running: int = 0
    cleaned: int = 0


@attrs.frozen
class Measurement:
    """The samples of one executor on one case and backend, and what they showed.

    For ``cancel`` the samples are the latencies from ``cancel()`` to return; ``complete``
    (every call answered, in order, in every repeat) is then None.
    """

    workload: str
    executor: str
    backend: str
    n: int
    k: int
    agent: bool
    latency_s: float
    timeout_s: float
    concurrency: int
    ideal_s: float | None
    samples_s: tuple[float, ...] = ()
    answers: Mapping[str, int] = attrs.field(factory=dict)
    complete: bool | None = None
    running_at_cancel: int | None = None
    cleaned_at_return: int | None = None
    skipped: str | None = None

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.samples_s) if self.samples_s else None


async def time_batch(setup: Setup) -> Sample:
    """The wall time of one run."""
    start = time.perf_counter()
    responses = await setup.run()
    return Sample(time.perf_counter() - start, responses)


async def time_cancel(setup: Setup) -> Sample:
    """Cancel a run once its calls are running; the latency to return, and the cleanups."""
    probe = setup.probe
    scope = anyio.CancelScope()
    end: list[tuple[float, int]] = []

    async def batch() -> None:
        try:
            with scope:
                await setup.run()
            end.append((time.perf_counter(), probe.cleaned))
        finally:
            probe.all_running.set()  # never leave the waiter below hanging

    async with anyio.create_task_group() as tg:
        tg.start_soon(batch)
        await anyio.to_thread.run_sync(probe.all_running.wait, abandon_on_cancel=True)
        running = probe.started
        start = time.perf_counter()
        scope.cancel()
    if not scope.cancelled_caught:
        raise RuntimeError("the batch ended before it was cancelled: the bench is broken")
    returned, cleaned = end[0]
    return Sample(returned - start, (), running, cleaned)


async def _sample(
    ex: Executor, case: Case, plan: Plan, pool: concurrent.futures.ThreadPoolExecutor
) -> Sample:
    setup = ex.prepare(case, plan.max_parallel, pool)
    setup.probe.target = ex.concurrency(case.n, plan.max_parallel, plan.pool_size)
    timer: Callable[[Setup], Awaitable[Sample]] = (
        time_cancel if case.workload.cancel else time_batch
    )
    gc.collect()
    try:
        return await timer(setup)
    finally:
        await setup.settle()


def _measurement(
    ex: Executor, case: Case, plan: Plan, backend: str, samples: Sequence[Sample]
) -> Measurement:
    k = ex.k(case.n, plan.max_parallel)
    concurrency = ex.concurrency(case.n, plan.max_parallel, plan.pool_size)
    ideal = None if case.workload.cancel else case.workload.ideal(case.n, k, case.timing)
    found = Measurement(
        case.workload.name,
        ex.name,
        backend,
        case.n,
        k,
        case.agent,
        case.timing.latency,
        case.timing.timeout,
        concurrency,
        ideal,
    )
    if not samples:
        planned = case.workload.ideal(case.n, concurrency, case.timing)
        return attrs.evolve(
            found, skipped=f"ideal {planned:.3g} s at {concurrency} at once > budget"
        )
    seconds = tuple(s.seconds for s in samples)
    if case.workload.cancel:
        return attrs.evolve(
            found,
            samples_s=seconds,
            running_at_cancel=min(s.running for s in samples),
            cleaned_at_return=min(s.cleaned for s in samples),
        )
    ids = [c.id for c in case.workload.calls(case.n)]
    complete = all([r.id for r in s.responses] == ids for s in samples)
    middle = sorted(samples, key=lambda s: s.seconds)[(len(samples) - 1) // 2]
    answers = Counter(answer_kind(r) for r in middle.responses)
    return attrs.evolve(found, samples_s=seconds, answers=dict(answers), complete=complete)


async def measure_case(
    case: Case,
    plan: Plan,
    backend: str,
    pool: concurrent.futures.ThreadPoolExecutor,
    progress: Progress,
) -> list[Measurement]:
    """Every executor on ``case``, the repeats interleaved."""
    found = executors_for(case.n, plan.max_parallel)
    runnable = []
    for ex in found:
        concurrency = ex.concurrency(case.n, plan.max_parallel, plan.pool_size)
        if case.workload.cancel or case.workload.ideal(case.n, concurrency, case.timing) <= (
            plan.budget
        ):
            runnable.append(ex)
        else:
            progress.step(f"{case.workload.name} N={case.n} {ex.name}: skipped", plan.repeat)
    samples: dict[Executor, list[Sample]] = {ex: [] for ex in found}
    for _ in range(plan.repeat):
        for ex in runnable:
            progress.step(f"{case.workload.name} N={case.n} {ex.name} ({backend})")
            samples[ex].append(await _sample(ex, case, plan, pool))
    return [_measurement(ex, case, plan, backend, samples[ex]) for ex in found]


async def _warm_up(plan: Plan, pool: concurrent.futures.ThreadPoolExecutor) -> None:
    """One untimed run of each executor, so threads exist and code paths are warm."""
    overhead = WORKLOADS["overhead"]
    case = Case(overhead, 2 * plan.pool_size, overhead.timing(0.0), plan.agent)
    for ex in executors_for(case.n, plan.max_parallel):
        await _sample(ex, case, plan, pool)


async def run_backend(plan: Plan, backend: str, progress: Progress) -> list[Measurement]:
    """Every case of ``plan`` on the running backend."""
    with seed_pool(plan.pool_size) as pool:
        await _warm_up(plan, pool)
        found: list[Measurement] = []
        for case in plan.cases():
            found += await measure_case(case, plan, backend, pool, progress)
    return found


def run_plan(plan: Plan, progress: Progress) -> list[Measurement]:
    """Every case of ``plan`` on every backend it names."""
    gc.collect()
    gc.freeze()  # what is loaded by now stays: the collection before each sample is quick
    found: list[Measurement] = []
    for backend in plan.backends:
        found += anyio.run(run_backend, plan, backend, progress, backend=backend)
    return found
