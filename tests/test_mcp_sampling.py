"""A server asking the client during a call, against a real server: sampling answered by
the agent's model (through its interceptors, counted, with events, refused by policy or
when not enabled) and elicitation pausing the run, resumed with an answer or a decline.

The server is ``tests/mcp_servers/asking_server.py`` (the SDK's ``MCPServer``), over stdio
(a new process per test) and streamable HTTP (one process for the module), on asyncio
and trio.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_support import http_server, responses, toolset_maker

from reactcore import (
    Approve,
    AssistantMessage,
    Edit,
    MemorySaver,
    ModelCallFinished,
    ModelCallStarted,
    ReactAgent,
    Reject,
    Resume,
    RunnableConfig,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
)
from reactcore.hooks import ModelCallLimitHook
from reactcore.mcp import ElicitationAnswer, ElicitationRequest, MCPToolset, SamplingRequest
from reactcore.models.base import ModelRequest, ModelResponse
from reactcore.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio

ASKING = Path(__file__).parent / "mcp_servers" / "asking_server.py"
Factory = Callable[..., MCPToolset]


@pytest.fixture(scope="module")
def asking_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The asking server over streamable HTTP, for the module."""
    with http_server("http", tmp_path_factory.mktemp("asking") / "log", ASKING) as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def asking(request: pytest.FixtureRequest, asking_url: str) -> Factory:
    """Make a toolset on the asking server over the test's transport (options passed on)."""
    return toolset_maker(request.param, ASKING, asking_url)


def summarise(text: str = "a long text") -> AssistantMessage:
    return AssistantMessage("", [ToolCall("c1", "summarise", json.dumps({"text": text}))])


def book(tag: str) -> AssistantMessage:
    return AssistantMessage("", [ToolCall("c1", "book", json.dumps({"tag": tag}))])


def last_response(result: Any) -> str:
    return responses(result.messages)[-1].response_data


async def test_sampling_is_answered_by_the_agents_model_through_its_interceptors(
    asking: Factory,
) -> None:
    """With ``sampling=True`` the server's request is answered by the agent's model: the
    request carries the server's messages, system prompt and max tokens and no tools; it
    goes through the agent's model interceptors; model-call events with purpose
    ``mcp_sampling`` come between the call's start and end."""
    model = ScriptedChatModel([summarise(), "it is long", "done"])
    seen: list[str] = []

    class Watch:
        async def wrap_model_call(self, request: ModelRequest, handler: Any) -> ModelResponse:
            seen.append(request.purpose)
            return await handler(request)

    async with asking(sampling=True) as toolset:
        agent = ReactAgent("a", model, tools=[toolset], interceptors=[Watch()])
        async with agent.start("go") as run:
            events = [e async for e in run.events()]
            result = await run.result()
    assert last_response(result) == "summary: it is long"
    assert result.text == "done"
    sampled = model.requests[1]
    assert sampled.purpose == "mcp_sampling"
    assert [m.text for m in sampled.messages] == ["a long text"]
    assert sampled.system_message is not None and sampled.system_message.text == "Be brief."
    assert sampled.options.max_tokens == 50
    assert sampled.tools == () and sampled.dynamic_tools == ()
    assert seen == ["agent", "mcp_sampling", "agent"]
    kinds = [
        (type(e).__name__, getattr(e, "purpose", None))
        for e in events
        if isinstance(e, ModelCallStarted | ModelCallFinished | ToolCallStarted | ToolCallFinished)
    ]
    assert kinds == [
        ("ModelCallStarted", "agent"),
        ("ModelCallFinished", "agent"),
        ("ToolCallStarted", None),
        ("ModelCallStarted", "mcp_sampling"),
        ("ModelCallFinished", "mcp_sampling"),
        ("ToolCallFinished", None),
        ("ModelCallStarted", "agent"),
        ("ModelCallFinished", "agent"),
    ]


