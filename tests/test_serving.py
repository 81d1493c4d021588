"""The shared serving layer (``reactcore.serving``) through ``events_app``: a run streamed
as reactcore's JSON events over a real loopback server, steered through the endpoints
beside it (cancel one call, cancel the run, decide a pause), scoped to principals, bounded
by ``Limits``, and cancelled when its client leaves unless the service keeps it running."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from starlette.requests import Request

from reactcore import (
    AssistantMessage,
    MemorySaver,
    ReactAgent,
    RequestRefused,
    ToolResponseMessage,
    tool,
)
from reactcore.hooks import HumanInTheLoopHook
from reactcore.models.base import ModelRequest
from reactcore.serving import Limits, events_app, scoped_thread_id
from reactcore.serving._app import Served
from reactcore.testing import ScriptedChatModel
from tests.helpers import asks
from tests.serving_support import serve_app, sse_events

pytestmark = pytest.mark.anyio


def by_header(request: Request) -> str | None:
    """The principal is the ``x-user`` header (a test's stand-in for a verified token)."""
    return request.headers.get("x-user")


def answer_after_tools(request: ModelRequest) -> AssistantMessage:
    """The final answer: the tool results the model was given, in call order."""
    last = request.messages[-1]
    assert isinstance(last, ToolResponseMessage)
    return AssistantMessage("; ".join(r.response_data for r in last.responses))


@asynccontextmanager
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        yield http


def as_user(user: str) -> dict[str, str]:
    return {"x-user": user}


class Gate:
    """A tool body that waits until the test opens it, saying when it started and whether
    it was cancelled."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.open = anyio.Event()
        self.cancelled = anyio.Event()
        self.finished = anyio.Event()

    async def __call__(self) -> str:
        self.started.set()
        try:
            await self.open.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        self.finished.set()
        return "slow done"


def gated_agent(gate: Gate, **options: Any) -> ReactAgent:
    @tool
    async def fast() -> str:
        """Answer at once."""
        return "fast done"

    @tool
    async def slow() -> str:
        """Wait for the gate."""
        return await gate()

    model = ScriptedChatModel([asks(("f", "fast", {}), ("s", "slow", {})), answer_after_tools])
    return ReactAgent("served", model, tools=[fast, slow], parallel_tool_execution=True, **options)


async def test_one_call_is_cancelled_through_the_endpoint_while_the_other_finishes() -> None:
    """A client reads the run's events and, once the slow call started, cancels it by
    POST runs/{runId}/calls/{callId}/cancel: that call's end event carries the
    cancellation text, the other call finishes, and the run answers with both. Decisions
    for a run that is not paused are 409."""
    gate = Gate()
    app = events_app(gated_agent(gate), authorize=by_header)
    seen: list[tuple[str, Any]] = []
    async with client(app) as http:
        body = {"input": "go", "threadId": "t1"}
        async with http.stream("POST", "/", json=body, headers=as_user("ann")) as response:
            assert response.status_code == 200
            async for event, data in sse_events(response):
                seen.append((event, data))
                if event == "run_started":
                    run_id = data["runId"]
                if event == "tool_call_started" and data["call_id"] == "s":
                    await gate.started.wait()
                    unpaused = await http.post(
                        f"/runs/{run_id}/decisions",
                        json={"decisions": {"s": {"type": "approve"}}},
                        headers=as_user("ann"),
                    )
                    assert (unpaused.status_code, unpaused.json()["error"]["code"]) == (
                        409,
                        "not_paused",
                    )
                    url = f"/runs/{run_id}/calls/s/cancel"
                    answer = await http.post(url, json={"reason": "enough"}, headers=as_user("ann"))
                    assert answer.json() == {"cancelled": True}
    ends = {
        d["call_id"]: (e, d)
        for e, d in seen
        if e.startswith("tool_call_") and e != "tool_call_started"
    }
    cancelled_text = "Error: Tool execution was cancelled by the caller: enough"
    assert ends["s"][0] == "tool_call_cancelled"
    assert ends["s"][1]["response"]["response_data"] == cancelled_text
    assert ends["f"][0] == "tool_call_finished"
    assert ends["f"][1]["response"]["response_data"] == "fast done"
    assert gate.cancelled.is_set()
    finished = [d for e, d in seen if e == "run_finished"]
    assert finished[0]["result"]["text"] == f"fast done; {cancelled_text}"
    assert seen[-1][0] == "end"


def approving_agent(**options: Any) -> ReactAgent:
    @tool
    async def send(to: str) -> str:
        """Send a message."""
        return f"sent to {to}"

    model = ScriptedChatModel([asks(("c1", "send", {"to": "bo"})), answer_after_tools])
    hook = HumanInTheLoopHook({"send": True})
    return ReactAgent("mailer", model, tools=[send], hooks=[hook], saver=MemorySaver(), **options)


@pytest.mark.parametrize(
    ("decision", "result"),
    [({"type": "approve"}, "sent to bo"), ({"type": "reject", "reason": "not now"}, "not now")],
)
async def test_a_paused_stream_goes_on_after_a_decision_through_the_endpoint(
    decision: dict[str, Any], result: str
) -> None:
    """A run paused for approval keeps its stream open; GET runs/{id} lists the pending
    call, POST runs/{id}/decisions answers it (422 for a call that is not pending), and
    the same stream carries the next leg to the answer."""
    app = events_app(approving_agent(), authorize=by_header)
    events: list[str] = []
    async with client(app) as http:
        body = {"input": "mail bo", "threadId": "t1"}
        async with http.stream("POST", "/", json=body, headers=as_user("ann")) as response:
            async for event, data in sse_events(response):
                events.append(event)
                if event == "run_started":
                    run_id = data["runId"]
                if event == "run_interrupted":
                    status = (await http.get(f"/runs/{run_id}", headers=as_user("ann"))).json()
                    assert status["status"] == "interrupted"
                    assert [c["id"] for c in status["pending"]] == ["c1"]
                    assert status["threadId"] == "t1"
                    wrong = await http.post(
                        f"/runs/{run_id}/decisions",
                        json={"decisions": {"nope": {"type": "approve"}}},
                        headers=as_user("ann"),
                    )
                    assert wrong.status_code == 422
                    assert wrong.json()["error"]["code"] == "bad_decisions"
                    ok = await http.post(
                        f"/runs/{run_id}/decisions",
                        json={"decisions": {"c1": decision}},
                        headers=as_user("ann"),
                    )
                    assert ok.json() == {"resumed": True}
                if event == "run_finished":
                    assert data["result"]["text"] == result
    assert events.count("run_interrupted") == 1
    assert events[-2:] == ["run_finished", "end"]


async def test_another_principal_gets_404_on_every_endpoint_and_never_reaches_the_thread() -> None:
    """Runs and threads are scoped to the principal ``authorize`` names: for another one,
    every steering endpoint answers 404 with the same body as a run that does not exist
    (ids are not confirmed), and its request naming the same threadId starts its own
    thread. The owner's run is untouched."""
    app = events_app(approving_agent(), authorize=by_header)
    async with client(app) as http:
        body = {"input": "mail bo", "threadId": "shared-name"}
        async with http.stream("POST", "/", json=body, headers=as_user("ann")) as response:
            async for event, data in sse_events(response):
                if event == "run_started":
                    run_id = data["runId"]
                if event != "run_interrupted":
                    continue
                for who, rid in (("bob", run_id), ("ann", "0" * 12)):
                    answers = [
                        await http.get(f"/runs/{rid}", headers=as_user(who)),
                        await http.post(f"/runs/{rid}/cancel", headers=as_user(who)),
                        await http.post(f"/runs/{rid}/calls/c1/cancel", headers=as_user(who)),
                        await http.post(
                            f"/runs/{rid}/decisions",
                            json={"decisions": {"c1": {"type": "approve"}}},
                            headers=as_user(who),
                        ),
                    ]
                    assert [a.status_code for a in answers] == [404] * 4
                    assert {a.text for a in answers} == {
                        '{"error":{"code":"not_found","message":"no such run"}}'
                    }
                ok = await http.post(
                    f"/runs/{run_id}/decisions",
                    json={"decisions": {"c1": {"type": "approve"}}},
                    headers=as_user("ann"),
                )
                assert ok.status_code == 200
    served: Served = app.state.served
    saver = served.agent.saver
    assert saver is not None
    ann = await saver.get(scoped_thread_id("ann", "shared-name"))
    assert ann is not None
    assert await saver.get(scoped_thread_id("bob", "shared-name")) is None
    assert await saver.get("shared-name") is None  # the client's id is never used as is


def test_scoped_thread_ids_depend_on_both_parts_and_cannot_be_forged_by_joining() -> None:
    """The saver's thread id is a hash of the principal and the client's id, with the
    principal's length in it: ("a:b", "c") and ("a", "b:c") name different threads."""
    assert scoped_thread_id("ann", "t1") == scoped_thread_id("ann", "t1")
    assert scoped_thread_id("ann", "t1") != scoped_thread_id("bob", "t1")
    assert scoped_thread_id("a:b", "c") != scoped_thread_id("a", "b:c")
    assert scoped_thread_id("a", "b\0c") != scoped_thread_id("a\0b", "c")


async def test_authorize_refusals_and_failures_never_leak_details() -> None:
    """No principal → 401; ``RequestRefused`` from authorize → its own status and code; any
    other error → a bare 500 whose body holds neither the message nor a stack. An async
    authorize works like a sync one."""

    async def picky(request: Request) -> str | None:
        user = request.headers.get("x-user")
        if user == "mallory":
            raise RequestRefused(403, "forbidden", "go away")
        if user == "crash":
            raise RuntimeError("database password sk-live-123 rejected")
        return user

    app = events_app(gated_agent(Gate()), authorize=picky)
    async with client(app) as http:
        nobody = await http.post("/", json={"input": "x"})
        assert nobody.status_code == 401
        assert nobody.json() == {"error": {"code": "unauthorized", "message": "unauthorized"}}
        refused = await http.post("/", json={"input": "x"}, headers=as_user("mallory"))
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
        crash = await http.post("/", json={"input": "x"}, headers=as_user("crash"))
        assert crash.status_code == 500
        assert crash.json() == {"error": {"code": "internal", "message": "internal error"}}
        assert "sk-live" not in crash.text and "Traceback" not in crash.text
        bad = await http.post("/", content=b"{not json", headers=as_user("ann"))
        assert (bad.status_code, bad.json()["error"]["code"]) == (400, "bad_json")
        empty = await http.post("/", json={"input": ""}, headers=as_user("ann"))
        assert empty.status_code == 422


async def test_limits_bound_body_size_request_rate_and_live_runs() -> None:
    """A body over ``max_body_bytes`` is 413 (declared or streamed without a length); a
    principal past its burst is 429 with Retry-After while another principal still gets
    in; beyond ``max_live_runs`` streaming runs, 503."""
    gate = Gate()
    limits = Limits(max_body_bytes=200, requests_per_second=0.01, burst=3, max_live_runs=1)
    app = events_app(gated_agent(gate), authorize=by_header, limits=limits)
    async with client(app) as http:
        big = await http.post("/", json={"input": "x" * 500}, headers=as_user("ann"))
        assert (big.status_code, big.json()["error"]["code"]) == (413, "too_large")

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(10):
                yield b" " * 50

        streamed = await http.post("/", content=chunks(), headers=as_user("ann"))
        assert streamed.status_code == 413
        body = {"input": "go"}
        async with http.stream("POST", "/", json=body, headers=as_user("ann")) as first:
            assert first.status_code == 200
            await gate.started.wait()
            limited = await http.post("/", json=body, headers=as_user("ann"))
            assert limited.status_code == 429
            assert limited.headers["retry-after"] == "1"
            busy = await http.post("/", json=body, headers=as_user("bob"))
            assert (busy.status_code, busy.json()["error"]["code"]) == (503, "busy")
            gate.open.set()
            events = [event async for event, _ in sse_events(first)]
        assert "run_finished" in events


@pytest.mark.parametrize("keep_running", [False, True])
async def test_a_client_leaving_cancels_its_run_unless_the_service_keeps_runs(
    keep_running: bool,
) -> None:
    """The client closes the stream while a tool waits: by default the run is cancelled
    (the tool sees it) and its finished call is kept in the thread; with
    ``keep_running=True`` the run goes on to its answer, stored in the thread."""
    gate = Gate()
    saver = MemorySaver()
    app = events_app(gated_agent(gate), authorize=by_header, saver=saver, keep_running=keep_running)
    async with client(app) as http:
        body = {"input": "go", "threadId": "t1"}
        async with http.stream("POST", "/", json=body, headers=as_user("ann")) as response:
            async for event, _ in sse_events(response):
                if event == "tool_call_finished":
                    break  # the fast call is done; the slow one waits
        await gate.started.wait()
        if keep_running:
            gate.open.set()
            await gate.finished.wait()
        else:
            with anyio.fail_after(20):
                await gate.cancelled.wait()
        thread = scoped_thread_id("ann", "t1")
        with anyio.fail_after(20):
            while True:  # the last checkpoint is written as the run ends
                checkpoint = await saver.get(thread)
                messages = checkpoint.state.data["messages"] if checkpoint else []
                last = messages[-1] if messages else None
                if keep_running and isinstance(last, AssistantMessage) and last.text:
                    break
                if not keep_running and isinstance(last, ToolResponseMessage):
                    break
                await anyio.wait_all_tasks_blocked()
    assert last is not None
    if keep_running:
        assert last.text == "fast done; slow done"
    else:
        assert [r.response_data for r in last.responses] == ["fast done"]
        assert not gate.finished.is_set()


def test_bad_arguments_are_refused_at_construction_naming_the_parameter() -> None:
    """Each app argument is checked when the app is made."""
    agent = gated_agent(Gate())
    with pytest.raises(TypeError, match="agent must be a ReactAgent"):
        events_app(object(), authorize=by_header)
    with pytest.raises(TypeError, match="authorize must be a callable"):
        events_app(agent, authorize="ann")
    with pytest.raises(TypeError, match=r"limits must be a reactcore\.serving\.Limits"):
        events_app(agent, authorize=by_header, limits={"max_body_bytes": 1})
    with pytest.raises(TypeError, match="keep_running must be a bool"):
        events_app(agent, authorize=by_header, keep_running="yes")
    with pytest.raises(ValueError, match=r"Limits\.max_live_runs must be a positive number"):
        Limits(max_live_runs=0)


async def test_the_next_message_after_a_cancelled_run_goes_on_from_it() -> None:
    """A run cancelled through the endpoint mid-batch leaves its thread unfinished; the
    client's next message on that thread is not refused: the unanswered call is answered
    as cancelled, the finished one kept, and the model answers the new message."""
    gate = Gate()
    seen: list[ModelRequest] = []

    def final(request: ModelRequest) -> AssistantMessage:
        seen.append(request)
        return AssistantMessage("ok, something else")

    @tool
    async def fast() -> str:
        """Answer at once."""
        return "fast done"

    @tool
    async def slow() -> str:
        """Wait for the gate."""
        return await gate()

    model = ScriptedChatModel([asks(("f", "fast", {}), ("s", "slow", {})), final])
    agent = ReactAgent(
        "served", model, tools=[fast, slow], parallel_tool_execution=True, saver=MemorySaver()
    )
    app = events_app(agent, authorize=by_header)
    async with client(app) as http:
        body = {"input": "go", "threadId": "t1"}
        async with http.stream("POST", "/", json=body, headers=as_user("ann")) as response:
            events = []
            async for event, data in sse_events(response):
                events.append(event)
                if event == "run_started":
                    run_id = data["runId"]
                if event == "tool_call_finished":
                    await gate.started.wait()
                    cancel = await http.post(f"/runs/{run_id}/cancel", headers=as_user("ann"))
                    assert cancel.json() == {"cancelled": True}
        assert "run_failed" in events
        body = {"input": "something else", "threadId": "t1"}
        async with http.stream("POST", "/", json=body, headers=as_user("ann")) as response:
            events = [event async for event, _ in sse_events(response)]
    assert "run_finished" in events
    answered = seen[0].messages[-2]
    assert isinstance(answered, ToolResponseMessage)
    assert [r.response_data for r in answered.responses] == [
        "fast done",
        "Error: Tool execution was cancelled by the caller: the run ended before this call "
        "finished",
    ]
