"""AgentToolNode: resolution, both execution paths, limits, timeouts, errors, state,
partial responses, return_direct, caller cancellation, interceptors and logging.

Every test runs on asyncio and trio. Concurrency is synchronised with events and
``anyio.wait_all_tasks_blocked()``; the few time bounds are generous on purpose.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from reactcore import (
    AgentToolNode,
    AssistantMessage,
    DefaultToolExceptionProcessor,
    KeyStrategy,
    OverAllState,
    Remove,
    RunnableConfig,
    ToolCall,
    ToolCallRequest,
    ToolCallResponse,
    ToolContext,
    ToolExecutionError,
    ToolHandler,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    check_cancelled,
    tool,
)
from tests.helpers import call, calls_state, live_tasks

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("scheduler_backend")]


def texts(update: dict[str, Any]) -> list[str]:
    """The response texts of the node's ToolResponseMessage, in order."""
    message = update["messages"][-1]
    assert isinstance(message, ToolResponseMessage)
    return [r.response_data for r in message.responses]


def responses(update: dict[str, Any]) -> tuple[ToolResponse, ...]:
    message = next(m for m in update["messages"] if isinstance(m, ToolResponseMessage))
    return message.responses


@tool
async def echo(text: str) -> str:
    """Echo the text."""
    return text


# --- 1. resolution ------------------------------------------------------------------------


async def test_resolution_order_node_then_dynamic_then_resolver() -> None:
    """Node tools win over dynamic tools, which win over the resolver; unknown names get an
    error response listing the available tools, and the other calls still run."""

    @tool(name="echo")
    async def dynamic_echo(text: str) -> str:
        return "dynamic"

    @tool
    async def only_dynamic() -> str:
        return "from dynamic"

    @tool
    async def only_resolved() -> str:
        return "from resolver"

    asked: list[str] = []

    def resolver(name: str) -> Any:
        asked.append(name)
        return only_resolved if name == "only_resolved" else None

    node = AgentToolNode([echo], tool_resolver=resolver)
    config = RunnableConfig(context={"dynamic_tools": [dynamic_echo, only_dynamic]})
    state = calls_state(
        call("1", "echo", text="node"),
        call("2", "only_dynamic"),
        call("3", "only_resolved"),
        call("4", "missing"),
    )
    update = await node(state, config)
    assert texts(update)[:3] == ["node", "from dynamic", "from resolver"]
    unknown = responses(update)[3]
    assert unknown.is_error
    assert unknown.response_data == (
        "Error: Tool not available: missing. Available tools: echo, only_dynamic"
    )
    assert asked.count("missing") >= 1 and "echo" not in asked


async def test_plain_functions_become_tools() -> None:
    """A plain function passed as a tool is wrapped with @tool."""

    def double(x: int) -> int:
        return 2 * x

    update = await AgentToolNode([double])(calls_state(call("1", "double", x=21)))
    assert texts(update) == ["42"]


# --- 2. sequential path ---------------------------------------------------------------------


async def test_sequential_runs_in_call_order_one_at_a_time() -> None:
    """Sequential mode runs calls in order, never two at once, even if later ones are faster."""
    log: list[str] = []
    running = 0
    most = 0

    @tool
    async def step(name: str, delay: float) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        log.append(f"start {name}")
        await anyio.sleep(delay)
        log.append(f"end {name}")
        running -= 1
        return name

    node = AgentToolNode([step])
    state = calls_state(
        call("a", "step", name="a", delay=0.02), call("b", "step", name="b", delay=0)
    )
    update = await node(state)
    assert log == ["start a", "end a", "start b", "end b"]
    assert most == 1
    assert texts(update) == ["a", "b"]


@pytest.mark.parametrize("wrap", [False, True])
async def test_sync_tools_inline_or_in_threads(wrap: bool) -> None:
    """Sequential sync tools run on the event loop thread unless wrap_sync_tools_as_async."""
    loop_thread = threading.get_ident()

    @tool
    def where() -> bool:
        return threading.get_ident() == loop_thread

    node = AgentToolNode([where], wrap_sync_tools_as_async=wrap)
    update = await node(calls_state(call("1", "where")))
    assert texts(update) == ["false" if wrap else "true"]


# --- 3. parallel path ---------------------------------------------------------------------