async def test_sampling_span_nests_under_the_calls_span(asking: Factory) -> None:
    """With a tracer, the sampling request's ``chat`` span is a child of the
    ``execute_tool`` span of the call it came during, not of the run's."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedChatModel([summarise(), "it is long", "done"])
    async with asking(sampling=True) as toolset:
        agent = ReactAgent("a", model, tools=[toolset], tracer_provider=provider)
        await agent.invoke("go")
    provider.shutdown()
    spans = {s.context.span_id: s for s in exporter.get_finished_spans() if s.context}
    parents = {
        s.name: spans[s.parent.span_id].name if s.parent else None
        for s in spans.values()
        if s.name != "chat" or s.parent is None or spans[s.parent.span_id].name != "invoke_agent a"
    }
    assert parents == {
        "invoke_agent a": None,
        "execute_tool summarise": "invoke_agent a",
        "chat": "execute_tool summarise",
    }


async def test_sampling_is_off_unless_enabled_and_refused_by_the_policy(asking: Factory) -> None:
    """Without ``sampling`` the server is refused and no model is asked; with a policy
    that says no, it is refused too, the policy having seen the request and its call."""
    model = ScriptedChatModel([summarise(), "done"])
    async with asking() as toolset:
        result = await ReactAgent("a", model, tools=[toolset]).invoke("go")
    assert last_response(result).startswith("refused: ")
    assert len(model.requests) == 2
    asked: list[SamplingRequest] = []

    def policy(request: SamplingRequest) -> bool:
        asked.append(request)
        return False

    model = ScriptedChatModel([summarise("secret"), "done"])
    async with asking(sampling=True, sampling_policy=policy) as toolset:
        result = await ReactAgent("a", model, tools=[toolset]).invoke("go")
    assert last_response(result) == "refused: sampling refused: the client's policy refused it"
    assert len(model.requests) == 2
    assert [m.text for m in asked[0].messages] == ["secret"]
    assert asked[0].call is not None and asked[0].call.id == "c1"
    assert asked[0].server == "test-asking"


async def test_sampling_counts_against_the_runs_model_call_limit(asking: Factory) -> None:
    """A sampling request is a model call of the run: with ``run_limit=1`` the agent's
    first turn uses it up, and the server's request is refused, naming the limit; with
    ``run_limit=2`` it is answered, and the agent's next turn is over the limit."""
    model = ScriptedChatModel([summarise(), "never"])
    hook = ModelCallLimitHook(run_limit=1)
    async with asking(sampling=True) as toolset:
        result = await ReactAgent("a", model, tools=[toolset], hooks=[hook]).invoke("go")
    assert "run limit (1/1)" in last_response(result)
    assert len(model.requests) == 1
    model = ScriptedChatModel([summarise(), "short", "never"])
    hook = ModelCallLimitHook(run_limit=2)
    async with asking(sampling=True) as toolset:
        result = await ReactAgent("a", model, tools=[toolset], hooks=[hook]).invoke("go")
    assert last_response(result) == "summary: short"
    assert result.text == "Model call limits exceeded: run limit (2/2)"
    assert len(model.requests) == 2


async def test_sampling_with_a_model_of_its_own(asking: Factory) -> None:
    """``sampling=<a ChatModel>`` asks that model, not the agent's."""
    agent_model = ScriptedChatModel([summarise(), "done"])
    own = ScriptedChatModel(["from my own model"])
    async with asking(sampling=own) as toolset:
        result = await ReactAgent("a", agent_model, tools=[toolset]).invoke("go")
    assert last_response(result) == "summary: from my own model"
    assert len(own.requests) == 1 and len(agent_model.requests) == 2


async def test_sampling_is_cancelled_with_its_call(asking: Factory) -> None:
    """Cancelling the call while its sampling request waits on the model stops the model
    call, and the run goes on with the call cancelled."""
    started, release = anyio.Event(), anyio.Event()

    async def slow(request: ModelRequest) -> str:
        started.set()
        await release.wait()
        return "never"

    model = ScriptedChatModel([summarise(), slow, "done"])
    async with asking(sampling=True) as toolset:
        agent = ReactAgent("a", model, tools=[toolset])
        async with agent.start("go") as run:
            await started.wait()
            assert await run.cancel_tool("c1", "enough")
            result = await run.result()
    assert "cancelled by the caller: enough" in last_response(result)
    assert result.text == "done"
    assert not release.is_set()


