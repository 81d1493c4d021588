"""The node's thread budget: sync tools in real worker threads, abandoned threads counted
until they end, and the wait for a thread kept out of the call's clock — the same on
asyncio and trio."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from reactcore import AgentToolNode, ReactAgent, ToolResponseMessage, check_cancelled, tool
from reactcore._threads import ThreadBudget
from reactcore.models.scripted import ScriptedChatModel
from tests.helpers import asks, call, calls_state
from tests.helpers import response_texts as texts

pytestmark = pytest.mark.anyio


class Bodies:
    """Counts the tool bodies running at once, in any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.started: list[str] = []

    def enter(self, name: str) -> None:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(name)

    def leave(self) -> None:
        with self.lock:
            self.running -= 1


async def wait_for(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` until it holds: the end of a worker thread has no event to await."""
    with anyio.fail_after(10):
        while not condition():  # noqa: ASYNC110 - set from a worker thread, no event
            await anyio.sleep(0.005)


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "sequential-wrapped"])
async def test_abandoned_threads_stay_bounded_and_queueing_never_times_out(
    parallel: bool,
) -> None:
    """Four sync calls that ignore their 50 ms timeout keep their threads: the node returns
    on time (the model reads the timeout), ``abandoned_threads`` is 4 and each thread is
    logged once. With ``max_tool_threads=4`` the next batch (another run of the same node)
    queues without running, longer than its own 200 ms timeout, and yet none of its calls
    times out: once the stuck threads end, all of them run. Never more than 4 bodies at
    once."""
    release = threading.Event()
    bodies = Bodies()

    @tool(timeout=0.05)
    def stuck(i: int) -> str:
        bodies.enter("stuck")
        try:
            release.wait(10)
            return "late"
        finally:
            bodies.leave()

    @tool(timeout=0.2)
    def quick(i: int) -> str:
        bodies.enter("quick")
        bodies.leave()
        return "ok"

    node = AgentToolNode(
        [stuck, quick],
        parallel_tool_execution=parallel,
        wrap_sync_tools_as_async=not parallel,
        max_parallel_tools=4,
        max_tool_threads=4,
    )
    second: dict[str, Any] = {}
    try:
        with anyio.fail_after(5), capture_logs() as logs:
            first = await node(calls_state(*(call(f"s{i}", "stuck", i=i) for i in range(4))))
        assert texts(first) == ["Error: Tool execution timed out after 0.05s (tool 'stuck')"] * 4
        assert node.abandoned_threads == 4
        abandoned = [e for e in logs if e["event"] == "tool_thread_abandoned"]
        assert sorted(e["call_id"] for e in abandoned) == ["s0", "s1", "s2", "s3"]  # once each
        assert {e["log_level"] for e in abandoned} == {"warning"}

        async def run_second() -> None:
            second.update(await node(calls_state(*(call(f"q{i}", "quick", i=i) for i in range(4)))))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_second)
            await anyio.wait_all_tasks_blocked()
            await anyio.sleep(0.3)  # longer than quick's timeout, all of it in the queue
            assert bodies.started == ["stuck"] * 4  # no quick call has run
            release.set()
        assert texts(second) == ["ok"] * 4
        assert node.abandoned_threads == 0  # every slot came back from an ended thread
        assert bodies.most <= 4
    finally:
        release.set()
        with anyio.move_on_after(5):
            await wait_for(lambda: bodies.running == 0 and node.abandoned_threads == 0)


async def test_abandoned_thread_ends_at_its_next_check_cancelled() -> None:
    """A timed-out sync tool that calls ``check_cancelled()`` in its loop is abandoned, then
    stops at its next check: the count goes back to 0 and, with the acting log, the end is
    logged."""
    stop = threading.Event()
    ended = threading.Event()

    @tool(timeout=0.05)
    def polling() -> str:
        try:
            while not stop.wait(0.005):
                check_cancelled()
            return "stopped from outside"
        finally:
            ended.set()

    node = AgentToolNode([polling], wrap_sync_tools_as_async=True, enable_acting_log=True)
    try:
        with capture_logs() as logs:
            with anyio.fail_after(5):
                update = await node(calls_state(call("p", "polling")))
            assert texts(update) == ["Error: Tool execution timed out after 0.05s (tool 'polling')"]
            assert node.abandoned_threads == 1
            await wait_for(lambda: node.abandoned_threads == 0)
        assert ended.is_set() and not stop.is_set()
        ends = [(e["event"], e["call_id"]) for e in logs if e["event"].startswith("tool_thread")]
        assert ends == [("tool_thread_abandoned", "p"), ("tool_thread_ended", "p")]
    finally:
        stop.set()
        ended.wait(5)


async def test_thread_that_ends_before_its_call_is_not_abandoned() -> None:
    """A sync tool that returns in time gives its slot back with the call: nothing counted
    as abandoned, nothing logged, the budget is free again."""

    @tool
    def fine(i: int) -> int:
        return i * 2

    node = AgentToolNode([fine], parallel_tool_execution=True, max_tool_threads=1)
    with capture_logs() as logs:
        update = await node(calls_state(*(call(str(i), "fine", i=i) for i in range(6))))
    assert texts(update) == ["0", "2", "4", "6", "8", "10"]
    assert node.abandoned_threads == 0
    assert node._threads.in_use == 0
    assert not [e for e in logs if e["event"].startswith("tool_thread")]


async def test_cancelled_run_abandons_its_thread_and_the_agent_counts_it() -> None:
    """Cancelling a run whose sync tool blocks abandons the thread: the run ends at once
    (``RunCancelled``), ``agent.abandoned_threads`` is 1 until the tool returns, and a new
    run of the same agent (``max_tool_threads=1``) waits for that thread, then runs."""
    release = threading.Event()
    entered = threading.Event()

    @tool
    def block(key: str) -> str:
        entered.set()
        release.wait(10)
        return f"value of {key}"

    model = ScriptedChatModel(
        [asks(("1", "block", {"key": "a"})), asks(("2", "block", {"key": "b"})), "done"]
    )
    agent = ReactAgent("a", model, tools=[block], wrap_sync_tools_as_async=True, max_tool_threads=1)
    try:
        with anyio.fail_after(5):
            async with agent.start("go") as run:
                await anyio.to_thread.run_sync(entered.wait, 5)
                run.cancel()
                await run.wait()
        assert run.status == "cancelled"
        assert agent.abandoned_threads == 1
        entered.clear()
        with anyio.fail_after(5):
            async with agent.start("again") as second:
                await anyio.wait_all_tasks_blocked()
                assert not entered.is_set()  # queued behind the abandoned thread
                release.set()
                result = await second.result()
        assert result.text == "done"
        assert agent.abandoned_threads == 0
        tool_messages = [m for m in result.messages if isinstance(m, ToolResponseMessage)]
        assert tool_messages[-1].responses[0].response_data == "value of b"
    finally:
        release.set()
        with anyio.move_on_after(5):
            await wait_for(lambda: agent.abandoned_threads == 0)


async def test_call_cancelled_before_its_thread_starts_never_runs_the_tool() -> None:
    """A thread hand-off cancelled before the thread started is skipped: the function never
    runs, nothing counts as abandoned, and the slot is free again once the call ends."""
    budget = ThreadBudget(1)
    ran = threading.Event()
    slot = await budget.reserve()
    assert budget.in_use == 1
    with anyio.CancelScope() as scope:
        scope.cancel()
        await slot.run_sync(ran.set)
    slot.close()
    assert scope.cancelled_caught
    assert (budget.in_use, budget.abandoned) == (0, 0)
    assert not ran.is_set()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_thread_that_outlives_its_event_loop_gives_its_slot_back(backend: str) -> None:
    """A node used in one event loop, then in another (``anyio.run`` twice): a thread
    abandoned in the first that ends after that loop has closed no longer counts, and the
    next loop's call gets the one-thread budget and runs."""
    release = threading.Event()

    @tool(timeout=0.05)
    def stuck() -> str:
        release.wait(10)
        return "late"

    @tool
    def quick() -> str:
        return "ok"

    node = AgentToolNode([stuck, quick], wrap_sync_tools_as_async=True, max_tool_threads=1)

    async def ask(name: str) -> dict[str, Any]:
        with anyio.fail_after(5):
            return await node(calls_state(call(name, name)))

    try:
        first = anyio.run(ask, "stuck", backend=backend)
        assert texts(first) == ["Error: Tool execution timed out after 0.05s (tool 'stuck')"]
        assert node.abandoned_threads == 1
        release.set()
        deadline = time.monotonic() + 5
        while node.abandoned_threads and time.monotonic() < deadline:
            time.sleep(0.005)  # no loop runs now: the thread ends on its own
        assert node.abandoned_threads == 0
        assert texts(anyio.run(ask, "quick", backend=backend)) == ["ok"]
        assert node._threads.in_use == 0
    finally:
        release.set()