async def test_parallel_respects_max_parallel_tools() -> None:
    """At most max_parallel_tools calls run at once; all finish once released."""
    release = anyio.Event()
    running = 0
    most = 0

    @tool
    async def hold(i: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await release.wait()
        running -= 1
        return i

    node = AgentToolNode([hold], parallel_tool_execution=True, max_parallel_tools=3)
    result: dict[str, Any] = {}

    async def run() -> None:
        result.update(await node(calls_state(*(call(str(i), "hold", i=i) for i in range(10)))))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        assert running == 3
        release.set()
    assert most == 3
    assert texts(result) == [str(i) for i in range(10)]


async def test_parallel_sync_tools_use_threads_without_double_acquire() -> None:
    """In parallel mode sync tools run in worker threads; a call holding its node slot never
    acquires the node's limiter again (on asyncio that raises RuntimeError), and the thread
    budget lets max_tool_threads threads run — more than anyio's default of 40."""
    k = 45
    barrier = threading.Barrier(k, timeout=20)
    loop_thread = threading.get_ident()

    @tool
    def meet(i: int) -> bool:
        barrier.wait()  # passes only if all k calls run in threads at the same time
        return threading.get_ident() != loop_thread

    node = AgentToolNode(
        [meet], parallel_tool_execution=True, max_parallel_tools=k, max_tool_threads=k
    )
    update = await node(calls_state(*(call(str(i), "meet", i=i) for i in range(k))))
    assert texts(update) == ["true"] * k


async def test_parallel_sync_tools_limited_to_k_threads() -> None:
    """With k=2 and four blocking sync tools, at most two threads run tools at once."""
    lock = threading.Lock()
    running = 0
    most = 0

    @tool
    def busy(i: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return i

    node = AgentToolNode([busy], parallel_tool_execution=True, max_parallel_tools=2)
    update = await node(calls_state(*(call(str(i), "busy", i=i) for i in range(4))))
    assert texts(update) == ["0", "1", "2", "3"]
    assert most == 2


async def test_per_tool_limiter_on_top_of_node_limit() -> None:
    """A tool's own limiter caps its calls, while other tools use the remaining node slots."""
    release = anyio.Event()
    counts = {"db": 0, "free": 0}
    db_limit = anyio.CapacityLimiter(2)

    async def hold(kind: str) -> str:
        counts[kind] += 1
        await release.wait()
        return kind

    @tool(limiter=db_limit)
    async def db() -> str:
        return await hold("db")

    @tool
    async def free() -> str:
        return await hold("free")

    node = AgentToolNode([db, free], parallel_tool_execution=True, max_parallel_tools=6)
    calls = [call(f"d{i}", "db") for i in range(5)] + [call(f"f{i}", "free") for i in range(3)]
    async with anyio.create_task_group() as tg:
        tg.start_soon(node, calls_state(*calls))
        await anyio.wait_all_tasks_blocked()
        assert counts == {"db": 2, "free": 3}
        release.set()
    assert counts == {"db": 5, "free": 3}
    assert db_limit.borrowed_tokens == 0


# --- 4. order ---------------------------------------------------------------------------


async def test_parallel_responses_in_call_order_whatever_completion_order() -> None:
    """Calls finishing in reverse order still answer in call order, ids and names matching."""
    gates = [anyio.Event() for _ in range(5)]
    finished: list[int] = []

    @tool
    async def gated(i: int) -> int:
        await gates[i].wait()
        finished.append(i)
        return i

    node = AgentToolNode([gated, echo], parallel_tool_execution=True)
    calls = [call(f"id{i}", "gated", i=i) for i in range(5)] + [call("e", "echo", text="x")]
    result: dict[str, Any] = {}

    async def run() -> None:
        result.update(await node(calls_state(*calls)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        for gate in reversed(gates):
            await anyio.wait_all_tasks_blocked()
            gate.set()
    assert finished == [4, 3, 2, 1, 0]
    got = responses(result)
    assert [(r.id, r.name) for r in got] == [(c.id, c.name) for c in calls]
    assert [r.response_data for r in got] == ["0", "1", "2", "3", "4", "x"]


# --- 5. timeouts --------------------------------------------------------------------------


async def test_timeout_clock_starts_when_the_call_runs() -> None:
    """With one slot, a call queued behind another is not timed out for time spent waiting."""

    @tool(timeout=1.0)
    async def nap() -> str:
        await anyio.sleep(0.6)
        return "rested"

    node = AgentToolNode([nap], parallel_tool_execution=True, max_parallel_tools=1)
    update = await node(calls_state(call("1", "nap"), call("2", "nap")))
    assert texts(update) == ["rested", "rested"]


async def test_async_timeout_cancels_runs_cleanup_and_discards_updates() -> None:
    """A timed-out async call gets the timeout text; its finally ran before the node
    returned; its state updates are dropped; other calls keep theirs."""
    cleaned = anyio.Event()

    @tool(timeout=0.05)
    async def hang(ctx: ToolContext) -> str:
        ctx.update["k"] = "from hang"
        try:
            await anyio.sleep_forever()
        finally:
            cleaned.set()
        return "never"

    @tool
    async def write(ctx: ToolContext) -> str:
        ctx.update["other"] = 1
        return "ok"

    for parallel in (False, True):
        cleaned = anyio.Event()
        node = AgentToolNode([hang, write], parallel_tool_execution=parallel)
        update = await node(calls_state(call("1", "hang"), call("2", "write")))
        assert cleaned.is_set()
        assert texts(update) == ["Error: Tool execution timed out after 0.05s (tool 'hang')", "ok"]
        assert responses(update)[0].is_error
        assert "k" not in update and update["other"] == 1


async def test_node_timeout_applies_when_tool_has_none() -> None:
    """tool_execution_timeout is the default; a tool's own timeout overrides it."""

    @tool
    async def slow() -> str:
        await anyio.sleep(5)
        return "late"

    @tool(timeout=5)
    async def patient() -> str:
        await anyio.sleep(0.2)
        return "in time"

    node = AgentToolNode([slow, patient], tool_execution_timeout=0.1, parallel_tool_execution=True)
    update = await node(calls_state(call("1", "slow"), call("2", "patient")))
    assert texts(update) == ["Error: Tool execution timed out after 0.1s (tool 'slow')", "in time"]


@pytest.mark.parametrize("parallel", [False, True])
async def test_sync_timeout_abandons_thread_which_stops_at_check_cancelled(parallel: bool) -> None:
    """A timed-out sync tool's thread is abandoned (the node returns on time) and
    check_cancelled() raises inside it at its next check, ending the thread."""
    stopped = threading.Event()
    release = threading.Event()
    saw_cancel: list[bool] = []

    @tool(timeout=0.1)
    def grind() -> str:
        try:
            while not release.wait(0.01):
                check_cancelled()
            return "released"
        except BaseException:
            saw_cancel.append(True)
            raise
        finally:
            stopped.set()

    node = AgentToolNode(
        [grind, echo], parallel_tool_execution=parallel, wrap_sync_tools_as_async=True
    )
    start = time.monotonic()
    update = await node(calls_state(call("1", "grind"), call("2", "echo", text="e")))
    assert time.monotonic() - start < 3
    assert texts(update)[0] == "Error: Tool execution timed out after 0.1s (tool 'grind')"
    assert texts(update)[1] == "e"
    assert await anyio.to_thread.run_sync(stopped.wait, 5)
    assert saw_cancel == [True]


async def test_inline_sync_tool_past_deadline_counts_as_timed_out() -> None:
    """An inline sync tool cannot be interrupted; if it ends past its deadline its result is
    dropped and it answers with the timeout text, as in every other mode."""

    @tool(timeout=0.05)
    def block(ctx: ToolContext) -> str:
        ctx.update["k"] = 1
        time.sleep(0.15)
        return "too late"

    update = await AgentToolNode([block])(calls_state(call("1", "block")))
    assert texts(update) == ["Error: Tool execution timed out after 0.05s (tool 'block')"]
    assert "k" not in update


async def test_tool_ignoring_cancellation_still_times_out() -> None:
    """An async tool that swallows its cancellation and returns gets the timeout answer."""

    @tool(timeout=0.05)
    async def stubborn() -> str:
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class():
            return "ignored"
        return "done"

    update = await AgentToolNode([stubborn])(calls_state(call("1", "stubborn")))
    assert texts(update) == ["Error: Tool execution timed out after 0.05s (tool 'stubborn')"]


# --- 6. errors ------------------------------------------------------------------------


@tool
async def boom(message: str) -> str:
    raise ValueError(message)


async def test_tool_error_becomes_response_and_run_goes_on() -> None:
    """By default a raising tool answers 'Error: <Type>: <message> (tool ...)'."""
    for parallel in (False, True):
        node = AgentToolNode([boom, echo], parallel_tool_execution=parallel)
        update = await node(
            calls_state(call("1", "boom", message="bad"), call("2", "echo", text="x"))
        )
        assert texts(update) == ["Error: ValueError: bad (tool 'boom')", "x"]
        assert [r.is_error for r in responses(update)] == [True, False]


@pytest.mark.parametrize("parallel", [False, True])
async def test_always_throw_raises_and_cancels_siblings(parallel: bool) -> None:
    """With always_throw the node raises ToolExecutionError (not an ExceptionGroup), chained
    to the tool's exception and carrying the call; running siblings are cancelled and their
    cleanup has run; no task is left behind."""
    sibling_cleaned = anyio.Event()
    sibling_done = False

    @tool
    async def sibling() -> str:
        nonlocal sibling_done
        try:
            await anyio.sleep(10)
            sibling_done = True
        finally:
            sibling_cleaned.set()
        return "finished"

    before = live_tasks()
    node = AgentToolNode(
        [boom, sibling],
        parallel_tool_execution=parallel,
        exception_processor=DefaultToolExceptionProcessor(always_throw=True),
    )
    calls = [call("s", "sibling"), call("b", "boom", message="bad")]
    if not parallel:
        calls.reverse()  # in order, the sibling would never start
    with pytest.raises(ToolExecutionError) as info:
        await node(calls_state(*calls))
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.call.id == "b"
    if parallel:
        assert sibling_cleaned.is_set()
    assert not sibling_done
    assert live_tasks() == before


async def test_bad_arguments_answer_the_model_and_tool_is_not_called() -> None:
    """Malformed JSON or a wrong type is an error response naming the parameter."""
    called = False

    @tool
    async def add(a: int, b: int) -> int:
        nonlocal called
        called = True
        return a + b

    state = calls_state(call("1", "add", a="1", b=2), ToolCall("2", "add", "{not json"))
    update = await AgentToolNode([add])(state)
    first, second = responses(update)
    assert first.is_error and "arguments.a" in first.response_data
    assert "expected an integer" in first.response_data
    assert second.is_error and "not valid JSON" in second.response_data
    assert not called


# --- 7. state -----------------------------------------------------------------------------


async def test_updates_merge_by_strategy_in_call_order_in_both_modes() -> None:
    """Each call writes its own map; maps merge by key strategy in call order, so sequential
    and parallel give the same state even when parallel calls finish in another order."""
    gates: dict[int, anyio.Event] = {}

    @tool
    async def put(i: int, ctx: ToolContext) -> str:
        await gates[i].wait()
        ctx.update["log"] = [i]
        ctx.update["last"] = i
        ctx.update["seen"] = {str(i): True}
        return "ok"

    strategies = {"log": KeyStrategy.APPEND, "seen": KeyStrategy.MERGE}
    state = calls_state(
        *(call(str(i), "put", i=i) for i in range(3)), log=["start"], key_strategies=strategies
    )
    finals = []
    for parallel in (False, True):
        gates = {i: anyio.Event() for i in range(3)}
        node = AgentToolNode([put], parallel_tool_execution=parallel)
        out: dict[str, Any] = {}

        async def run(node: AgentToolNode = node, out: dict[str, Any] = out) -> None:
            out.update(await node(state))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            # Parallel calls finish 2, 0, 1; sequential ones are released in turn.
            for i in (2, 0, 1) if parallel else (0, 1, 2):
                await anyio.wait_all_tasks_blocked()
                gates[i].set()
        finals.append(state.merge(out))
    sequential, parallel_state = finals
    assert sequential["log"] == ["start", 0, 1, 2]
    assert sequential["last"] == 2
    assert sequential["seen"] == {"0": True, "1": True, "2": True}
    assert dict(sequential) == dict(parallel_state)


_values = st.one_of(st.integers(0, 9), st.lists(st.integers(0, 9), max_size=3))
_writes = st.lists(
    st.tuples(st.sampled_from(["r", "a", "m"]), _values, st.integers(0, 3)), max_size=4
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=st.lists(_writes, min_size=1, max_size=6), fail=st.sets(st.integers(0, 5)))
async def test_property_sequential_and_parallel_give_the_same_state(
    plan: list[list[tuple[str, Any, int]]], fail: set[int]
) -> None:
    """For any calls writing any updates (some failing), with parallel calls finishing in a
    scrambled order, the state after the node is the same in both modes, and equals
    merging each successful call's update into the state in call order."""
    strategies = {"r": KeyStrategy.REPLACE, "a": KeyStrategy.APPEND, "m": KeyStrategy.MERGE}

    @tool
    async def write(i: int, ctx: ToolContext) -> str:
        for key, value, delay in plan[i]:
            ctx.update[key] = {str(value): delay} if key == "m" else value
            await anyio.sleep(delay / 1000)
        if i in fail:
            raise RuntimeError("failed")
        return "ok"

    state = calls_state(
        *(call(str(i), "write", i=i) for i in range(len(plan))),
        a=[0],
        key_strategies=strategies,
    )
    finals = []
    for parallel in (False, True):
        node = AgentToolNode([write], parallel_tool_execution=parallel)
        finals.append(state.merge(await node(state)))
    expected = state
    for i, writes in enumerate(plan):
        if i in fail:
            continue
        update: dict[str, Any] = {}
        for key, value, delay in writes:
            update[key] = {str(value): delay} if key == "m" else value
        expected = expected.merge(update)
    expected_data = {k: v for k, v in expected.items() if k != "messages"}
    for final in finals:
        assert {k: v for k, v in final.items() if k != "messages"} == expected_data


async def test_failed_calls_contribute_no_state_and_snapshot_is_private() -> None:
    """A call that raises contributes no updates; mutating the state snapshot a tool gets
    never changes the node's input state."""

    @tool
    async def meddle(ctx: ToolContext) -> str:
        ctx.state["items"].append("mutated")
        ctx.update["items"] = ["added"]
        return "ok"

    @tool
    async def fail(ctx: ToolContext) -> str:
        ctx.update["failed"] = True
        raise RuntimeError("no")

    state = calls_state(call("1", "meddle"), call("2", "fail"), items=["original"])
    update = await AgentToolNode([meddle, fail])(state)
    assert state["items"] == ["original"]
    assert update["items"] == ["added"]
    assert "failed" not in update


async def test_tool_writing_messages_does_not_clobber_the_response() -> None:
    """A tool's own `messages` update lands after the ToolResponseMessage, not instead of it."""

    @tool
    async def note(ctx: ToolContext) -> str:
        ctx.update["messages"] = [UserMessage("a note")]
        return "noted"

    state = calls_state(call("1", "note"))
    update = await AgentToolNode([note])(state)
    merged = state.merge(update)["messages"]
    assert isinstance(merged[-2], ToolResponseMessage)
    assert merged[-2].responses[0].response_data == "noted"
    assert merged[-1] == UserMessage("a note")


# --- 8. partial responses ----------------------------------------------------------------


async def test_partial_response_runs_only_missing_calls() -> None:
    """After a partial ToolResponseMessage only the missing calls run; the update removes
    the old partial message and adds one merged message in call order."""
    ran: list[str] = []

    @tool
    async def job(name: str) -> str:
        ran.append(name)
        return name

    calls = [call("1", "job", name="a"), call("2", "job", name="b"), call("3", "job", name="c")]
    partial = ToolResponseMessage([ToolResponse("2", "job", "b (earlier)")])
    state = OverAllState({"messages": [UserMessage("go"), AssistantMessage("", calls), partial]})
    update = await AgentToolNode([job])(state)
    assert sorted(ran) == ["a", "c"]
    assert update["messages"][0] == Remove(partial)
    assert texts(update) == ["a", "b (earlier)", "c"]
    merged = state.merge(update)["messages"]
    assert len(merged) == 3 and merged[-1] == update["messages"][-1]


async def test_nothing_missing_returns_empty_update() -> None:
    """A complete ToolResponseMessage leaves nothing to do: {}."""
    calls = [call("1", "echo", text="a")]
    done = ToolResponseMessage([ToolResponse("1", "echo", "a")])
    state = OverAllState({"messages": [AssistantMessage("", calls), done]})
    assert await AgentToolNode([echo])(state) == {}


@pytest.mark.parametrize(
    ("messages", "found"),
    [
        ([UserMessage("hi")], "UserMessage"),
        ([AssistantMessage("no calls")], "AssistantMessage"),
        ([], "no messages"),
        ([UserMessage("x"), ToolResponseMessage([ToolResponse("9", "echo", "?")])], "ToolResponse"),
    ],
)
async def test_other_last_message_is_a_value_error(messages: list[Any], found: str) -> None:
    """Anything but pending tool calls last → ValueError naming what was found."""
    with pytest.raises(ValueError, match=found):
        await AgentToolNode([echo])(OverAllState({"messages": messages}))


# --- 9. return_direct ----------------------------------------------------------------------


@tool(return_direct=True)
async def final(text: str) -> str:
    return text


@tool(return_direct=True, timeout=0.05)
async def final_slow() -> str:
    await anyio.sleep(5)
    return "never"


@pytest.mark.parametrize(
    ("names", "direct"),
    [
        (["final"], True),
        (["final", "final_slow"], True),  # a timed-out return_direct call still counts
        (["final", "missing"], True),  # unresolved names are left out
        (["final", "echo"], False),
        (["missing"], False),
    ],
)
async def test_return_direct_when_every_resolved_tool_is(names: list[str], direct: bool) -> None:
    """finish_reason='return_direct' is set when every called tool that resolves is."""
    node = AgentToolNode([final, final_slow, echo], parallel_tool_execution=True)
    state = calls_state(
        *(
            call(str(i), n, text="t") if n != "final_slow" else call(str(i), n)
            for i, n in enumerate(names)
        )
    )
    message = (await node(state))["messages"][-1]
    assert (message.metadata.get("finish_reason") == "return_direct") is direct


# --- 10. caller cancellation ------------------------------------------------------------


async def test_caller_cancel_stops_every_call_promptly_and_leaves_nothing() -> None:
    """Cancelling the scope around the node with 100 sleeping calls in flight: the node
    returns promptly, every tool's finally has run, and no task is left."""
    started = 0
    cleaned = 0

    @tool
    async def sleeper(i: int) -> int:
        nonlocal started, cleaned
        started += 1
        try:
            await anyio.sleep(30)
        finally:
            cleaned += 1
        return i

    node = AgentToolNode([sleeper], parallel_tool_execution=True, max_parallel_tools=100)
    state = calls_state(*(call(str(i), "sleeper", i=i) for i in range(100)))
    before = live_tasks()
    returned_after = None
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                await node(state)

            tg.start_soon(run)
            await anyio.wait_all_tasks_blocked()
            assert started == 100
            t0 = time.monotonic()
            scope.cancel()
    returned_after = time.monotonic() - t0
    assert scope.cancelled_caught
    assert cleaned == 100
    assert returned_after < 1.0
    assert live_tasks() == before


async def test_caller_cancel_abandons_sync_threads_which_end_at_check() -> None:
    """A cancelled node leaves no thread running a tool, except abandoned sync threads,
    which end at their next check_cancelled()."""
    entered = threading.Event()
    ended = threading.Event()

    @tool
    def worker() -> str:
        entered.set()
        try:
            while True:
                check_cancelled()
                time.sleep(0.01)
        finally:
            ended.set()

    node = AgentToolNode([worker, echo], parallel_tool_execution=True)
    with anyio.move_on_after(5) as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(node, calls_state(call("1", "worker"), call("2", "echo", text="x")))
            assert await anyio.to_thread.run_sync(entered.wait, 5)
            tg.cancel_scope.cancel()
    assert not scope.cancelled_caught
    assert await anyio.to_thread.run_sync(ended.wait, 5)


# --- 11. interceptors -------------------------------------------------------------------


class Recorder:
    """An interceptor that records its before/after around the call."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolCallResponse:
        self.log.append(f"{self.name}-before")
        response = await handler(request)
        self.log.append(f"{self.name}-after")
        return response


async def test_interceptors_first_outermost() -> None:
    """[i1, i2] wrap as i1-before, i2-before, execute, i2-after, i1-after."""
    log: list[str] = []

    @tool
    async def act() -> str:
        log.append("execute")
        return "done"

    node = AgentToolNode([act], tool_interceptors=[Recorder("i1", log), Recorder("i2", log)])
    await node(calls_state(call("1", "act")))
    assert log == ["i1-before", "i2-before", "execute", "i2-after", "i1-after"]


async def test_interceptor_rewrites_short_circuits_and_retries() -> None:
    """Interceptors may rewrite arguments, answer without calling the tool, or retry."""
    attempts = 0

    @tool
    async def flaky(text: str) -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionError("first try fails")
        return text

    class Shout:
        async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> Any:
            if request.call.name == "echo":
                return await handler(request.with_arguments({"text": "REWRITTEN"}))
            if request.call.name == "blocked":
                return ToolCallResponse("blocked by policy", is_error=True)
            try:
                return await handler(request)
            except ConnectionError:
                return await handler(request)

    @tool
    async def blocked() -> str:
        raise AssertionError("never called")

    node = AgentToolNode([echo, flaky, blocked], tool_interceptors=[Shout()])
    update = await node(
        calls_state(call("1", "echo", text="x"), call("2", "flaky", text="y"), call("3", "blocked"))
    )
    assert texts(update) == ["REWRITTEN", "y", "blocked by policy"]
    assert attempts == 2


async def test_interceptors_run_inside_the_timeout_and_see_thread_and_state() -> None:
    """An interceptor's own waiting counts against the call's timeout; it sees the config's
    thread id and the state."""
    seen: list[Any] = []

    class Slow:
        async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> Any:
            seen.append((request.config.thread_id, request.state["flag"]))
            await anyio.sleep(5)
            return await handler(request)

    node = AgentToolNode([echo], tool_interceptors=[Slow()], tool_execution_timeout=0.05)
    update = await node(
        calls_state(call("1", "echo", text="x"), flag="on"), RunnableConfig(thread_id="t-1")
    )
    assert texts(update) == ["Error: Tool execution timed out after 0.05s (tool 'echo')"]
    assert seen == [("t-1", "on")]


# --- construction --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_parallel_tools": 0}, "max_parallel_tools must be at least 1"),
        ({"tool_execution_timeout": 0}, "tool_execution_timeout must be positive"),
        ({"tool_execution_timeout": -1.0}, "tool_execution_timeout must be positive"),
    ],
)
def test_bad_options_raise_value_error(kwargs: dict[str, Any], message: str) -> None:
    """Bad limits are refused when the node is built, not when it runs."""
    with pytest.raises(ValueError, match=message):
        AgentToolNode([echo], **kwargs)


# --- 12. logging --------------------------------------------------------------------------


async def test_acting_log_events_when_enabled() -> None:
    """With enable_acting_log, each call logs started/finished bound with agent, call, tool;
    argument values only at debug."""
    node = AgentToolNode([echo, boom], agent_name="a1", enable_acting_log=True)
    with capture_logs() as logs:
        await node(calls_state(call("1", "echo", text="secret"), call("2", "boom", message="m")))
    events = [(e["event"], e.get("call_id")) for e in logs]
    assert ("tool_call_started", "1") in events and ("tool_call_finished", "1") in events
    finished = [e for e in logs if e["event"] == "tool_call_finished"]
    assert [e["is_error"] for e in finished] == [False, True]
    assert all(e["agent"] == "a1" and e["duration_ms"] >= 0 for e in finished)
    for entry in logs:
        if entry["log_level"] == "info":
            assert "secret" not in repr(entry)


async def test_no_per_call_logging_by_default_but_failures_warn() -> None:
    """By default successful calls log nothing; timeouts and errors still log warnings."""

    @tool(timeout=0.05)
    async def stall() -> str:
        await anyio.sleep(5)
        return "x"

    node = AgentToolNode([echo, boom, stall], agent_name="a2")
    with capture_logs() as logs:
        await node(calls_state(call("1", "echo", text="x")))
    assert logs == []
    with capture_logs() as logs:
        await node(calls_state(call("2", "boom", message="m"), call("3", "stall")))
    assert [(e["event"], e["log_level"]) for e in logs] == [
        ("tool_call_failed", "warning"),
        ("tool_call_timed_out", "warning"),
    ]
    assert all(e["agent"] == "a2" for e in logs)
