"""The run handle: live events and their order, cancelling one tool call or the whole
run, leaving early, and the events policy (backpressure, never blocked by a gone reader)."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from reactcore import (
    AgentRun,
    AssistantMessage,
    Event,
    ModelCallFinished,
    ModelCallStarted,
    ModelDelta,
    ReactAgent,
    RunCancelled,
    RunFailed,
    RunFinished,
    StateUpdated,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
    ToolResponseMessage,
    check_cancelled,
    tool,
)
from reactcore.models.scripted import ScriptedChatModel
from tests.helpers import asks, live_tasks

pytestmark = pytest.mark.anyio


@tool
async def quick(x: int) -> int:
    """Answer at once."""
    return x


async def collect(run: AgentRun) -> list[Event]:
    async with run.events() as events:
        return [event async for event in events]


async def test_event_order_of_a_tool_turn() -> None:
    """Events come in loop order; the stream ends after RunFinished."""
    model = ScriptedChatModel([asks(("c1", "quick", {"x": 1})), "done"])
    agent = ReactAgent("a", model, tools=[quick])
    async with agent.start("go") as run:
        events = await collect(run)
        result = await run.result()
    kinds = [type(e).__name__ for e in events if not isinstance(e, ModelDelta)]
    assert kinds == [
        "ModelCallStarted",
        "ModelCallFinished",
        "StateUpdated",
        "ToolCallStarted",
        "ToolCallFinished",
        "StateUpdated",
        "ModelCallStarted",
        "ModelCallFinished",
        "StateUpdated",
        "RunFinished",
    ]
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result == result
    assert await run.status() == "finished"
    assert [e.iteration for e in events if isinstance(e, ModelCallStarted)] == [0, 1]
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    assert (started.call_id, started.name, started.arguments) == ("c1", "quick", '{"x": 1}')
    deltas = "".join(e.text for e in events if isinstance(e, ModelDelta))
    assert deltas == "done"
    finished = [e for e in events if isinstance(e, ModelCallFinished)]
    assert finished[-1].message == AssistantMessage("done")
    assert [e.node for e in events if isinstance(e, StateUpdated)] == ["model", "tools", "model"]


async def test_stream_is_a_context_manager_of_events() -> None:
    """agent.stream(...) gives the live events; leaving it ends the run."""
    agent = ReactAgent("a", ScriptedChatModel(["hi"]))
    async with agent.stream("go") as events:
        seen = [e async for e in events]
    assert isinstance(seen[-1], RunFinished)
    assert seen[-1].result.text == "hi"


@pytest.mark.parametrize("sync", [False, True])
async def test_cancel_one_tool_call_and_the_run_goes_on(sync: bool) -> None:
    """cancel_tool on a running call (async: cancelled at once; sync in a thread:
    abandoned, it stops at its next check_cancelled) answers the model with the
    cancellation text; its sibling finishes; the run goes on to the final answer."""
    thread_stopped = threading.Event()
    thread_entered = threading.Event()

    @tool
    async def slow_async() -> str:
        await anyio.sleep(30)
        return "never"

    @tool
    def slow_sync() -> str:
        thread_entered.set()
        try:
            while True:
                check_cancelled()
                time.sleep(0.01)
        finally:
            thread_stopped.set()

    name = "slow_sync" if sync else "slow_async"
    model = ScriptedChatModel([asks(("long", name, {}), ("short", "quick", {"x": 2})), "ok"])
    agent = ReactAgent(
        "a", model, tools=[slow_async, slow_sync, quick], parallel_tool_execution=True
    )
    async with agent.start("go") as run, run.events() as events:
        assert not await run.cancel_tool("unknown")
        async for event in events:
            if isinstance(event, ToolCallStarted) and event.call_id == "long":
                if sync:  # cancel once the thread really runs the tool
                    assert await anyio.to_thread.run_sync(thread_entered.wait, 5)
                assert await run.cancel_tool("long", "user got bored")
            if isinstance(event, ToolCallCancelled):
                assert (event.call_id, event.reason) == ("long", "user got bored")
        result = await run.result()
    assert not await run.cancel_tool("long")
    responses = {r.id: r for r in result.messages[2].responses}
    long = responses["long"]
    assert long.response_data == "Error: Tool execution was cancelled by the caller: user got bored"
    assert long.is_error
    assert responses["short"].response_data == "2"
    assert result.text == "ok"
    second = model.requests[1].messages[-1]
    assert isinstance(second, ToolResponseMessage)
    if sync:
        assert await anyio.to_thread.run_sync(thread_stopped.wait, 5)


async def test_cancel_without_reason_and_timeout_events() -> None:
    """A reasonless cancel gives the bare text; a timed-out call sends ToolCallTimedOut
    instead of ToolCallFinished."""

    @tool(timeout=0.05)
    async def stall() -> str:
        await anyio.sleep(30)
        return "x"

    @tool
    async def hang() -> str:
        await anyio.sleep(30)
        return "x"

    model = ScriptedChatModel([asks(("t", "stall", {}), ("h", "hang", {})), "ok"])
    agent = ReactAgent("a", model, tools=[stall, hang], parallel_tool_execution=True)
    seen: list[Event] = []
    async with agent.start("go") as run, run.events() as events:
        async for event in events:
            seen.append(event)
            if isinstance(event, ToolCallStarted) and event.call_id == "h":
                await run.cancel_tool("h")
        result = await run.result()
    ended = {type(e).__name__: e for e in seen if hasattr(e, "call_id")}
    assert isinstance(ended["ToolCallTimedOut"], ToolCallTimedOut)
    assert ended["ToolCallTimedOut"].timeout == 0.05
    assert ended["ToolCallCancelled"].reason is None
    assert "ToolCallFinished" not in ended
    texts = [r.response_data for r in result.messages[2].responses]
    assert texts[1] == "Error: Tool execution was cancelled by the caller"


async def test_tool_end_events_carry_the_answer_the_model_gets() -> None:
    """ToolCallFinished, ToolCallTimedOut and ToolCallCancelled carry the call's
    ToolResponse, the same one the next model request holds (what a protocol adapter
    streams to its client), in their JSON form too."""
    from reactcore import event_from_json, to_json

    @tool(timeout=0.05)
    async def stall() -> str:
        await anyio.sleep(30)
        return "x"

    @tool
    async def hang() -> str:
        await anyio.sleep(30)
        return "x"

    calls = asks(("q", "quick", {"x": 7}), ("t", "stall", {}), ("h", "hang", {}))
    model = ScriptedChatModel([calls, "ok"])
    agent = ReactAgent("a", model, tools=[quick, stall, hang], parallel_tool_execution=True)
    seen: list[Event] = []
    async with agent.start("go") as run, run.events() as events:
        async for event in events:
            seen.append(event)
            if isinstance(event, ToolCallStarted) and event.call_id == "h":
                await run.cancel_tool("h", "not needed")
        result = await run.result()
    ends = [
        e for e in seen if isinstance(e, ToolCallFinished | ToolCallTimedOut | ToolCallCancelled)
    ]
    answered = {r.id: r for r in result.messages[2].responses}
    assert {e.call_id for e in ends} == {"q", "t", "h"}
    for event in ends:
        assert event.response == answered[event.call_id]
        assert event_from_json(to_json(event)).response == event.response  # type: ignore[union-attr]
    by_id = {e.call_id: e.response for e in ends}
    assert by_id["q"] is not None and by_id["q"].response_data == "7"
    assert by_id["h"] is not None
    assert (
        by_id["h"].response_data == "Error: Tool execution was cancelled by the caller: not needed"
    )
    assert by_id["t"] is not None and by_id["t"].is_error


async def test_cancel_the_run_keeps_finished_tool_responses() -> None:
    """run.cancel() mid-batch: result() raises RunCancelled with the messages so far,
    including the responses of the calls that had finished; no task is left."""

    @tool
    async def hang() -> str:
        await anyio.sleep(30)
        return "x"

    model = ScriptedChatModel([asks(("q", "quick", {"x": 5}), ("h", "hang", {})), "never"])
    agent = ReactAgent("a", model, tools=[quick, hang], parallel_tool_execution=True)
    before = live_tasks()
    async with agent.start("go") as run, run.events() as events:
        async for event in events:
            if isinstance(event, ToolCallFinished) and event.call_id == "q":
                await run.cancel()
            last = event
        with pytest.raises(RunCancelled) as info:
            await run.result()
    assert isinstance(last, RunFailed)
    assert isinstance(last.error, RunCancelled)
    await run.wait()  # never raises
    assert await run.status() == "cancelled"
    partial = info.value.messages[-1]
    assert isinstance(partial, ToolResponseMessage)
    assert [(r.id, r.response_data) for r in partial.responses] == [("q", "5")]
    assert live_tasks() == before


async def test_leaving_start_early_cancels_the_run() -> None:
    """Leaving `async with agent.start(...)` before the end cancels the run and waits for
    it: no task keeps running, and every tool's cleanup ran."""
    cleaned = anyio.Event()

    @tool
    async def hang() -> str:
        try:
            await anyio.sleep(30)
        finally:
            cleaned.set()
        return "x"

    agent = ReactAgent("a", ScriptedChatModel([asks(("h", "hang", {}))]), tools=[hang])
    before = live_tasks()
    async with agent.start("go") as run, run.events() as events:
        async for event in events:
            if isinstance(event, ToolCallStarted):
                break
    assert cleaned.is_set()
    assert run.done
    with pytest.raises(RunCancelled):
        await run.result()
    assert live_tasks() == before


