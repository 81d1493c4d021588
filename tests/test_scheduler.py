"""The batch scheduler on its own: per-job cancellation, deadlines, limits, errors, observers."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from reactcore._scheduler import Job, Status, run_parallel, run_sequential
from tests.helpers import live_tasks

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("scheduler_backend")]


def sleeper(seconds: float, value: Any = "done") -> Any:
    async def invoke(key: Any) -> Any:
        await anyio.sleep(seconds)
        return value

    return invoke


async def test_cancel_one_job_while_the_batch_goes_on() -> None:
    """Job.cancel stops that job alone (status CANCELLED, reason kept); the others finish;
    cancelling a job that is queued, ended or already cancelled returns False."""
    gate = anyio.Event()

    async def wait_gate(key: Any) -> str:
        await gate.wait()
        return "released"

    long = Job(sleeper(30), timeout=60)
    other = Job(wait_gate, timeout=60)
    queued = Job(sleeper(0), timeout=60)
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_parallel, [long, other, queued], 2)
        await anyio.wait_all_tasks_blocked()
        assert long.running and other.running and not queued.running
        assert not queued.cancel("too early")
        assert long.cancel("user asked")
        assert not long.cancel("twice")
        await anyio.wait_all_tasks_blocked()
        gate.set()
    assert (long.status, long.result, long.cancel_reason) == (Status.CANCELLED, None, "user asked")
    assert (other.status, other.result) == (Status.DONE, "released")
    assert queued.status is Status.DONE
    assert not other.cancel()


async def test_deadline_marks_timed_out_and_measures_running_time() -> None:
    """A job past its deadline is TIMED_OUT with no result; duration excludes queueing."""
    slow = Job(sleeper(10), timeout=0.05)
    quick = Job(sleeper(0.01, "q"), timeout=5)
    await run_sequential([slow, quick])
    assert (slow.status, slow.result) == (Status.TIMED_OUT, None)
    assert 0.04 <= slow.duration < 2
    assert (quick.status, quick.result) == (Status.DONE, "q")


def raise_together(count: int, delays: dict[str, float] | None = None) -> Any:
    """An invoke raising its key (an exception) once ``count`` jobs have started, after the
    delay named by the exception's first argument: all of them raise, whichever is
    cancelled first."""
    all_started = anyio.Event()
    started = 0

    async def fail(error: BaseException) -> Any:
        nonlocal started
        started += 1
        if started == count:
            all_started.set()
        with anyio.CancelScope(shield=True):
            await all_started.wait()
            await anyio.sleep((delays or {}).get(str(error.args[0]), 0))
        raise error

    return fail


async def test_first_error_in_job_order_raised_as_itself() -> None:
    """When several jobs raise, siblings are cancelled and the first error in job order (not
    in time: "second" raises earlier) is raised bare, not in an ExceptionGroup."""
    fail = raise_together(2, {"first": 0.01})
    sibling = Job(sleeper(30), timeout=60)
    jobs = [sibling, Job(fail, 60, key=KeyError("first")), Job(fail, 60, key=KeyError("second"))]
    with pytest.raises(KeyError, match="first"):
        await run_parallel(jobs, 3)
    assert sibling.status is None  # cancelled with the batch, never ended


async def test_observer_sees_start_inside_scope_and_end() -> None:
    """An observer is told when a job starts (inside its scope: it can cancel it from there)
    and when it has ended, with its status; the next queued job got the freed slot of the
    shared limiter, which is free again at the end."""
    limiter = anyio.CapacityLimiter(1)
    seen: list[tuple[str, Any]] = []

    class Observer:
        async def job_started(self, job: Job) -> None:
            seen.append(("started", job.key))
            if job.key == "cancel-me":
                job.cancel("observer")

        async def job_ended(self, job: Job) -> None:
            seen.append(("ended", (job.key, job.status)))

    observer = Observer()
    jobs = [Job(sleeper(30), 60, key="cancel-me", observer=observer)]
    jobs.append(Job(sleeper(0), 60, key="b", observer=observer))
    with anyio.fail_after(10):
        await run_parallel(jobs, 1, [limiter])
    # Task start order is the backend's choice (trio shuffles it); each job's pair is not.
    for key, status in (("cancel-me", Status.CANCELLED), ("b", Status.DONE)):
        started = seen.index(("started", key))
        assert seen.index(("ended", (key, status))) == started + 1  # one slot: no overlap
    assert len(seen) == 4
    assert limiter.borrowed_tokens == 0


async def test_more_jobs_than_slots_run_on_k_workers_in_order() -> None:
    """With k slots and N > k plain jobs, k worker tasks take the jobs in order: k run at
    once, and no task is spawned for a job still waiting for a slot."""
    gate = anyio.Event()
    started: list[int] = []

    async def hold(key: Any) -> Any:
        started.append(key)
        await gate.wait()
        return key

    jobs = [Job(hold, 60, key=i) for i in range(10)]
    async with anyio.create_task_group() as tg:
        before = live_tasks()
        tg.start_soon(run_parallel, jobs, 3)
        await anyio.wait_all_tasks_blocked()
        assert started == [0, 1, 2]
        assert live_tasks() - before == 1 + 3  # the batch and its three workers
        gate.set()
    assert [job.result for job in jobs] == list(range(10))
    assert all(job.status is Status.DONE for job in jobs)


async def test_workers_start_only_while_jobs_wait_unclaimed() -> None:
    """Workers start as they are needed: jobs that return without waiting all run on the
    first worker; one that waits gets the next worker started for the jobs behind it,
    which then run while it still waits."""
    workers: list[int] = []

    async def quick(key: Any) -> Any:
        workers.append(anyio.get_current_task().id)
        return key

    jobs = [Job(quick, 60, key=i) for i in range(50)]
    await run_parallel(jobs, 50)
    assert [job.result for job in jobs] == list(range(50))
    assert len(set(workers)) == 1

    gate = anyio.Event()
    workers.clear()

    async def first_waits(key: Any) -> Any:
        if key == 0:
            await gate.wait()
        return await quick(key)

    jobs = [Job(first_waits, 60, key=i) for i in range(50)]
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_parallel, jobs, 50)
        await anyio.wait_all_tasks_blocked()
        assert [job.status for job in jobs[1:]] == [Status.DONE] * 49
        assert jobs[0].status is None and jobs[0].running
        gate.set()
    assert jobs[0].status is Status.DONE
    assert len(set(workers)) == 2  # the first, waiting; the second ran the other 49


async def test_caller_cancelled_while_workers_start_ends_every_started_job() -> None:
    """A cancellation of the caller that lands while workers are still being started
    stops the starting: every job that started has run its cleanup, none ended as done,
    and no worker is left when the batch returns."""
    started: list[int] = []
    ended: list[int] = []

    async def hold(key: Any) -> Any:
        started.append(key)
        try:
            if key == 0:
                scope.cancel()
            await anyio.sleep(60)
        finally:
            ended.append(key)

    jobs = [Job(hold, 60, key=i) for i in range(20)]
    before = live_tasks()
    with anyio.CancelScope() as scope:
        await run_parallel(jobs, 20)
    assert scope.cancelled_caught
    assert started and sorted(ended) == sorted(started)
    assert all(job.status is not Status.DONE for job in jobs)
    assert live_tasks() == before


class Halt(BaseException):
    """A BaseException that is not an Exception (like KeyboardInterrupt)."""


async def test_base_exception_raised_as_itself_before_any_error() -> None:
    """A job raising a BaseException that is not an Exception cancels its siblings and is
    raised bare (no group), even when an earlier job in order raised a plain Exception:
    the more serious one is never hidden behind a tool error."""
    fail = raise_together(2)
    halt = Halt("stop")
    sibling = Job(sleeper(30), timeout=60)
    jobs = [Job(fail, 60, key=KeyError("first")), Job(fail, 60, key=halt), sibling]
    with pytest.raises(Halt) as raised:
        await run_parallel(jobs, 3)
    assert raised.value is halt
    assert sibling.status is None  # cancelled with the batch


async def test_sequential_base_exception_propagates_and_frees_limiters() -> None:
    """In sequential mode a BaseException from a job propagates as itself, the next jobs
    never run, and every limiter it held is free again."""
    shared = anyio.CapacityLimiter(1)
    own = anyio.CapacityLimiter(1)

    async def halt(key: Any) -> Any:
        raise Halt("stop")

    later = Job(sleeper(0), 60)
    with pytest.raises(Halt):
        await run_sequential([Job(halt, 60, limiter=own), later], [shared])
    assert later.status is None
    assert (shared.borrowed_tokens, own.borrowed_tokens) == (0, 0)


async def test_k_workers_also_hold_a_shared_cap_per_job() -> None:
    """With a shared cap, the k-worker path stays (no task per waiting job) and each running
    job holds one cap token: a cap of 2 under a batch limit of 3 lets 2 run, and every
    token is back at the end."""
    gate = anyio.Event()
    started: list[int] = []
    cap = anyio.CapacityLimiter(2)

    async def hold(key: Any) -> Any:
        started.append(key)
        await gate.wait()
        return key

    jobs = [Job(hold, 60, key=i) for i in range(10)]
    async with anyio.create_task_group() as tg:
        before = live_tasks()
        tg.start_soon(run_parallel, jobs, 3, [cap])
        await anyio.wait_all_tasks_blocked()
        assert sorted(started) == [0, 1] and cap.borrowed_tokens == 2
        assert live_tasks() - before == 1 + 3  # the batch and its three workers
        gate.set()
    assert [job.result for job in jobs] == list(range(10))
    assert cap.borrowed_tokens == 0


async def test_each_backend_of_the_seam_runs_these_tests(
    scheduler_backend: str, anyio_backend: str
) -> None:
    """The scheduler tests run on the loop's native backend and on the portable one (the
    fixture reaches the scheduler), and the native one is the loop's own."""
    from reactcore import _backends

    expected = "anyio" if scheduler_backend == "portable" else anyio_backend
    assert _backends.current().name == expected


