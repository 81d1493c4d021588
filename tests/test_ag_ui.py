"""``reactcore.ag_ui``: an agent served over AG-UI, read by the official client
(``@ag-ui/client``'s ``HttpAgent`` under Node) and by Python, every event checked against
the ``ag_ui`` package's own types; steering (cancel one call, approvals) over the wire;
client tools; shared state; principals kept apart."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from ag_ui import core
from pydantic import TypeAdapter

from reactcore import (
    AssistantMessage,
    ImagePart,
    ReactAgent,
    ToolCall,
    ToolContext,
    ToolResponseMessage,
    Usage,
    UserMessage,
    tool,
)
from reactcore.ag_ui import ag_ui_app
from reactcore.hooks import HumanInTheLoopHook, SummarizationHook
from reactcore.interceptors import ModelRetryInterceptor
from reactcore.models import OpenAIChatModel
from reactcore.models.base import ModelRequest
from reactcore.savers import MemorySaver
from reactcore.serving import Limits
from reactcore.testing import ScriptedChatModel, SSEReply, serve_openai_compatible
from tests.helpers import asks
from tests.node_support import node_clients, run_node  # noqa: F401 - a fixture
from tests.serving_support import serve_app, sse_events

pytestmark = pytest.mark.anyio
with_node = pytest.mark.usefixtures("node_clients")

EVENT = TypeAdapter(core.Event)
CANCELLED = "Error: Tool execution was cancelled by the caller: not needed"


def bearer(request: Any) -> str | None:
    """The principal is the bearer token (a test's stand-in for a real check)."""
    header = request.headers.get("authorization", "")
    return header.removeprefix("Bearer ") or None


def run_input(run_id: str, messages: Sequence[dict[str, Any]], **more: Any) -> dict[str, Any]:
    body = {
        "threadId": "thread-1",
        "runId": run_id,
        "messages": list(messages),
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    return {**body, **more}


def user(text: str, id: str = "u1") -> dict[str, Any]:
    return {"id": id, "role": "user", "content": text}


async def post_run(url: str, body: dict[str, Any], principal: str = "alice") -> list[Any]:
    """One run read whole by Python: each event validated as an ``ag_ui.core.Event``."""
    headers = {"authorization": f"Bearer {principal}"}
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", url, json=body, headers=headers) as response,
    ):
        assert response.status_code == 200, await response.aread()
        return [EVENT.validate_python(data) async for _, data in sse_events(response)]


def types(events: Sequence[Any]) -> list[str]:
    return [e.type.value for e in events]


def node_events(lines: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line["event"] for line in lines if "event" in line]


def results(events: Sequence[Any]) -> dict[str, str]:
    """``TOOL_CALL_RESULT`` contents by call id (Python or JSON events)."""
    out = {}
    for e in events:
        e = e if isinstance(e, dict) else e.model_dump(by_alias=True)
        if e["type"] == "TOOL_CALL_RESULT":
            out[e["toolCallId"]] = e["content"]
    return out


@asynccontextmanager
async def served(agent: ReactAgent, **options: Any) -> AsyncIterator[str]:
    async with serve_app(ag_ui_app(agent, authorize=bearer, **options)) as url:
        yield url


# --- 1. a whole run, read by the official client ------------------------------------------


def _both_running() -> Callable[..., Any]:
    """A weather tool whose two calls each wait for the other to start: they finish only
    when both run at once."""
    started: dict[str, anyio.Event] = {"Paris": anyio.Event(), "Rome": anyio.Event()}

    @tool
    async def weather(city: str) -> str:
        """The weather in a city."""
        started[city].set()
        other = "Rome" if city == "Paris" else "Paris"
        with anyio.fail_after(10):
            await started[other].wait()
        return f"{'sunny' if city == 'Paris' else 'rainy'} in {city}"

    return weather


@with_node
async def test_official_client_reads_a_whole_run_with_parallel_tools() -> None:
    """``HttpAgent`` reads a run whose model streams over real HTTP (a loopback
    OpenAI-compatible server): text deltas, two tool calls run at once, their results,
    and the final answer, each step wrapped in STEP_STARTED/FINISHED, the run's token
    usage on RUN_FINISHED; the client assembles the assistant message with both calls,
    both tool messages and the answer. The same run read by Python validates event by
    event against ``ag_ui.core``."""
    calls = asks(("c1", "weather", {"city": "Paris"}), ("c2", "weather", {"city": "Rome"}))
    ask = AssistantMessage("Checking both.", calls.tool_calls)
    answer = "Paris is sunny, Rome is rainy."
    script = [SSEReply.of(ask, usage=Usage(7, 3, 10)), SSEReply.of(answer, usage=Usage(20, 6, 26))]
    script *= 2
    with serve_openai_compatible(script) as server:
        model = OpenAIChatModel("test-model", base_url=server.base_url, api_key="sk-test")
        async with model:
            agent = ReactAgent(
                "weather", model, tools=[_both_running()], parallel_tool_execution=True
            )
            async with served(agent) as url:
                lines = await run_node("ag_ui_client.mjs", "run", url, "alice")
                agent = ReactAgent(
                    "weather", model, tools=[_both_running()], parallel_tool_execution=True
                )
            async with served(agent) as url:
                python = await post_run(url, run_input("run-py", [user("Weather?")]))
    events = node_events(lines)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert events[0]["runId"] == "run-1" and events[0]["threadId"] == "thread-1"
    assert events[-1]["outcome"] == {"type": "success"}
    assert events[-1]["usage"] == [{"inputTokens": 27, "outputTokens": 9, "totalTokens": 36}]
    texts = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert texts == "Checking both." + answer
    assert kinds.count("TEXT_MESSAGE_CONTENT") > 2  # streamed in pieces, not whole
    steps = [(e["type"], e["stepName"]) for e in events if e["type"].startswith("STEP_")]
    assert steps == [
        ("STEP_STARTED", "model"),
        ("STEP_FINISHED", "model"),
        ("STEP_STARTED", "tools"),
        ("STEP_FINISHED", "tools"),
        ("STEP_STARTED", "model"),
        ("STEP_FINISHED", "model"),
    ]
    assert results(events) == {"c1": "sunny in Paris", "c2": "rainy in Rome"}
    args = {
        c: "".join(e["delta"] for e in events if e.get("toolCallId") == c and "delta" in e)
        for c in ("c1", "c2")
    }
    assert args == {"c1": '{"city": "Paris"}', "c2": '{"city": "Rome"}'}
    messages = lines[-1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert messages[1]["content"] == "Checking both."
    assert [c["id"] for c in messages[1]["toolCalls"]] == ["c1", "c2"]
    assert messages[1]["toolCalls"][1]["function"] == {
        "name": "weather",
        "arguments": '{"city": "Rome"}',
    }
    assert {m["toolCallId"]: m["content"] for m in messages[2:4]} == results(events)
    assert messages[-1]["content"] == answer
    # Python's reading: the same kinds of events, each a valid ag_ui.core event.
    assert types(python)[0] == "RUN_STARTED" and types(python)[-1] == "RUN_FINISHED"
    assert results(python) == results(events)
    assert isinstance(python[-1], core.RunFinishedEvent)


# --- 2. cancel one of two parallel calls ---------------------------------------------------


@with_node
async def test_client_cancels_one_of_two_parallel_calls() -> None:
    """The client cancels the running ``slow`` call through ``runs/{runId}/calls/{id}/
    cancel`` when the server says it started (``reactcore.tool_call_started``): its
    TOOL_CALL_RESULT is the cancellation text, the other call's is its answer, the model
    reads both and the run answers."""

    @tool
    async def slow(topic: str) -> str:
        """Research slowly."""
        await anyio.sleep_forever()
        raise AssertionError("never answers")

    @tool
    async def fast(topic: str) -> str:
        """Research fast."""
        return f"fast facts on {topic}"

    def answer(request: ModelRequest) -> AssistantMessage:
        last = request.messages[-1]
        assert isinstance(last, ToolResponseMessage)
        return AssistantMessage(" | ".join(r.response_data for r in last.responses))

    model = ScriptedChatModel(
        [asks(("c1", "slow", {"topic": "a"}), ("c2", "fast", {"topic": "b"})), answer]
    )
    agent = ReactAgent("research", model, tools=[slow, fast], parallel_tool_execution=True)
    async with served(agent) as url:
        lines = await run_node("ag_ui_client.mjs", "cancel", url, "alice", "slow")
    steer = [line["steer"] for line in lines if "steer" in line]
    assert steer == [
        {"path": "runs/run-1/calls/c1/cancel", "status": 200, "body": {"cancelled": True}}
    ]
    events = node_events(lines)
    assert results(events) == {"c1": CANCELLED, "c2": "fast facts on b"}
    assert events[-1]["type"] == "RUN_FINISHED"
    assert lines[-1]["messages"][-1]["content"] == f"{CANCELLED} | fast facts on b"


# --- 3. approvals over the wire ------------------------------------------------------------


@with_node
@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_client_answers_an_approval_while_the_stream_is_open(decision: str) -> None:
    """A run paused for approval sends ``reactcore.approval`` with the pending call and
    keeps the stream open; the client answers through ``runs/{runId}/decisions`` and the
    same stream goes on: approved, the tool runs; rejected, it does not and the model
    reads the rejection (sent as the call's TOOL_CALL_RESULT)."""
    deleted: list[str] = []

    @tool
    async def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    def answer(request: ModelRequest) -> AssistantMessage:
        last = request.messages[-1]
        assert isinstance(last, ToolResponseMessage)
        return AssistantMessage(f"outcome: {last.responses[0].response_data}")

    model = ScriptedChatModel([asks(("c1", "delete_file", {"path": "a.txt"})), answer])
    agent = ReactAgent(
        "files",
        model,
        tools=[delete_file],
        hooks=[HumanInTheLoopHook(approve_on=["delete_file"])],
        saver=MemorySaver(),
    )
    async with served(agent) as url:
        lines = await run_node("ag_ui_client.mjs", "approve", url, "alice", decision)
    events = node_events(lines)
    approval = next(e for e in events if e.get("name") == "reactcore.approval")
    assert approval["value"]["calls"] == [
        {"id": "c1", "name": "delete_file", "arguments": '{"path": "a.txt"}'}
    ]
    steer = [line["steer"] for line in lines if "steer" in line]
    assert steer == [{"path": "runs/run-1/decisions", "status": 200, "body": {"resumed": True}}]
    expected = "deleted a.txt" if decision == "approve" else "no, thanks"
    assert results(events) == {"c1": expected}
    assert deleted == (["a.txt"] if decision == "approve" else [])
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"] == {"type": "success"}
    assert lines[-1]["messages"][-1]["content"] == f"outcome: {expected}"


@with_node
async def test_an_unanswered_pause_ends_as_an_interrupt_and_resume_entries_continue() -> None:
    """A pause nobody answers within ``pause_timeout`` ends the stream with RUN_FINISHED
    whose outcome is ``interrupt`` (one interrupt per pending call, its id the call's),
    which the official client accepts; a request for the thread without ``resume`` gets
    the same pause and runs nothing; a request with ``resume`` entries approves and the
    run goes on."""
    deleted: list[str] = []

    @tool
    async def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    def reply(request: ModelRequest) -> AssistantMessage:
        if isinstance(request.messages[-1], UserMessage):
            return asks(("c1", "delete_file", {"path": "a.txt"}))
        return AssistantMessage("Deleted.")

    model = ScriptedChatModel([reply] * 3)
    agent = ReactAgent(
        "files",
        model,
        tools=[delete_file],
        hooks=[HumanInTheLoopHook(approve_on=["delete_file"])],
        saver=MemorySaver(),
    )
    async with served(agent, limits=Limits(pause_timeout=0.2)) as url:
        lines = await run_node("ag_ui_client.mjs", "run", url, "alice")
        first = await post_run(url, run_input("r1", [user("Delete a.txt")]), "carol")
        again = await post_run(url, run_input("r2", [user("Delete a.txt")]))
        resume = [{"interruptId": "c1", "status": "resolved", "payload": {"type": "approve"}}]
        last = await post_run(url, run_input("r3", [user("Delete a.txt")], resume=resume))
    for events in (first, again):
        outcome = events[-1].outcome
        assert isinstance(outcome, core.RunFinishedInterruptOutcome)
        assert [(i.id, i.tool_call_id, i.reason) for i in outcome.interrupts] == [
            ("c1", "c1", "tool_approval")
        ]
    assert node_events(lines)[-1]["outcome"] == first[-1].outcome.model_dump(by_alias=True)
    assert "STEP_STARTED" not in types(again)
    assert isinstance(again[1], core.MessagesSnapshotEvent)
    assert results(last) == {"c1": "deleted a.txt"} and deleted == ["a.txt"]
    assert last[-1].outcome == core.RunFinishedSuccessOutcome()


# --- 4. client tools -------------------------------------------------------------------------


@with_node
@pytest.mark.parametrize("with_saver", [False, True], ids=["client-history", "saver"])
async def test_frontend_tool_round_trip(with_saver: bool) -> None:
    """The client declares ``confirm``; the model sees it and calls it; the run ends with
    the call pending (``pendingToolCallIds``); the client's next request carries the
    result as a tool message and the run answers — with the client's history as the
    conversation, and with a saver holding the thread (nothing duplicated)."""
    seen: list[Sequence[Any]] = []

    def ask(request: ModelRequest) -> AssistantMessage:
        assert "confirm" in request.tools
        return asks(("f1", "confirm", {"question": "Go?"}))

    def answer(request: ModelRequest) -> AssistantMessage:
        seen.append(request.messages)
        return AssistantMessage("Confirmed, going ahead.")

    saver = {"saver": MemorySaver()} if with_saver else {}
    agent = ReactAgent("asker", ScriptedChatModel([ask, answer]))
    async with served(agent, **saver) as url:
        lines = await run_node("ag_ui_client.mjs", "frontend", url, "alice")
    events = node_events(lines)
    finished = [e for e in events if e["type"] == "RUN_FINISHED"]
    assert finished[0]["outcome"] == {"type": "success", "pendingToolCallIds": ["f1"]}
    assert lines[-1]["pending"] == ["f1"]
    assert [m["role"] for m in lines[-1]["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert lines[-1]["messages"][-1]["content"] == "Confirmed, going ahead."
    (conversation,) = seen
    assert len(conversation) == 3
    assert conversation[0] == UserMessage("What is the weather in Paris and Rome?")
    assert isinstance(conversation[1], AssistantMessage)
    assert conversation[1].tool_calls == (ToolCall("f1", "confirm", '{"question": "Go?"}'),)
    last = conversation[2]
    assert isinstance(last, ToolResponseMessage)
    assert [(r.id, r.name, r.response_data) for r in last.responses] == [
        ("f1", "confirm", "yes, confirmed")
    ]
    assert any(e["type"] == "MESSAGES_SNAPSHOT" for e in events) == with_saver


# --- 5. principals and leaving clients -------------------------------------------------------


async def test_principals_are_kept_apart_and_a_leaving_client_cancels_its_run() -> None:
    """While alice's run waits in a tool, bob gets 404 on every steering endpoint of her
    run (alice gets 200), and his request naming her thread sees none of her messages;
    when alice's client leaves, her run is cancelled: the tool observes it."""
    started, stopped = anyio.Event(), anyio.Event()

    @tool
    async def wait_here() -> str:
        """Wait."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        raise AssertionError("unreachable")

    def reply(request: ModelRequest) -> AssistantMessage:
        last = request.messages[-1]
        if isinstance(last, UserMessage) and last.text == "wait":
            return asks(("c1", "wait_here", {}))
        return AssistantMessage(f"seen {len(request.messages)} message(s)")

    model = ScriptedChatModel([reply] * 3)
    agent = ReactAgent("waiter", model, tools=[wait_here])
    async with served(agent, saver=MemorySaver()) as url, httpx.AsyncClient(timeout=30) as client:
        alice = {"authorization": "Bearer alice"}
        bob = {"authorization": "Bearer bob"}
        body = run_input("r1", [user("wait")])
        async with client.stream("POST", url, json=body, headers=alice) as response:
            assert response.status_code == 200
            with anyio.fail_after(10):
                await started.wait()
            for method, path, payload in [
                ("GET", "runs/r1", None),
                ("POST", "runs/r1/cancel", {}),
                ("POST", "runs/r1/calls/c1/cancel", {}),
                ("POST", "runs/r1/decisions", {"decisions": {"c1": {"type": "approve"}}}),
            ]:
                answered = await client.request(method, f"{url}/{path}", json=payload, headers=bob)
                assert answered.status_code == 404, path
                assert answered.json() == {"error": {"code": "not_found", "message": "no such run"}}
            mine = await client.get(f"{url}/runs/r1", headers=alice)
            assert mine.status_code == 200 and mine.json()["status"] == "running"
            bobs = await post_run(url, run_input("r1", [user("hello")]), principal="bob")
            assert "MESSAGES_SNAPSHOT" not in types(bobs)
            assert model.requests[-1].messages == (UserMessage("hello"),)
        # alice's client left mid-run (the block closed the stream): the run stops.
        with anyio.fail_after(10):
            await stopped.wait()


async def test_keep_running_lets_a_run_outlive_its_client() -> None:
    """With ``keep_running=True`` a client leaving does not cancel the run: the tool is
    not cancelled and the run goes on to its end."""
    started, release, finished = anyio.Event(), anyio.Event(), anyio.Event()
    cancelled: list[bool] = []

    @tool
    async def wait_here() -> str:
        """Wait."""
        started.set()
        try:
            await release.wait()
        except BaseException:
            cancelled.append(True)
            raise
        return "released"

    def done(request: ModelRequest) -> AssistantMessage:
        finished.set()
        return AssistantMessage("done")

    agent = ReactAgent(
        "waiter", ScriptedChatModel([asks(("c1", "wait_here", {})), done]), tools=[wait_here]
    )
    async with served(agent, keep_running=True) as url:
        async with httpx.AsyncClient(timeout=30) as client:
            body = run_input("r1", [user("wait")])
            headers = {"authorization": "Bearer alice"}
            async with client.stream("POST", url, json=body, headers=headers) as response:
                assert response.status_code == 200
                with anyio.fail_after(10):
                    await started.wait()
        await anyio.wait_all_tasks_blocked()  # the server has seen the client leave
        release.set()
        with anyio.fail_after(10):
            await finished.wait()
    assert cancelled == []


# --- 6. bad input ----------------------------------------------------------------------------


async def test_bad_input_is_refused_with_json_and_no_stack() -> None:
    """A body that is not a ``RunAgentInput`` is 422 JSON naming the fields (no stack, no
    values); more messages than ``Limits.max_messages`` is 413; a client tool named like
    one of the agent's is 422; no principal is 401."""

    @tool
    async def ping() -> str:
        """Ping."""
        return "pong"

    agent = ReactAgent("a", ScriptedChatModel(["never"]), tools=[ping])
    async with (
        served(agent, limits=Limits(max_messages=2)) as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        alice = {"authorization": "Bearer alice"}
        bad = await client.post(url, json={"threadId": 7, "secret": "sk-1"}, headers=alice)
        many = [user(f"m{i}", id=f"u{i}") for i in range(3)]
        large = await client.post(url, json=run_input("r1", many), headers=alice)
        nobody = await client.post(url, json=run_input("r1", many[:1]))
        clash = {"name": "ping", "description": "mine", "parameters": {"type": "object"}}
        body = run_input("r1", many[:1], tools=[clash])
        clashing = await client.post(url, json=body, headers=alice)
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "bad_input"
    assert "threadId" in bad.json()["error"]["message"]
    assert "Traceback" not in bad.text and "sk-1" not in bad.text
    assert large.status_code == 413 and large.json()["error"]["code"] == "too_many_messages"
    assert nobody.status_code == 401
    assert clashing.status_code == 422 and clashing.json()["error"]["code"] == "bad_tools"


# --- state, reasoning, retries ---------------------------------------------------------------


async def test_shared_state_keys_snapshot_then_deltas() -> None:
    """With ``share_state=("notes",)`` the client sees STATE_SNAPSHOT of that key (its
    own ``state`` merged in first) and a JSON Patch when a tool changes it; other keys
    (the messages) never reach it. A tool reads the request (``forwardedProps``) from
    the run's context."""

    @tool
    async def note(text: str, context: ToolContext) -> str:
        """Take a note."""
        context.update["notes"] = [*context.state["notes"], text]
        given = context.config.context["ag_ui_input"]
        return f"noted {text} in {given.forwarded_props['list']}"

    model = ScriptedChatModel([asks(("c1", "note", {"text": "milk"})), "Noted."])
    agent = ReactAgent("notes", model, tools=[note])
    async with served(agent, share_state=("notes",)) as url:
        body = run_input("r1", [user("note milk")], state={"notes": ["from client"], "x": 1})
        body["forwardedProps"] = {"list": "groceries"}
        events = await post_run(url, body)
    assert results(events) == {"c1": "noted milk in groceries"}
    snapshots = [e.snapshot for e in events if isinstance(e, core.StateSnapshotEvent)]
    assert snapshots == [{"notes": ["from client"]}]
    deltas = [e.delta for e in events if isinstance(e, core.StateDeltaEvent)]
    assert [[op.model_dump() for op in d] for d in deltas] == [
        [{"op": "replace", "path": "/notes", "value": ["from client", "milk"]}]
    ]


@with_node
async def test_reasoning_streams_and_a_retried_call_leaves_no_half_message() -> None:
    """The model's reasoning streams as REASONING_* events; an attempt cut mid-stream and
    retried (``ModelRetryInterceptor``) is taken back by a MESSAGES_SNAPSHOT of the
    conversation without it, so the official client's messages hold the retried answer
    only, not the half one."""
    whole = AssistantMessage("The whole answer.", reasoning="Thinking again.")
    half = SSEReply.of(AssistantMessage("A half answer, cut", reasoning="Thinking."))
    cut = SSEReply(half.events[:-3], ending="cut")
    script = [cut, SSEReply.of(whole)] * 2
    retry = ModelRetryInterceptor(initial_delay=0.01, jitter=0.0)
    with serve_openai_compatible(script) as server:
        model = OpenAIChatModel(
            "test-model", base_url=server.base_url, api_key="sk-test", max_retries=0
        )
        async with model:
            agent = ReactAgent("thinker", model, interceptors=[retry])
            async with served(agent) as url:
                lines = await run_node("ag_ui_client.mjs", "run", url, "alice")
                python = await post_run(url, run_input("r2", [user("Think.")]))
    events = node_events(lines)
    assert events[-1]["type"] == "RUN_FINISHED"
    messages = lines[-1]["messages"]
    assert [m["content"] for m in messages if m["role"] == "assistant"] == [whole.text]
    assert "A half" not in json.dumps(messages)
    snapshots = [e for e in python if isinstance(e, core.MessagesSnapshotEvent)]
    assert [[m.role for m in s.messages] for s in snapshots] == [["user"]]
    reasoning = "".join(e.delta for e in python if isinstance(e, core.ReasoningMessageContentEvent))
    assert reasoning.endswith("Thinking again.")
    kinds = types(python)
    assert kinds.index("REASONING_START") < kinds.index("REASONING_END")


@pytest.mark.parametrize("then", ["same history", "new message"])
async def test_a_cancelled_run_ends_cancelled_and_the_thread_goes_on(then: str) -> None:
    """``POST runs/{runId}/cancel`` ends the stream with RUN_FINISHED outcome
    ``cancelled``; with a saver the thread keeps the unfinished run. The same history
    again finishes it (the pending call run anew, the user's message not repeated); a new
    message instead ends it for good (the pending call answered as cancelled) and goes on."""
    started = anyio.Event()
    runs: list[int] = []

    @tool
    async def lookup() -> str:
        """Look up."""
        runs.append(1)
        if len(runs) == 1:
            started.set()
            await anyio.sleep_forever()
        return "found"

    model = ScriptedChatModel([asks(("c1", "lookup", {})), "Found it."])
    agent = ReactAgent("finder", model, tools=[lookup])
    headers = {"authorization": "Bearer alice"}
    async with (
        served(agent, saver=MemorySaver()) as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        cancelled: list[Any] = []

        async def read() -> None:
            cancelled.extend(await post_run(url, run_input("r1", [user("find")])))

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            with anyio.fail_after(10):
                await started.wait()
            answer = await client.post(f"{url}/runs/r1/cancel", headers=headers)
            assert answer.json() == {"cancelled": True}
        # What the client holds: its message, and the call it saw streamed.
        call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        held = [user("find"), {"id": "a1", "role": "assistant", "toolCalls": [call]}]
        if then == "same history":
            again = await post_run(url, run_input("r2", held))
        else:
            again = await post_run(url, run_input("r2", [*held, user("and more", id="u2")]))
    assert cancelled[-1].outcome == core.RunFinishedCancelledOutcome()
    assert isinstance(again[-1], core.RunFinishedEvent)
    sent = model.requests[-1].messages
    if then == "same history":
        assert results(again) == {"c1": "found"} and len(runs) == 2
        assert [type(m).__name__ for m in sent] == [
            "UserMessage",
            "AssistantMessage",
            "ToolResponseMessage",
        ]
    else:
        assert len(runs) == 1  # the stopped call is not run again
        assert [type(m).__name__ for m in sent] == [
            "UserMessage",
            "AssistantMessage",
            "ToolResponseMessage",
            "UserMessage",
        ]
        closed = sent[2]
        assert isinstance(closed, ToolResponseMessage)
        assert closed.responses[0].response_data.startswith(
            "Error: Tool execution was cancelled by the caller"
        )


async def test_a_failed_run_is_a_run_error_without_details() -> None:
    """A run that fails ends with RUN_ERROR saying the error's kind only: no message
    text, no stack (the model's error here carries a key)."""
    model = ScriptedChatModel([RuntimeError("upstream said: key sk-secret-123")])
    agent = ReactAgent("failing", model)
    async with served(agent) as url:
        events = await post_run(url, run_input("r1", [user("hi")]))
    error = events[-1]
    assert isinstance(error, core.RunErrorEvent)
    assert (error.code, error.message) == ("run_failed", "the run failed (RuntimeError)")
    assert "sk-secret" not in json.dumps([e.model_dump(by_alias=True) for e in events])


async def test_shared_state_callable_and_user_content_parts() -> None:
    """A callable ``share_state`` gives the client its own view (snapshot, then a delta
    when the view changes); a user message's content parts (text, an inline image) reach
    the model as a ``UserMessage`` with an ``ImagePart``."""

    def view(state: Any) -> dict[str, Any]:
        return {"count": len(state["messages"])}

    model = ScriptedChatModel(["A red dot."])
    agent = ReactAgent("eyes", model)
    content = [
        {"type": "text", "text": "What is this?"},
        {
            "type": "image",
            "source": {"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"},
        },
    ]
    async with served(agent, share_state=view) as url:
        events = await post_run(
            url, run_input("r1", [{"id": "u1", "role": "user", "content": content}])
        )
    snapshots = [e.snapshot for e in events if isinstance(e, core.StateSnapshotEvent)]
    assert snapshots == [{"count": 1}]
    deltas = [
        [op.model_dump() for op in e.delta] for e in events if isinstance(e, core.StateDeltaEvent)
    ]
    assert deltas == [[{"op": "replace", "path": "/count", "value": 2}]]
    (sent,) = model.requests[0].messages
    assert isinstance(sent, UserMessage) and sent.text == "What is this?"
    assert sent.parts == (ImagePart("data:image/png;base64,iVBORw0KGgo="),)


async def test_a_summary_call_is_a_step_of_its_own_not_a_message() -> None:
    """A hook's model call (``SummarizationHook``'s summary) is step ``summary``; its
    answer is not streamed as a message of the conversation: the client reads only the
    agent's answer."""
    summarizer = ScriptedChatModel(["Earlier: greetings."])
    hook = SummarizationHook(trigger_tokens=1, keep_last=1, model=summarizer)
    agent = ReactAgent("talker", ScriptedChatModel(["The answer."]), hooks=[hook])
    history = [
        user("hello"),
        {"id": "a1", "role": "assistant", "content": "hi there"},
        user("and now?", id="u2"),
    ]
    async with served(agent) as url:
        events = await post_run(url, run_input("r1", history))
    steps = [(e.type.value, e.step_name) for e in events if hasattr(e, "step_name")]
    assert steps == [
        ("STEP_STARTED", "summary"),
        ("STEP_FINISHED", "summary"),
        ("STEP_STARTED", "model"),
        ("STEP_FINISHED", "model"),
    ]
    texts = "".join(e.delta for e in events if isinstance(e, core.TextMessageContentEvent))
    assert texts == "The answer." and len(summarizer.requests) == 1


@with_node
async def test_a_subagents_events_are_attributed_to_it() -> None:
    """A subagent's run (``agent.as_tool()``) streams between SUBAGENT_STARTED (its name,
    the calling tool call) and SUBAGENT_FINISHED, its events carrying its
    ``subagentRunId``; the official client accepts the whole and the run answers."""
    researcher = ReactAgent("researcher", ScriptedChatModel(["Found: 42."]))
    lead = ReactAgent(
        "lead",
        ScriptedChatModel([asks(("c1", "researcher", {"input": "find it"})), "It is 42."]),
        tools=[researcher.as_tool()],
    )
    async with served(lead) as url:
        lines = await run_node("ag_ui_client.mjs", "run", url, "alice")
    events = node_events(lines)
    started = next(e for e in events if e["type"] == "SUBAGENT_STARTED")
    assert (started["name"], started["parentToolCallId"]) == ("researcher", "c1")
    sub = started["subagentRunId"]
    inner = [e for e in events if e.get("subagentRunId") == sub]
    assert inner[0] is started and inner[-1]["type"] == "SUBAGENT_FINISHED"
    assert inner[-1]["outcome"] == {"type": "success"}
    said = "".join(e["delta"] for e in inner if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert said == "Found: 42."
    assert results(events) == {"c1": "Found: 42."}
    assert events[-1]["type"] == "RUN_FINISHED"
    assert lines[-1]["messages"][-1]["content"] == "It is 42."


def test_bad_arguments_raise_at_construction() -> None:
    """``ag_ui_app`` refuses a wrong argument when it is built, naming it."""
    agent = ReactAgent("a", ScriptedChatModel(["hi"]))
    with pytest.raises(TypeError, match="agent must be a ReactAgent"):
        ag_ui_app("agent", authorize=bearer)
    with pytest.raises(TypeError, match="share_state must be"):
        ag_ui_app(agent, authorize=bearer, share_state=42)
    with pytest.raises(TypeError, match="authorize must be a callable"):
        ag_ui_app(agent, authorize="alice")
    with pytest.raises(TypeError, match="limits must be"):
        ag_ui_app(agent, authorize=bearer, limits={"max_messages": 3})