async def test_caller_exception_in_start_block_propagates_as_itself() -> None:
    """An exception in the caller's block cancels the run and comes out unwrapped."""
    agent = ReactAgent("a", ScriptedChatModel([asks(("h", "quick", {"x": 1})), "x"]), tools=[quick])
    with pytest.raises(KeyError, match="mine"):
        async with agent.start("go"):
            raise KeyError("mine")


async def test_reader_never_attached_never_blocks_the_run() -> None:
    """With a buffer of 1 and nobody reading, the run still finishes; extra events are
    dropped and counted."""
    model = ScriptedChatModel([asks(("a", "quick", {"x": 1})), "a long answer " * 5])
    agent = ReactAgent("a", model, tools=[quick], max_buffered_events=1)
    async with agent.start("go") as run:
        result = await run.result()
    assert result.text.startswith("a long answer")
    assert run.dropped_events > 5


async def test_a_run_nobody_can_read_builds_no_events() -> None:
    """Once a run knows no reader will attach (``agent.invoke`` keeps its handle), it sends
    no events at all — none kept, none counted as dropped — its tool calls still run, and
    a reader asking afterwards is refused."""
    model = ScriptedChatModel([asks(("a", "quick", {"x": 1}), ("b", "quick", {"x": 2})), "ok"])
    agent = ReactAgent(
        "a", model, tools=[quick], parallel_tool_execution=True, max_buffered_events=1
    )
    async with agent.start("go") as run:
        run.no_reader()
        assert not run.wants_events
        result = await run.result()
        with pytest.raises(RuntimeError):
            run.events()
    assert result.text == "ok"
    assert [r.response_data for r in result.messages[-2].responses] == ["1", "2"]
    assert run.dropped_events == 0


