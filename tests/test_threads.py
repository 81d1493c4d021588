"""The node's thread budget: sync tools in real worker threads, abandoned threads counted
until they end, and the wait for a thread kept out of the call's clock — the same on
asyncio and trio."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import attrs
import pytest
from structlog.testing import capture_logs

from reactcore import (
    AgentToolNode,
    OverAllState,
    ReactAgent,
    RunnableConfig,
    ToolCall,
    ToolResponseMessage,
    check_cancelled,
    tool,
)
from reactcore._batch import pending_calls
from reactcore._scheduler import Job
from reactcore._threads import ThreadBudget
from reactcore._tool_node import CALL_OBSERVER
from reactcore.models.scripted import ScriptedChatModel
from tests.helpers import asks, call, calls_state
from tests.helpers import response_texts as texts

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("scheduler_backend")]


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


@attrs.define
class _Started:
    """A call observer that hands over each call's job as the call starts."""

    jobs: dict[str, Job] = attrs.field(factory=dict)

    async def call_started(self, call: ToolCall, job: Job) -> None:
        self.jobs[call.id] = job

    async def call_ended(self, *args: Any) -> None:
        pass


def time_out(job: Job) -> None:
    """End ``job`` as a timeout would, now: its deadline moved to the present."""
    assert job._scope is not None
    job._scope.deadline = anyio.current_time()


async def end_each_once_in_its_tool(
    node: AgentToolNode,
    state: OverAllState,
    in_tool: Callable[[str], bool],
    end: Callable[[Job], None] = time_out,
) -> dict[str, Any]:
    """``await node(state)``, ending each call (``end``: a timeout by default) only once
    ``in_tool(call_id)`` says its thread is in the tool — so the call's thread is abandoned
    however loaded the machine (a short real timeout may pass before the thread starts,
    and the tool then never runs)."""
    observer = _Started()
    config = RunnableConfig(context={CALL_OBSERVER: observer})
    update: dict[str, Any] = {}

    async def run() -> None:
        update.update(await node(state, config))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        for c in pending_calls(state)[0].tool_calls:
            await wait_for(lambda i=c.id: i in observer.jobs and in_tool(i))
            end(observer.jobs[c.id])
    return update


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "sequential-wrapped"])
async def test_abandoned_threads_stay_bounded_and_queueing_never_times_out(
    parallel: bool,
) -> None:
    """Four sync calls that time out while their tools run (each once its thread is in the
    tool) and ignore it keep their threads: the node returns at once (the model reads the
    timeout), ``abandoned_threads`` is 4 and each thread is logged once. With
    ``max_tool_threads=4`` the next batch (another run of the same node) queues without
    running, longer than its own 200 ms timeout, and yet none of its calls times out: once
    the stuck threads end, all of them run. Never more than 4 bodies at once."""
    release = threading.Event()
    bodies = Bodies()
    in_tool: set[str] = set()

    @tool(timeout=60)
    def stuck(i: int) -> str:
        bodies.enter("stuck")
        in_tool.add(f"s{i}")
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
            asked = calls_state(*(call(f"s{i}", "stuck", i=i) for i in range(4)))
            first = await end_each_once_in_its_tool(node, asked, in_tool.__contains__)
        assert texts(first) == ["Error: Tool execution timed out after 60s (tool 'stuck')"] * 4
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
        # Every slot comes back from an ended thread (the second batch may have run through
        # the first two freed slots, before the last stuck threads told the loop they ended).
        await wait_for(lambda: node.abandoned_threads == 0 and node._threads.in_use == 0)
        assert bodies.most <= 4
    finally:
        release.set()
        with anyio.move_on_after(5):
            await wait_for(lambda: bodies.running == 0 and node.abandoned_threads == 0)


@pytest.mark.parametrize("how", ["timed_out", "cancelled"])
async def test_abandoned_thread_ends_at_its_next_check_cancelled(how: str) -> None:
    """A sync tool whose call times out (or is cancelled) while its thread runs is
    abandoned: the node returns at once with ``abandoned_threads == 1``; then the tool stops
    at its next ``check_cancelled()`` (the code after it never runs), the count goes back
    to 0 and, with the acting log, the end is logged.

    Synchronised on events, not on timing: the call ends only once its thread is in the
    tool, and the tool reaches its check only once the test has seen the count."""
    entered = threading.Event()
    go_on = threading.Event()  # let the abandoned thread reach its check
    ended = threading.Event()
    ran_past_check = threading.Event()

    @tool(timeout=60)
    def polling() -> str:
        entered.set()
        try:
            go_on.wait(10)
            check_cancelled()
            ran_past_check.set()
            return "not stopped"
        finally:
            ended.set()

    node = AgentToolNode([polling], wrap_sync_tools_as_async=True, enable_acting_log=True)
    expected = {
        "timed_out": "Error: Tool execution timed out after 60s (tool 'polling')",
        "cancelled": "Error: Tool execution was cancelled by the caller: enough",
    }

    def cancel(job: Job) -> None:
        assert job.cancel("enough")

    try:
        with capture_logs() as logs, anyio.fail_after(10):
            update = await end_each_once_in_its_tool(
                node,
                calls_state(call("p", "polling")),
                lambda _: entered.is_set(),
                time_out if how == "timed_out" else cancel,
            )
            assert texts(update) == [expected[how]]
            assert node.abandoned_threads == 1
            go_on.set()
            await wait_for(lambda: node.abandoned_threads == 0)
        assert ended.is_set() and not ran_past_check.is_set()
        ends = [(e["event"], e["call_id"]) for e in logs if e["event"].startswith("tool_thread")]
        assert ends == [("tool_thread_abandoned", "p"), ("tool_thread_ended", "p")]
        assert node._threads.in_use == 0
    finally:
        go_on.set()
        ended.wait(5)