BESIDE_IDLE = [
    ToolCall("c1", "summarise", '{"text": "t", "after_idle": true}'),
    ToolCall("c2", "idle", "{}"),
]
"""Two calls in flight: ``summarise`` asks once ``idle`` runs (see ``beside_idle``)."""


async def beside_idle(model: ScriptedChatModel, toolset: MCPToolset) -> Any:
    """Run an agent (whose ``model`` asks for ``BESIDE_IDLE``) with parallel calls,
    cancelling ``idle`` once ``summarise`` ended; the result."""
    agent = ReactAgent("a", model, tools=[toolset], parallel_tool_execution=True)
    async with agent.start("go") as run, run.events() as events:
        async for event in events:
            if isinstance(event, ToolCallFinished) and event.call_id == "c1":
                await run.cancel_tool("c2")
        return await run.result()


async def test_which_call_asked_with_two_in_flight(asking: Factory, request: Any) -> None:
    """With two calls of the server in flight, streamable HTTP says which one asked (the
    request comes on that call's stream): it is answered. Over stdio nothing says so: the
    request is treated as one made outside any call, and refused."""
    calls = BESIDE_IDLE
    model = ScriptedChatModel([AssistantMessage("", calls), "short", "done"])
    async with asking(sampling=True) as toolset:
        result = await beside_idle(model, toolset)
    first = responses(result.messages)[0].response_data
    if request.node.callspec.params["asking"] == "http":
        assert first == "summary: short"
    else:
        assert first == "refused: sampling refused: it came outside a tool call"


async def test_outside_a_call_a_model_of_its_own_answers_if_the_policy_accepts(
    asking: Factory, request: Any
) -> None:
    """A request no call can be found for (stdio, two calls in flight) is answered when
    ``sampling`` is a model and the policy accepts it (the policy sees no call); over HTTP
    the call is found, and the policy sees it."""
    calls = BESIDE_IDLE
    model = ScriptedChatModel([AssistantMessage("", calls), "done"])
    own = ScriptedChatModel(["from my own model"])
    seen: list[ToolCall | None] = []

    def policy(asked: SamplingRequest) -> bool:
        seen.append(asked.call)
        return True

    async with asking(sampling=own, sampling_policy=policy) as toolset:
        result = await beside_idle(model, toolset)
    assert responses(result.messages)[0].response_data == "summary: from my own model"
    http = request.node.callspec.params["asking"] == "http"
    assert [c.id if c else None for c in seen] == (["c1"] if http else [None])


async def test_an_elicitation_policy_giving_no_answer_is_an_error_to_the_server(
    asking: Factory,
) -> None:
    """A policy returning something else than an ``ElicitationAnswer`` is a ``TypeError``
    in the client's callback: the server gets an error (its tool fails), the run goes on."""
    model = ScriptedChatModel([book(tag()), "ok"])
    async with asking(elicitation_policy=lambda request: "yes") as toolset:
        result = await ReactAgent("a", model, tools=[toolset]).invoke("book")
    assert responses(result.messages)[-1].is_error
    assert result.text == "ok"


def tag() -> str:
    return uuid.uuid4().hex[:8]