async def test_slow_reader_applies_backpressure_and_closing_releases_the_run() -> None:
    """An attached reader that does not read holds the run at a full buffer; once it
    closes the stream, the run finishes without it."""
    model = ScriptedChatModel(["x" * 200], chunk_size=1)
    agent = ReactAgent("a", model, max_buffered_events=2)
    async with agent.start("go") as run:
        events = run.events()
        first = await events.__anext__()
        assert isinstance(first, ModelCallStarted)
        await anyio.wait_all_tasks_blocked()
        assert not run.done  # blocked on the full buffer, not finished
        await events.aclose()
        with anyio.fail_after(5):
            result = await run.result()
    assert result.text == "x" * 200


async def test_one_reader_per_run() -> None:
    """A second events() reader is refused."""
    agent = ReactAgent("a", ScriptedChatModel(["x"]))
    async with agent.start("go") as run:
        run.events()
        with pytest.raises(RuntimeError, match="already have a reader"):
            run.events()


async def test_errors_end_the_stream_with_run_failed() -> None:
    """A run that fails sends RunFailed with the error; result() raises it as itself."""
    agent = ReactAgent("a", ScriptedChatModel([]))
    async with agent.start("go") as run:
        seen = await collect(run)
        with pytest.raises(Exception, match="0 replies") as info:
            await run.result()
    assert isinstance(seen[-1], RunFailed)
    assert seen[-1].error is info.value