async def test_thread_that_ends_before_its_call_is_not_abandoned() -> None:
    """A sync tool that returns in time gives its slot back with the call: nothing counted
    as abandoned, nothing logged, the budget is free again."""

    @tool
    def fine(i: int) -> int:
        return i * 2

    node = AgentToolNode(
        [fine], parallel_tool_execution=True, max_parallel_tools=1, max_tool_threads=1
    )
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
                await run.cancel()
                await run.wait()
        assert await run.status() == "cancelled"
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
    entered = threading.Event()

    @tool(timeout=60)
    def stuck() -> str:
        entered.set()
        release.wait(10)
        return "late"

    @tool
    def quick() -> str:
        return "ok"

    node = AgentToolNode([stuck, quick], wrap_sync_tools_as_async=True, max_tool_threads=1)

    async def ask(name: str) -> dict[str, Any]:
        with anyio.fail_after(5):
            if name == "stuck":  # times out once its thread is in the tool
                asked = calls_state(call(name, name))
                return await end_each_once_in_its_tool(node, asked, lambda _: entered.is_set())
            return await node(calls_state(call(name, name)))

    try:
        first = anyio.run(ask, "stuck", backend=backend)
        assert texts(first) == ["Error: Tool execution timed out after 60s (tool 'stuck')"]
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


async def test_default_thread_budget_never_undercuts_max_parallel_tools() -> None:
    """``max_parallel_tools=50`` without ``max_tool_threads``: the budget is 50 threads, not
    anyio's 40, so 50 sync calls that must all meet (a barrier) run at once — in a node and
    in an agent (whose budget is shared by its runs). Below 40 the default stays 40."""
    k = 50
    barrier = threading.Barrier(k, timeout=20)

    @tool
    def meet(i: int) -> int:
        barrier.wait()  # BrokenBarrierError (an error answer) unless all k run at once
        return i

    node = AgentToolNode([meet], parallel_tool_execution=True, max_parallel_tools=k)
    assert (node.max_tool_threads, node.tool_threads) == (None, k)
    with anyio.fail_after(30):
        update = await node(calls_state(*(call(str(i), "meet", i=i) for i in range(k))))
    assert texts(update) == [str(i) for i in range(k)]

    model = ScriptedChatModel([asks(*((str(i), "meet", {"i": i}) for i in range(k))), "met"])
    agent = ReactAgent("a", model, tools=[meet], parallel_tool_execution=True, max_parallel_tools=k)
    assert agent.tool_node is not None and agent.tool_node.tool_threads == k
    with anyio.fail_after(30):
        result = await agent.invoke("go")
    answers = next(m for m in result.messages if isinstance(m, ToolResponseMessage))
    assert [r.response_data for r in answers.responses] == [str(i) for i in range(k)]
    assert AgentToolNode([meet], max_parallel_tools=5).tool_threads == 40


@pytest.mark.parametrize("make", ["node", "agent"])
def test_explicit_thread_budget_below_max_parallel_tools_is_refused(make: str) -> None:
    """In parallel mode an explicit ``max_tool_threads`` below ``max_parallel_tools`` is a
    ``ValueError`` at construction naming both; equal is fine, and in sequential mode
    (where ``max_parallel_tools`` bounds nothing) a smaller budget is allowed."""

    @tool
    def noop() -> None:
        return None

    def build(**options: Any) -> Any:
        if make == "node":
            return AgentToolNode([noop], **options)
        return ReactAgent("a", ScriptedChatModel([]), tools=[noop], **options)

    with pytest.raises(ValueError, match=r"max_tool_threads=10 is below max_parallel_tools=50"):
        build(parallel_tool_execution=True, max_parallel_tools=50, max_tool_threads=10)
    assert build(parallel_tool_execution=True, max_parallel_tools=8, max_tool_threads=8)
    assert build(max_parallel_tools=50, max_tool_threads=1)  # sequential