async def test_elicitation_pauses_the_run_and_a_resume_answers_it(asking: Factory) -> None:
    """The server asking the user pauses the run (status ``interrupted``, the request
    listed as ``c1/elicitation-1`` with its message and schema); resumed with ``Edit``
    the call runs again and the server gets the answer; an answer that does not fit the
    schema is a ``ValueError`` and the run stays paused."""
    name = tag()
    model = ScriptedChatModel([book(name), "booked"])
    config = RunnableConfig(thread_id=f"book-{name}")
    async with asking() as toolset:
        agent = ReactAgent("a", model, tools=[toolset], saver=MemorySaver())
        paused = await agent.invoke("book", config)
        assert paused.status == "interrupted"
        [waiting] = paused.interrupt.calls
        assert (waiting.id, waiting.name) == ("c1/elicitation-1", "mcp_elicitation")
        asked = json.loads(waiting.arguments)
        assert asked["message"] == "Which date, and how many seats?"
        assert set(asked["schema"]["properties"]) == {"date", "seats"}
        with pytest.raises(ValueError, match="seats"):
            await agent.invoke(Resume({waiting.id: Edit({"date": "monday"})}), config)
        answer = Edit({"date": "monday", "seats": 2})
        result = await agent.invoke(Resume({waiting.id: answer}), config)
        runs = await toolset.session.call_tool("runs", {"tag": name})
    assert result.status == "finished"
    assert last_response(result) == "accept monday 2"
    assert result.text == "booked"
    assert runs.structured_content == {"result": 2}  # paused once, run again on resume


async def test_elicitation_resumed_by_another_process_reruns_the_call(asking: Factory) -> None:
    """A process that dies while the run waits: another one, with a new toolset (a new
    session, a new server process over stdio) and the same saver, resumes the thread; the
    server's first request did not survive, the call runs again and gets the answer."""
    name, saver = tag(), MemorySaver()
    config = RunnableConfig(thread_id=f"crash-{name}")
    async with asking() as first:
        model = ScriptedChatModel([book(name)])
        paused = await ReactAgent("a", model, tools=[first], saver=saver).invoke("book", config)
    assert paused.status == "interrupted"
    async with asking() as second:  # the "new process": nothing of the first is left
        agent = ReactAgent("a", ScriptedChatModel(["booked"]), tools=[second], saver=saver)
        answer = Resume({"c1/elicitation-1": Edit({"date": "tuesday", "seats": 3})})
        result = await agent.invoke(answer, config)
    assert last_response(result) == "accept tuesday 3"
    assert result.text == "booked"


async def test_elicitation_inside_a_subagent_pauses_the_parent(asking: Factory) -> None:
    """A subagent whose MCP call asks the user pauses its parent, the request listed as
    ``<parent call>/<child call>/elicitation-1``; the parent's ``Resume`` reaches it."""
    name = tag()
    child_model = ScriptedChatModel([book(name), "booked for you"])
    parent_call = ToolCall("p1", "booker", json.dumps({"input": "book"}))
    parent_model = ScriptedChatModel([AssistantMessage("", [parent_call]), "all done"])
    config = RunnableConfig(thread_id=f"parent-{name}")
    async with asking() as toolset:
        child = ReactAgent("booker", child_model, tools=[toolset])
        parent = ReactAgent("p", parent_model, tools=[child.as_tool()], saver=MemorySaver())
        paused = await parent.invoke("book via the child", config)
        [waiting] = paused.interrupt.calls
        assert waiting.id == "p1/c1/elicitation-1"
        answer = Edit({"date": "monday", "seats": 1})
        result = await parent.invoke(Resume({waiting.id: answer}), config)
    assert result.text == "all done"
    assert last_response(result) == "booked for you"


async def test_elicitation_declined_by_the_resume(asking: Factory) -> None:
    """``Reject`` answers the server ``decline``; ``Approve`` would accept with no content."""
    model = ScriptedChatModel([book(tag()), "not booked"])
    config = RunnableConfig(thread_id=f"decline-{tag()}")
    async with asking() as toolset:
        agent = ReactAgent("a", model, tools=[toolset], saver=MemorySaver())
        paused = await agent.invoke("book", config)
        result = await agent.invoke(Resume({"c1/elicitation-1": Reject()}), config)
    assert paused.status == "interrupted"
    assert last_response(result) == "decline"