CANCELLED = "Error: Tool execution was cancelled by the caller: on sight"


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_cancel_tool_on_tool_call_started_cancels_or_keeps_the_finished_answer(
    kind: str,
) -> None:
    """100 runs at once, each with four fast parallel calls, each cancelled the moment its
    reader sees ``ToolCallStarted``. Exactly two outcomes, per call: ``cancel_tool`` is
    True and the call's answer is the cancellation, its end event ``ToolCallCancelled``;
    or it is False because the call had already finished — its own answer is kept and its
    end event is ``ToolCallFinished``. Nothing else (a False for a call that then gets
    cancelled, a True for a call that keeps its answer, a missing end event)."""

    @tool
    async def fast_async(x: int) -> int:
        for _ in range(1 + 2 * x):  # a few trips through the scheduler, more for later calls
            await anyio.lowlevel.checkpoint()
        return x

    @tool
    def fast_sync(x: int) -> int:
        return x

    name = f"fast_{kind}"
    outcomes: dict[bool, int] = {True: 0, False: 0}

    async def one(n: int) -> None:
        calls = [(f"c{n}_{i}", name, {"x": i}) for i in range(4)]
        model = ScriptedChatModel([asks(*calls), "done"])
        agent = ReactAgent("a", model, tools=[fast_async, fast_sync], parallel_tool_execution=True)
        said: dict[str, bool] = {}
        ends: dict[str, str] = {}
        async with agent.start("go") as run, run.events() as events:
            async for event in events:
                if isinstance(event, ToolCallStarted):
                    said[event.call_id] = await run.cancel_tool(event.call_id, "on sight")
                elif isinstance(event, ToolCallFinished | ToolCallCancelled | ToolCallTimedOut):
                    assert event.call_id not in ends
                    ends[event.call_id] = type(event).__name__
            result = await run.result()
        answers = {r.id: r for r in result.messages[2].responses}
        for i, (call_id, _, _) in enumerate(calls):
            answer = answers[call_id]
            if said[call_id]:
                assert ends[call_id] == "ToolCallCancelled"
                assert (answer.is_error, answer.response_data) == (True, CANCELLED)
            else:
                assert ends[call_id] == "ToolCallFinished"
                assert (answer.is_error, answer.response_data) == (False, str(i))
            outcomes[said[call_id]] += 1

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for n in range(100):
                tg.start_soon(one, n)
    assert outcomes[True] + outcomes[False] == 400
    print(f"cancel_tool on ToolCallStarted, {kind} tools: {outcomes}")


async def test_cancel_tool_after_the_call_finished_is_false_and_keeps_its_answer() -> None:
    """A reader that reads only once the run has ended sees every ``ToolCallStarted``
    after its call finished: ``cancel_tool`` says False each time and changes nothing —
    the answers the model got and the run's result stay the calls' own."""
    model = ScriptedChatModel([asks(("c1", "quick", {"x": 1}), ("c2", "quick", {"x": 2})), "ok"])
    agent = ReactAgent("a", model, tools=[quick], parallel_tool_execution=True)
    async with agent.start("go") as run:
        await run.wait()
        async with run.events() as events:
            started = [e async for e in events if isinstance(e, ToolCallStarted)]
            said = [await run.cancel_tool(e.call_id) for e in started]
        result = await run.result()
    assert said == [False, False]
    assert [r.response_data for r in result.messages[2].responses] == ["1", "2"]
    assert result.text == "ok"


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_cancel_tool_before_the_body_starts_means_it_never_runs(kind: str) -> None:
    """``ToolCallStarted`` is sent before the call's body starts; while a slow reader has
    not taken it yet (a full buffer holds the run back), ``cancel_tool`` on the call is
    True and the body never runs. The reader still gets ``ToolCallStarted``, then
    ``ToolCallCancelled``; the model reads the cancellation."""
    ran: list[str] = []

    @tool
    async def body_async() -> str:
        ran.append("async")
        return "ran"

    @tool
    def body_sync() -> str:
        ran.append("sync")
        return "ran"

    model = ScriptedChatModel([asks(("c1", f"body_{kind}", {})), "ok"])
    agent = ReactAgent("a", model, tools=[body_async, body_sync], max_buffered_events=1)
    async with agent.start("go") as run, run.events() as events:
        async for event in events:
            if isinstance(event, ModelCallFinished):
                break
        await anyio.wait_all_tasks_blocked()  # the run waits to send ToolCallStarted
        assert await run.cancel_tool("c1", "on sight")
        seen = [type(e).__name__ async for e in events if not isinstance(e, ModelDelta)]
        result = await run.result()
    assert ran == []
    assert seen[:3] == ["StateUpdated", "ToolCallStarted", "ToolCallCancelled"]
    answer = result.messages[2].responses[0]
    assert (answer.is_error, answer.response_data) == (True, CANCELLED)
