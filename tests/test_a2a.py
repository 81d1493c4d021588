"""``reactcore.a2a``: an agent served over A2A (``a2a_app``) to the official clients — the
A2A Python SDK's client and, under Node, the A2A JS SDK — on a real loopback server, and
a remote A2A agent called as a tool (``RemoteAgent``). Both backends throughout: the SDK's
client (httpx) and its JSON-RPC dispatcher (Starlette, sse-starlette on anyio) run on
trio as on asyncio; the SDK's asyncio-only parts (``DefaultRequestHandler``, its event
queues) are not used."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskNotFoundError,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from starlette.requests import Request

from reactcore import (
    AssistantMessage,
    MemorySaver,
    ModelDelta,
    ReactAgent,
    SqliteSaver,
    SubagentEvent,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from reactcore.a2a import RemoteAgent, a2a_app
from reactcore.a2a._tasks import thread_of
from reactcore.hooks import HumanInTheLoopHook
from reactcore.models.base import ModelRequest
from reactcore.serving import Limits
from reactcore.testing import ScriptedChatModel
from tests.helpers import asks
from tests.node_support import node_clients as node_clients  # a fixture
from tests.node_support import run_node
from tests.serving_support import serve_app

pytestmark = pytest.mark.anyio

WORKING = TaskState.TASK_STATE_WORKING
COMPLETED = TaskState.TASK_STATE_COMPLETED
CANCELED = TaskState.TASK_STATE_CANCELED
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED


def by_header(request: Request) -> str | None:
    """The principal is the ``x-user`` header (a test's stand-in for a verified token)."""
    return request.headers.get("x-user")


class Gate:
    """A tool body that waits until the test opens it, saying when it started and when
    it was cancelled."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.open = anyio.Event()
        self.cancelled = anyio.Event()
        self.cancelled_at = 0.0

    async def __call__(self) -> str:
        self.started.set()
        try:
            await self.open.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled_at = anyio.current_time()
            self.cancelled.set()
            raise
        return "slow done"


def route(request: ModelRequest) -> AssistantMessage:
    """The scripted model of the served agent: by the user's words, a call of ``add``,
    ``slow`` or ``send`` (which needs approval); after tools, their answers joined."""
    last = request.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return AssistantMessage("; ".join(r.response_data for r in last.responses))
    text = last.text if isinstance(last, UserMessage) else ""
    call_id = f"c{len(request.messages)}"
    if "add" in text:
        return asks((call_id, "add", {"a": 2, "b": 3}))
    if "slow" in text:
        return asks((call_id, "slow", {}))
    if "mail" in text:
        return asks((call_id, "send", {"to": "bo"}))
    if "explode" in text:
        raise RuntimeError("the model broke; key sk-secret-123")
    return AssistantMessage("hello there")


def served_agent(gate: Gate, saver: Any = None) -> ReactAgent:
    @tool
    async def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    @tool
    async def slow() -> str:
        """Wait for the gate."""
        return await gate()

    @tool
    async def send(to: str) -> str:
        """Send a message."""
        return f"sent to {to}"

    return ReactAgent(
        "helper",
        ScriptedChatModel([route] * 200),
        tools=[add, slow, send],
        hooks=[HumanInTheLoopHook({"send": True})],
        system_prompt="You help with sums, slow jobs and mail.",
        saver=saver if saver is not None else MemorySaver(),
    )


class Late:
    """An ASGI app set once the server's URL is known (the agent card names it)."""

    def __init__(self) -> None:
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        await self.app(scope, receive, send)


@asynccontextmanager
async def served(agent: ReactAgent, **options: Any) -> AsyncIterator[str]:
    """``a2a_app(agent)`` on a loopback server; its URL."""
    late = Late()
    async with serve_app(late) as url:
        late.app = a2a_app(agent, authorize=by_header, url=url + "/", **options)
        yield url


@asynccontextmanager
async def sdk_client(url: str, user: str = "ann", *, streaming: bool = True) -> AsyncIterator[Any]:
    """The A2A Python SDK's client for the agent at ``url``, as ``user``."""
    async with httpx.AsyncClient(headers={"x-user": user}, timeout=30) as http:
        config = ClientConfig(httpx_client=http, streaming=streaming)
        yield await ClientFactory(config).create_from_url(url)


def user_message(*parts: Part, task_id: str = "") -> SendMessageRequest:
    message = Message(message_id=f"m-{id(parts)}", role=Role.ROLE_USER, parts=list(parts))
    if task_id:
        message.task_id = task_id
    return SendMessageRequest(message=message)


def text(value: str) -> Part:
    return Part(text=value)


async def collect(client: Any, request: SendMessageRequest) -> list[StreamResponse]:
    return [response async for response in client.send_message(request)]


def states(responses: list[StreamResponse]) -> list[int]:
    out = []
    for r in responses:
        if r.HasField("task"):
            out.append(r.task.status.state)
        elif r.HasField("status_update"):
            out.append(r.status_update.status.state)
    return out


def task_id_of(responses: list[StreamResponse]) -> str:
    first = responses[0]
    assert first.HasField("task")
    return str(first.task.id)


def pending_of(response: StreamResponse) -> list[dict[str, Any]]:
    message = response.status_update.status.message
    data = [MessageToDict(p.data) for p in message.parts if p.HasField("data")]
    pending: list[dict[str, Any]] = data[0]["pending"]
    return pending


async def test_python_sdk_client_reads_the_card_sends_streams_and_gets() -> None:
    """The SDK's client finds the agent card (name, description from the system prompt, a
    skill per tool, streaming), streams a task (the task working, the tool call's start
    and end as reactcore events in data parts, text deltas, the answer artifact,
    completed), gets it back (completed, the answer artifact, the history), and sends
    without streaming (the completed task in one answer)."""
    async with served(served_agent(Gate())) as url, sdk_client(url) as client:
        async with httpx.AsyncClient(headers={"x-user": "ann"}) as http:
            card = await A2ACardResolver(http, url).get_agent_card()
        assert card.name == "helper"
        assert card.description == "You help with sums, slow jobs and mail."
        assert card.capabilities.streaming
        assert [s.id for s in card.skills] == ["add", "slow", "send"]

        responses = await collect(client, user_message(text("please add")))
        assert states(responses)[0] == WORKING
        assert states(responses)[-1] == COMPLETED
        events = [
            MessageToDict(p.data)["reactcore_event"]
            for r in responses
            if r.HasField("status_update")
            for p in r.status_update.status.message.parts
            if p.HasField("data")
        ]
        assert [e["type"] for e in events] == ["tool_call_started", "tool_call_finished"]
        assert events[0]["name"] == "add"
        artifacts = [r.artifact_update.artifact for r in responses if r.HasField("artifact_update")]
        assert [a.parts[0].text for a in artifacts] == ["5"]
        deltas = [
            r.status_update.status.message.parts[0].text
            for r in responses
            if r.HasField("status_update")
            and MessageToDict(r.status_update.status.message.metadata).get("reactcore") == "delta"
        ]
        assert "".join(deltas) == "5"

        task = await client.get_task(GetTaskRequest(id=task_id_of(responses)))
        assert task.status.state == COMPLETED
        assert task.artifacts[0].parts[0].text == "5"
        assert [m.parts[0].text for m in task.history] == ["please add", "5"]

    async with served(served_agent(Gate())) as url, sdk_client(url, streaming=False) as client:
        (only,) = await collect(client, user_message(text("just say hi")))
        assert only.task.status.state == COMPLETED
        assert only.task.artifacts[0].parts[0].text == "hello there"


@pytest.mark.parametrize(
    ("answer", "result"),
    [
        ({"decisions": {"CALL": {"type": "approve"}}}, "sent to bo"),
        ({"decisions": {"CALL": {"type": "edit", "arguments": {"to": "cy"}}}}, "sent to cy"),
        ("approve", "sent to bo"),
        ("reject", "rejected"),
    ],
)
async def test_input_required_is_answered_by_the_next_message_on_the_task(
    answer: Any, result: str
) -> None:
    """A call needing approval ends the stream with ``input-required``, the pending call
    in a data part; the next message on the task answers it (decisions in a data part,
    or the text approve / reject for the one call) and the run goes on to ``completed``.
    A message that answers nothing is an invalid-params error; the task stays paused."""
    async with served(served_agent(Gate())) as url, sdk_client(url) as client:
        responses = await collect(client, user_message(text("mail bo")))
        assert states(responses)[-1] == INPUT_REQUIRED
        (pending,) = pending_of(responses[-1])
        assert (pending["name"], pending["arguments"]) == ("send", {"to": "bo"})
        task_id = task_id_of(responses)
        with pytest.raises(Exception, match="waits for approval"):
            await collect(client, user_message(text("hmm"), task_id=task_id))
        if isinstance(answer, dict):
            answer = json.loads(json.dumps(answer).replace("CALL", pending["id"]))
            part = Part()
            part.data.struct_value.update(answer)
        else:
            part = text(answer)
        after = await collect(client, user_message(part, task_id=task_id))
        assert states(after)[-1] == COMPLETED
        final = after[-1].status_update.status.message.parts[0].text
        assert result in final
        got = await client.get_task(GetTaskRequest(id=task_id))
        assert got.status.state == COMPLETED


async def test_cancel_task_stops_the_running_tool_within_a_second() -> None:
    """``CancelTask`` on a task whose tool is running cancels the run: the tool sees its
    cancellation within 1 s of the request, the stream ends ``canceled``, ``GetTask``
    says ``canceled``, and the thread keeps the partial state (the model's call)."""
    gate = Gate()
    saver = MemorySaver()
    async with served(served_agent(gate), saver=saver) as url, sdk_client(url) as client:
        seen: list[StreamResponse] = []
        cancelled: dict[str, Any] = {}

        first = anyio.Event()

        async def stream() -> None:
            async for response in client.send_message(user_message(text("slow job"))):
                seen.append(response)
                first.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(stream)
            with anyio.fail_after(30):
                await gate.started.wait()
                await first.wait()
            task_id = task_id_of(seen)
            asked = anyio.current_time()
            cancelled["task"] = await client.cancel_task(CancelTaskRequest(id=task_id))
            with anyio.fail_after(5):
                await gate.cancelled.wait()
            assert gate.cancelled_at - asked < 1.0
        assert cancelled["task"].status.state == CANCELED
        assert states(seen)[-1] == CANCELED
        got = await client.get_task(GetTaskRequest(id=task_id))
        assert got.status.state == CANCELED
        checkpoint = await saver.get(thread_of("ann", task_id))
        assert checkpoint is not None
        assert checkpoint.next == "tools"
        assert checkpoint.state["messages"][-1].tool_calls[0].name == "slow"
        with pytest.raises(Exception, match=r"cannot be canceled|has ended"):
            await client.cancel_task(CancelTaskRequest(id=task_id))


async def test_a_failed_run_is_a_failed_task_without_the_error_text() -> None:
    """A run that fails (the model raises) ends its stream ``failed`` with a fixed
    message; neither the stream nor ``GetTask`` carries the error's text (a key in it)."""
    async with served(served_agent(Gate())) as url, sdk_client(url) as client:
        responses = await collect(client, user_message(text("explode")))
        assert states(responses)[-1] == TaskState.TASK_STATE_FAILED
        task = await client.get_task(GetTaskRequest(id=task_id_of(responses)))
        assert task.status.state == TaskState.TASK_STATE_FAILED
        shown = json.dumps([MessageToDict(r) for r in responses] + [MessageToDict(task)])
        assert "sk-secret" not in shown and "RuntimeError" not in shown
        assert "the agent failed" in shown


async def test_a_client_that_leaves_its_stream_cancels_the_task() -> None:
    """A streaming client that disconnects while the tool runs: the served run is
    cancelled (its tool sees it), and the task reads ``canceled`` afterwards."""
    gate = Gate()
    async with served(served_agent(gate)) as url:
        async with sdk_client(url) as client:
            stream = client.send_message(user_message(text("slow job")))
            first = await stream.__anext__()
            task_id = first.task.id
            with anyio.fail_after(30):
                await gate.started.wait()
            await stream.aclose()
        with anyio.fail_after(10):
            await gate.cancelled.wait()
        async with sdk_client(url) as client:
            with anyio.fail_after(10):
                while True:
                    task = await client.get_task(GetTaskRequest(id=task_id))
                    if task.status.state != WORKING:
                        break
                    await anyio.wait_all_tasks_blocked()
        assert task.status.state == CANCELED


def test_bad_arguments_are_refused_at_construction() -> None:
    """``a2a_app`` and ``RemoteAgent`` refuse wrong arguments with a ``TypeError`` naming
    the parameter, before anything is served or sent; the package's ``__all__`` is sorted."""
    import reactcore.a2a

    agent = served_agent(Gate())
    with pytest.raises(TypeError, match="url"):
        a2a_app(agent, authorize=by_header, url="agent.test")
    with pytest.raises(TypeError, match="agent"):
        a2a_app(object(), authorize=by_header, url="http://agent.test/")
    with pytest.raises(TypeError, match="authorize"):
        a2a_app(agent, authorize="ann", url="http://agent.test/")
    with pytest.raises(TypeError, match="limits"):
        a2a_app(agent, authorize=by_header, url="http://agent.test/", limits={})
    with pytest.raises(TypeError, match="url"):
        RemoteAgent("agent.test")
    with pytest.raises(TypeError, match="headers"):
        RemoteAgent("http://agent.test/", headers=["x-user"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        RemoteAgent("http://agent.test/", timeout=0)
    assert reactcore.a2a.__all__ == sorted(reactcore.a2a.__all__)


async def test_v03_method_names_are_answered() -> None:
    """An older client's JSON-RPC (v0.3 names and shapes, no version header):
    ``message/send`` answers the completed task, ``tasks/get`` finds it, ``message/stream``
    streams it as server-sent events, ``tasks/cancel`` of an ended task is refused."""
    async with (
        served(served_agent(Gate())) as url,
        httpx.AsyncClient(base_url=url, headers={"x-user": "ann"}, timeout=30) as http,
    ):

        async def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            answer: dict[str, Any] = (await http.post("/", json=body)).json()
            return answer

        message = {
            "kind": "message",
            "role": "user",
            "messageId": "m1",
            "parts": [{"kind": "text", "text": "please add"}],
        }
        sent = await rpc("message/send", {"message": message})
        assert sent["result"]["status"]["state"] == "completed"
        assert sent["result"]["artifacts"][0]["parts"][0]["text"] == "5"
        task_id = sent["result"]["id"]
        got = await rpc("tasks/get", {"id": task_id})
        assert got["result"]["status"]["state"] == "completed"
        refused = await rpc("tasks/cancel", {"id": task_id})
        assert refused["error"]["code"] == -32002
        body = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "message/stream",
            "params": {"message": message},
        }
        frames = []
        async with http.stream("POST", "/", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    frames.append(json.loads(line[5:]))
        kinds = [f["result"].get("kind") for f in frames]
        assert kinds[0] == "task"
        assert frames[-1]["result"]["status"]["state"] == "completed"


async def test_another_principal_gets_task_not_found_and_limits_hold() -> None:
    """A second principal asking for the first one's task — get, cancel, a message on it —
    gets "task not found", never "forbidden"; a request without a principal is 401, a body
    over ``max_body_bytes`` 413, a message over the parts bound an invalid-params error,
    requests beyond the principal's rate 429; no error carries a stack trace."""
    limits = Limits(max_body_bytes=4000, max_messages=3)
    async with served(served_agent(Gate()), limits=limits) as url:
        async with sdk_client(url, "ann") as ann, sdk_client(url, "bob") as bob:
            responses = await collect(ann, user_message(text("mail bo")))
            task_id = task_id_of(responses)
            with pytest.raises(TaskNotFoundError):
                await bob.get_task(GetTaskRequest(id=task_id))
            with pytest.raises(TaskNotFoundError):
                await bob.cancel_task(CancelTaskRequest(id=task_id))
            with pytest.raises(TaskNotFoundError):
                await collect(bob, user_message(text("approve"), task_id=task_id))
            with pytest.raises(Exception, match="at most 3 parts"):
                await collect(ann, user_message(*[text("x")] * 4))
            assert (await ann.get_task(GetTaskRequest(id=task_id))).status.state == INPUT_REQUIRED
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
            anonymous = await http.post("/", json=body)
            assert anonymous.status_code == 401
            big = {**body, "params": {"id": "x" * 5000}}
            too_large = await http.post("/", json=big, headers={"x-user": "ann"})
            assert too_large.status_code == 413
            headers = {"x-user": "bob", "A2A-Version": "1.0"}
            missing = (await http.post("/", json=body, headers=headers)).json()
            assert missing["error"]["code"] == -32001
            assert "Traceback" not in json.dumps(missing)
    slow_rate = Limits(requests_per_second=0.01, burst=2)
    async with (
        served(served_agent(Gate()), limits=slow_rate) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        headers = {"x-user": "cy", "A2A-Version": "1.0"}
        answers = [(await http.post("/", json=body, headers=headers)) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 429]
        assert answers[2].headers["retry-after"] == "1"


@asynccontextmanager
async def replica_savers(kind: str, folder: Path) -> AsyncIterator[tuple[Any, Any]]:
    """The savers of two replicas: one ``MemorySaver`` object shared, or two
    ``SqliteSaver`` objects on one file (as two processes would have)."""
    if kind == "memory":
        shared = MemorySaver()
        yield shared, shared
        return
    async with SqliteSaver(folder / "tasks.db") as one, SqliteSaver(folder / "tasks.db") as two:
        yield one, two


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_replica_over_the_same_saver_continues_the_task(kind: str, tmp_path: Path) -> None:
    """A task paused for approval on one app is approved through another app over the
    same saver (a replica): it completes there, and the first app reads it completed."""
    agent = served_agent(Gate())
    async with (
        replica_savers(kind, tmp_path) as (saver_one, saver_two),
        served(agent, saver=saver_one) as one,
        served(agent, saver=saver_two) as two,
        sdk_client(one) as first,
        sdk_client(two) as second,
    ):
        responses = await collect(first, user_message(text("mail bo")))
        task_id = task_id_of(responses)
        assert (await second.get_task(GetTaskRequest(id=task_id))).status.state == INPUT_REQUIRED
        after = await collect(second, user_message(text("approve"), task_id=task_id))
        assert states(after)[-1] == COMPLETED
        got = await first.get_task(GetTaskRequest(id=task_id))
        assert got.status.state == COMPLETED
        assert got.artifacts[0].parts[0].text == "sent to bo"


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_cancel_through_a_replica_stops_the_run_where_it_runs(
    kind: str, tmp_path: Path
) -> None:
    """``CancelTask`` sent to a replica that does not run the task reaches the run
    through the saver (``request_cancel``): the running tool sees its cancellation, the
    stream on the first app ends ``canceled``, and both apps answer ``canceled``."""
    gate = Gate()
    agent = served_agent(gate)
    async with (
        replica_savers(kind, tmp_path) as (saver_one, saver_two),
        served(agent, saver=saver_one) as one,
        served(agent, saver=saver_two) as two,
        sdk_client(one) as first,
        sdk_client(two) as second,
    ):
        seen: list[StreamResponse] = []
        started = anyio.Event()

        async def stream() -> None:
            async for response in first.send_message(user_message(text("slow job"))):
                seen.append(response)
                started.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(stream)
            with anyio.fail_after(30):
                await gate.started.wait()
                await started.wait()
            task_id = task_id_of(seen)
            assert (await second.get_task(GetTaskRequest(id=task_id))).status.state == WORKING
            cancelled = await second.cancel_task(CancelTaskRequest(id=task_id))
            assert cancelled.status.state == CANCELED
            with anyio.fail_after(10):
                await gate.cancelled.wait()
        assert states(seen)[-1] == CANCELED
        for client in (first, second):
            assert (await client.get_task(GetTaskRequest(id=task_id))).status.state == CANCELED


def calling_agent(remote: RemoteAgent, task: str) -> ReactAgent:
    """An agent that hands ``task`` to the remote agent, then answers with its result."""
    model = ScriptedChatModel(
        [
            asks(("r1", "helper", {"input": task})),
            lambda request: AssistantMessage(
                f"remote said: {request.messages[-1].responses[0].response_data}"
            ),
        ]
    )
    return ReactAgent("caller", model, tools=[remote.as_tool("helper")])


async def test_remote_agent_as_a_tool_answers_and_streams_progress_into_the_run() -> None:
    """``RemoteAgent(url).as_tool()`` in a calling agent: the remote task's answer is the
    tool's result, and the remote run's progress (its tool call's start and end, its text)
    arrives among the calling run's events as ``SubagentEvent``s naming the call."""
    async with served(served_agent(Gate())) as url:
        remote = RemoteAgent(url, headers={"x-user": "ann"})
        agent = calling_agent(remote, "please add")
        passed: list[SubagentEvent] = []
        async with agent.start("add via the helper") as run:
            async with run.events() as events:
                async for event in events:
                    if isinstance(event, SubagentEvent):
                        passed.append(event)
            result = await run.result()
    assert result.text == "remote said: 5"
    kinds = [type(e.event) for e in passed]
    assert ToolCallStarted in kinds and ToolCallFinished in kinds and ModelDelta in kinds
    started = next(e for e in passed if isinstance(e.event, ToolCallStarted))
    assert started.event.name == "add"
    assert (started.path[0].call_id, started.path[0].agent) == ("r1", "helper")


async def test_a_remote_task_waiting_for_input_ends_the_call_saying_so() -> None:
    """A remote task that pauses for approval (``input-required``) ends the tool call with
    a result saying the remote agent waits for input, with its message (the calling run
    is not paused: its model goes on); the remote task stays paused, and answerable."""
    async with served(served_agent(Gate())) as url:
        agent = calling_agent(RemoteAgent(url, headers={"x-user": "ann"}), "mail bo")
        result = await agent.invoke("mail bo through the helper")
        assert "waits for input to go on" in result.text
        assert "waiting for approval: send" in result.text
        match = re.search(r"\(task (\w+)\)", result.text)
        assert match is not None
        async with sdk_client(url) as client:
            task = await client.get_task(GetTaskRequest(id=match.group(1)))
            assert task.status.state == INPUT_REQUIRED


async def test_cancelling_the_remote_tool_call_cancels_the_remote_task() -> None:
    """``run.cancel_tool`` on a ``RemoteAgent`` call sends ``CancelTask``: the remote
    server's running tool sees its cancellation, the remote task is ``canceled``, and the
    calling run goes on with the cancellation text as the call's result."""
    gate = Gate()
    saver = MemorySaver()
    async with served(served_agent(gate), saver=saver) as url:
        remote = RemoteAgent(url, headers=lambda: {"x-user": "ann"})
        agent = calling_agent(remote, "slow job")
        remote_task = ""
        async with agent.start("do the slow job remotely") as run:
            async with run.events() as events:
                async for event in events:
                    if isinstance(event, SubagentEvent) and isinstance(
                        event.event, ToolCallStarted
                    ):
                        remote_task = event.path[0].run_id
                        with anyio.fail_after(30):
                            await gate.started.wait()
                        assert await run.cancel_tool("r1", "changed my mind")
                    if isinstance(event, ToolCallCancelled):
                        assert event.call_id == "r1"
            result = await run.result()
        with anyio.fail_after(5):
            await gate.cancelled.wait()
        assert "cancelled by the caller: changed my mind" in result.text
        async with sdk_client(url) as client:
            got = await client.get_task(GetTaskRequest(id=remote_task))
        assert got.status.state == CANCELED


@pytest.mark.usefixtures("node_clients")
async def test_the_js_sdk_client_sends_streams_gets_cancels_and_approves() -> None:
    """The A2A JS SDK's client (``@a2a-js/sdk`` under Node) against the served agent: the
    card, a send answered with the completed task, a stream ending completed, get, a
    task cancelled while its tool runs (the tool sees the cancellation), and a task paused
    for approval approved by a data part and another rejected by the text reject."""
    gate = Gate()
    async with served(served_agent(gate)) as url:
        lines = await run_node("a2a_flow.mjs", url, "ann")
    by_step = {line["step"]: line for line in lines}
    assert by_step["card"]["name"] == "helper"
    assert by_step["card"]["streaming"] is True
    assert by_step["send"] == {"step": "send", "state": "completed", "answer": "5"}
    assert by_step["stream"]["states"][0] == "working"
    assert by_step["stream"]["states"][-1] == "completed"
    assert by_step["stream"]["artifact"] == "5"
    assert by_step["get"]["state"] == "completed"
    assert by_step["cancel"]["state"] == "canceled"
    assert by_step["cancel"]["streamEnd"] == "canceled"
    assert gate.cancelled.is_set()
    assert by_step["paused"]["state"] == "input_required"
    assert by_step["approved"] == {"step": "approved", "state": "completed", "answer": "sent to bo"}
    assert by_step["rejected"]["state"] == "completed"
    assert "rejected" in by_step["rejected"]["answer"]