async def test_elicitation_without_a_saver_is_answered_by_the_policy_else_declined(
    asking: Factory,
) -> None:
    """With no way to pause (no saver), the policy answers (its answer checked against the
    schema), and without a policy the request is declined."""
    asked: list[ElicitationRequest] = []

    def policy(request: ElicitationRequest) -> ElicitationAnswer:
        asked.append(request)
        return ElicitationAnswer("accept", {"date": "friday", "seats": 4})

    model = ScriptedChatModel([book(tag()), "ok"])
    async with asking(elicitation_policy=policy) as toolset:
        result = await ReactAgent("a", model, tools=[toolset]).invoke("book")
    assert last_response(result) == "accept friday 4"
    assert asked[0].message == "Which date, and how many seats?"
    assert asked[0].call is not None and asked[0].call.id == "c1"
    model = ScriptedChatModel([book(tag()), "ok"])
    async with asking() as toolset:
        result = await ReactAgent("a", model, tools=[toolset]).invoke("book")
    assert last_response(result) == "decline"


async def test_elicitation_pause_with_a_live_run_handle(asking: Factory) -> None:
    """In a live run, the pause is ``run.result()`` with status ``interrupted``, and
    ``run.resume`` answers it (``Approve``: accept with no content, which this schema
    refuses, so ``Edit`` is used) under the same handle."""
    model = ScriptedChatModel([book(tag()), "booked"])
    config = RunnableConfig(thread_id=f"live-{tag()}")
    async with asking() as toolset:
        agent = ReactAgent("a", model, tools=[toolset], saver=MemorySaver())
        async with agent.start("book", config) as run:
            paused = await run.result()
            assert paused.status == "interrupted"
            with pytest.raises(ValueError, match="date"):
                await run.resume(Resume({"c1/elicitation-1": Approve()}))
            await run.resume(Resume({"c1/elicitation-1": Edit('{"date": "sunday", "seats": 1}')}))
            result = await run.result()
    assert last_response(result) == "accept sunday 1"


async def test_a_call_asking_twice_pauses_twice_and_the_second_resume_answers_both(
    asking: Factory,
) -> None:
    """A tool asking twice: the first pause lists its first request; resumed, the call runs
    again, gets that answer and asks the second, and the run pauses listing both (the call
    will ask both again); the second ``Resume`` answers both and the call ends."""
    model = ScriptedChatModel([AssistantMessage("", [ToolCall("c1", "trip")]), "planned"])
    config = RunnableConfig(thread_id=f"trip-{tag()}")
    async with asking() as toolset:
        agent = ReactAgent("a", model, tools=[toolset], saver=MemorySaver())
        first = await agent.invoke("plan", config)
        assert [c.id for c in first.interrupt.calls] == ["c1/elicitation-1"]
        start = Edit({"name": "Oslo"})
        second = await agent.invoke(Resume({"c1/elicitation-1": start}), config)
        asked = {c.id: json.loads(c.arguments)["message"] for c in second.interrupt.calls}
        assert asked == {"c1/elicitation-1": "From where?", "c1/elicitation-2": "To where?"}
        both = {"c1/elicitation-1": start, "c1/elicitation-2": Edit({"name": "Rome"})}
        result = await agent.invoke(Resume(both), config)
    assert last_response(result) == "from Oslo to Rome"


async def test_a_paused_call_is_stopped_before_its_request_is_answered(
    tmp_path: Path,
) -> None:
    """Over stdio the server hears of the call's cancellation before the answer
    (``cancel``) to the request the run paused for: the tool is stopped where it asked,
    and never goes on to ask more."""
    name = tag()
    call = ToolCall("c1", "trip", json.dumps({"tag": name}))
    model = ScriptedChatModel([AssistantMessage("", [call])])
    config = RunnableConfig(thread_id=f"stop-{name}")
    async with toolset_maker("stdio", ASKING, "")() as toolset:
        agent = ReactAgent("a", model, tools=[toolset], saver=MemorySaver())
        paused = await agent.invoke("plan", config)
        went_on = await toolset.session.call_tool("seconds", {"tag": name})
    assert paused.status == "interrupted"
    assert went_on.structured_content == {"result": 0}