def test_only_the_backend_seam_uses_asyncio_or_trio_directly() -> None:
    """Library code reaches asyncio and trio through the backend seam only (and the
    Temporal workflow module, whose loop is Temporal's)."""
    import pathlib
    import re

    root = pathlib.Path(__file__).parent.parent / "reactcore"
    allowed = {root / "temporal" / "_workflow.py"}
    direct = re.compile(r"^\s*(import (asyncio|trio)\b|from (asyncio|trio)\b)", re.M)
    found = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "_backends" not in path.parts and path not in allowed and direct.search(path.read_text())
    ]
    assert found == []


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "sequential"])
async def test_a_job_lends_its_limiter_slot_to_the_jobs_it_runs(parallel: bool) -> None:
    """A job holding the one slot of a shared limiter runs a batch of its own (as a
    sub-agent's call runs its child's tools) whose jobs name the same limiter: they take
    turns on the slot their caller holds — no deadlock, never two at once — while a job
    outside waits for the limiter itself until the caller has ended."""
    shared = anyio.CapacityLimiter(1)
    running: list[str] = []
    most = 0
    order: list[str] = []

    async def leaf(key: Any) -> str:
        nonlocal most
        running.append(key)
        most = max(most, len(running))
        await anyio.lowlevel.checkpoint()
        running.remove(key)
        order.append(key)
        return f"{key} done"

    async def caller(key: Any) -> list[Any]:
        inner = [Job(leaf, timeout=60, key=f"inner-{i}") for i in range(3)]
        if parallel:
            await run_parallel(inner, 3, [shared])
        else:
            await run_sequential(inner, [shared])
        order.append(key)
        return [job.result for job in inner]

    outer = Job(caller, timeout=60, key="caller")
    outside = Job(leaf, timeout=60, key="outside")
    with anyio.fail_after(20):  # before lending, the inner jobs waited for the caller's slot
        await run_parallel([outer, outside], 2, [shared])
    assert (outer.status, outer.result) == (Status.DONE, [f"inner-{i} done" for i in range(3)])
    assert (outside.status, outside.result) == (Status.DONE, "outside done")
    assert most == 1 and order[-1] == "outside" and shared.borrowed_tokens == 0
