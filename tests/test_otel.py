"""reactcore.otel: the spans of a run, read back from the OpenTelemetry SDK's in-memory
exporter — their tree, names, attributes, statuses, and that none is left open."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from reactcore import (
    AnthropicModel,
    DefaultToolExceptionProcessor,
    OpenAIChatModel,
    ReactAgent,
    RunCancelled,
    RunnableConfig,
    ToolCallStarted,
    ToolExecutionError,
    ToolResponseMessage,
    Usage,
    tool,
)
from reactcore.interceptors import ModelFallbackInterceptor
from reactcore.otel import CAPTURE_CONTENT_ENV, OpenTelemetryTracer, instrument, uninstrument
from reactcore.testing import (
    AnthropicSSEReply,
    HTTPReply,
    ScriptedChatModel,
    SSEReply,
    anthropic_error_reply,
    serve_anthropic,
    serve_openai_compatible,
)
from tests.helpers import asks
from tests.providers import PROVIDERS, Provider

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class OpenSpans(SpanProcessor):
    """Counts the spans started and not yet ended."""

    def __init__(self) -> None:
        self.open: dict[int, str] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.open[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.open.pop(span.context.span_id, None)


class Traces:
    """A tracer provider exporting to memory, and helpers to read its spans."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.opened = OpenSpans()
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.opened)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> ReadableSpan:
        (found,) = [s for s in self.spans if s.name == name]
        return found

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        parent_id = parent.context.span_id
        found = [s for s in self.spans if s.parent is not None and s.parent.span_id == parent_id]
        return sorted(found, key=lambda s: s.start_time or 0)


@pytest.fixture
def traces() -> Iterator[Traces]:
    found = Traces()
    yield found
    found.provider.shutdown()


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def all_values(spans: list[ReadableSpan]) -> str:
    """Every attribute and event attribute value of ``spans``, as one text."""
    texts: list[str] = []
    for span in spans:
        texts.extend(str(v) for v in attributes(span).values())
        for event in span.events:
            texts.append(event.name)
            texts.extend(str(v) for v in (event.attributes or {}).values())
    return "\n".join(texts)


# --- tools ----------------------------------------------------------------------------------


@tool(timeout=0.2)
async def stuck(city: str) -> str:
    """Never answers in time."""
    await anyio.sleep(30)
    return "never"


@tool
async def broken(city: str) -> str:
    """Always fails."""
    raise RuntimeError(f"no data for {city}")


@tool
async def slow(city: str) -> str:
    """A long search, worth cancelling."""
    await anyio.sleep(30)
    return "never"


BATCH = asks(
    ("c_stuck", "stuck", {"city": "Oslo"}),
    ("c_broken", "broken", {"city": "Oslo"}),
    ("c_slow", "slow", {"city": "Oslo"}),
)


async def run_batch_of_three(agent: ReactAgent) -> None:
    """Run ``agent`` on BATCH, cancelling the call to ``slow`` once it runs."""
    async with agent.start("Weather in Oslo?", RunnableConfig(thread_id="th-1")) as run:
        async with run.events() as events:
            async for event in events:
                if isinstance(event, ToolCallStarted) and event.call_id == "c_slow":
                    assert await run.cancel_tool("c_slow", "the user moved on")
        await run.result()


async def test_parallel_batch_span_tree_and_outcomes(traces: Traces) -> None:
    """One run → invoke_agent with, as children in order, chat, three execute_tool spans
    (siblings overlapping in time) and chat. The timed-out, raising and cancelled calls
    end with an error status and their outcome; the model gets their error texts."""
    model = ScriptedChatModel([BATCH, "Sorry, no weather today."], usage=Usage(10, 5, 15))
    agent = ReactAgent(
        "forecaster",
        model,
        tools=[stuck, broken, slow],
        parallel_tool_execution=True,
        tracer_provider=traces.provider,
    )
    await run_batch_of_three(agent)

    run_span = traces.named("invoke_agent forecaster")
    assert run_span.parent is None
    assert [s.name for s in traces.children(run_span)] == [
        "chat",
        "execute_tool stuck",
        "execute_tool broken",
        "execute_tool slow",
        "chat",
    ]
    tools = traces.children(run_span)[1:4]
    # All three ran at once: each started before either long call (timed out, cancelled)
    # ended.
    long_calls = [s for s in tools if s.name != "execute_tool broken"]
    assert max(s.start_time or 0 for s in tools) < min(s.end_time or 0 for s in long_calls)
    assert all(traces.children(s) == [] for s in tools)
    run_attrs = attributes(run_span)
    assert run_attrs["gen_ai.operation.name"] == "invoke_agent"
    assert run_attrs["gen_ai.agent.name"] == "forecaster"
    assert run_attrs["gen_ai.conversation.id"] == "th-1"
    assert run_attrs["reactcore.run.status"] == "finished"
    assert (run_attrs["gen_ai.usage.input_tokens"], run_attrs["gen_ai.usage.output_tokens"]) == (
        20,
        10,
    )
    assert run_span.status.status_code is StatusCode.UNSET

    by_name = {s.name: s for s in tools}
    timed_out = by_name["execute_tool stuck"]
    assert attributes(timed_out)["reactcore.tool.outcome"] == "timed_out"
    assert attributes(timed_out)["error.type"] == "timeout"
    assert timed_out.status.status_code is StatusCode.ERROR
    raised = by_name["execute_tool broken"]
    assert attributes(raised)["reactcore.tool.outcome"] == "error"
    assert attributes(raised)["error.type"] == "RuntimeError"
    assert raised.status.status_code is StatusCode.ERROR
    exception = next(e for e in raised.events if e.name == "exception")
    assert (exception.attributes or {})["exception.type"] == "RuntimeError"
    cancelled = by_name["execute_tool slow"]
    assert attributes(cancelled)["reactcore.tool.outcome"] == "cancelled"
    assert attributes(cancelled)["error.type"] == "cancelled"
    assert cancelled.status.status_code is StatusCode.ERROR
    for span in tools:
        attrs = attributes(span)
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert attrs["gen_ai.tool.name"] == span.name.removeprefix("execute_tool ")
        assert attrs["gen_ai.tool.call.id"] == "c_" + attrs["gen_ai.tool.name"]
        assert attrs["reactcore.tool.duration"] >= 0

    answers = model.requests[1].messages[-1]
    assert isinstance(answers, ToolResponseMessage)
    assert [r.response_data for r in answers.responses] == [
        "Error: Tool execution timed out after 0.2s (tool 'stuck')",
        "Error: RuntimeError: no data for Oslo (tool 'broken')",
        "Error: Tool execution was cancelled by the caller: the user moved on",
    ]
    assert traces.opened.open == {}


async def test_no_content_without_opt_in(traces: Traces) -> None:
    """By default no span holds the prompt, the answer, tool arguments or results."""
    model = ScriptedChatModel([asks(("c1", "echo", {"text": "secret plan"})), "the secret answer"])

    @tool
    async def echo(text: str) -> str:
        """Say it back."""
        return f"echoed {text}"

    agent = ReactAgent(
        "a", model, tools=[echo], system_prompt="Private rules.", tracer_provider=traces.provider
    )
    result = await agent.invoke("Tell me the secret plan")
    assert result.text == "the secret answer"
    text = all_values(traces.spans)
    for secret in ("secret plan", "secret answer", "Private rules", "echoed"):
        assert secret not in text
    opt_in = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    assert not any(opt_in & set(attributes(s)) for s in traces.spans)


async def test_content_when_opted_in(traces: Traces) -> None:
    """With capture_content the chat span has the messages sent and received, and the
    tool span the arguments and the result, in the conventions' JSON forms."""
    model = ScriptedChatModel([asks(("c1", "echo", {"text": "hi"})), "done"])

    @tool
    async def echo(text: str) -> str:
        """Say it back."""
        return f"echoed {text}"

    tracer = OpenTelemetryTracer(traces.provider, capture_content=True)
    agent = ReactAgent("a", model, tools=[echo], system_prompt="Be brief.", tracer_provider=tracer)
    await agent.invoke("Say hi")
    first_chat, second_chat = [s for s in traces.spans if s.name == "chat"]
    assert json.loads(attributes(first_chat)["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Say hi"}]}
    ]
    assert json.loads(attributes(first_chat)["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "Be brief."}
    ]
    assert json.loads(attributes(first_chat)["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "echo", "arguments": {"text": "hi"}}
            ],
            "finish_reason": "tool_calls",
        }
    ]
    assert json.loads(attributes(second_chat)["gen_ai.input.messages"])[-1] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "c1", "response": "echoed hi"}],
    }
    tool_span = traces.named("execute_tool echo")
    assert attributes(tool_span)["gen_ai.tool.call.arguments"] == '{"text": "hi"}'
    assert attributes(tool_span)["gen_ai.tool.call.result"] == "echoed hi"


async def test_chat_span_over_http_with_a_retry(traces: Traces) -> None:
    """Over real HTTP: the chat span names the model sent, the server address and port,
    the finish reason and token usage; the client's retry after a 503 is an event of it;
    the API key appears nowhere, even with content capture on."""
    with serve_openai_compatible(
        [
            HTTPReply.error(503, "busy"),
            SSEReply.of("It is sunny.", usage=Usage(12, 4, 16)),
        ]
    ) as server:
        model = OpenAIChatModel(
            "gpt-test", base_url=server.base_url, api_key="sk-very-secret", retry_backoff=0.01
        )
        tracer = OpenTelemetryTracer(traces.provider, capture_content=True)
        async with model:
            agent = ReactAgent("a", model, tracer_provider=tracer)
            assert (await agent.invoke("Weather?")).text == "It is sunny."
    chat = traces.named("chat gpt-test")
    attrs = attributes(chat)
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "gpt-test"
    assert attrs["server.address"] == "127.0.0.1"
    assert attrs["server.port"] == int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (12, 4)
    assert chat.kind is trace.SpanKind.CLIENT
    (retry,) = chat.events
    assert retry.name == "model_request_retry"
    assert (retry.attributes or {})["status"] == 503
    assert (retry.attributes or {})["attempt"] == 1
    assert "sk-very-secret" not in all_values(traces.spans)


async def test_chat_span_of_an_anthropic_call(traces: Traces) -> None:
    """Over real HTTP to the loopback Anthropic server: the run and chat spans name the
    provider ``anthropic``; the chat span has the model, server, finish reason and usage,
    and the 529 ``overloaded`` retry as an event; the API key appears nowhere."""
    with serve_anthropic(
        [
            anthropic_error_reply(529, "busy", error_type="overloaded_error"),
            AnthropicSSEReply.of("It is sunny.", usage=Usage(12, 4, 16)),
        ]
    ) as server:
        model = AnthropicModel(
            "claude-test", base_url=server.base_url, api_key="sk-ant-secret", retry_backoff=0.01
        )
        tracer = OpenTelemetryTracer(traces.provider, capture_content=True)
        async with model:
            agent = ReactAgent("a", model, tracer_provider=tracer)
            assert (await agent.invoke("Weather?")).text == "It is sunny."
    chat = attributes(traces.named("chat claude-test"))
    assert chat["gen_ai.provider.name"] == "anthropic"
    assert attributes(traces.named("invoke_agent a"))["gen_ai.provider.name"] == "anthropic"
    assert (chat["gen_ai.request.model"], chat["server.address"]) == ("claude-test", "127.0.0.1")
    assert chat["gen_ai.response.finish_reasons"] == ("stop",)
    assert (chat["gen_ai.usage.input_tokens"], chat["gen_ai.usage.output_tokens"]) == (12, 4)
    (retry,) = traces.named("chat claude-test").events
    assert (retry.name, (retry.attributes or {})["status"]) == ("model_request_retry", 529)
    assert "sk-ant-secret" not in all_values(traces.spans)


async def test_fallback_renames_the_chat_span(traces: Traces) -> None:
    """When the primary model fails and a fallback answers, the one chat span carries the
    model actually used, two attempts, and the fallback as an event."""
    with serve_openai_compatible(
        [HTTPReply.error(400, "unknown model"), HTTPReply.completion("hello")]
    ) as server:
        primary = OpenAIChatModel("primary", base_url=server.base_url, api_key="k")
        backup = OpenAIChatModel("backup", base_url=server.base_url, api_key="k")
        async with primary, backup:
            agent = ReactAgent(
                "a",
                primary,
                interceptors=[ModelFallbackInterceptor([backup])],
                tracer_provider=traces.provider,
            )
            result = await agent.invoke("hi", RunnableConfig(metadata={"_stream_": False}))
    assert result.text == "hello"
    (chat,) = [s for s in traces.spans if s.name.startswith("chat")]
    assert chat.name == "chat backup"
    assert attributes(chat)["gen_ai.request.model"] == "backup"
    assert attributes(chat)["reactcore.model.attempts"] == 2
    assert attributes(chat)["gen_ai.response.finish_reasons"] == ("stop",)
    assert [e.name for e in chat.events] == ["model_fallback"]


async def test_failed_run_ends_its_spans_with_the_error(traces: Traces) -> None:
    """A model error that ends the run: the chat span and the run span have an error
    status and error.type; the caller gets the error itself."""
    with serve_openai_compatible([HTTPReply.error(401, "bad key")]) as server:
        model = OpenAIChatModel("m", base_url=server.base_url, api_key="k")
        async with model:
            agent = ReactAgent("a", model, tracer_provider=traces.provider)
            with pytest.raises(Exception, match="401") as raised:
                await agent.invoke("hi")
    assert type(raised.value).__name__ == "ModelHTTPError"
    run_span = traces.named("invoke_agent a")
    chat = traces.named("chat m")
    for span in (run_span, chat):
        assert span.status.status_code is StatusCode.ERROR
        assert attributes(span)["error.type"] == "ModelHTTPError"
    assert attributes(run_span)["reactcore.run.status"] == "failed"
    assert traces.opened.open == {}


async def test_sync_tools_in_threads_keep_their_parent(traces: Traces) -> None:
    """A sync tool runs in a worker thread, yet a span it starts there is a child of its
    own execute_tool span (the context follows the call into the thread)."""
    tracer = traces.provider.get_tracer("tool-code")
    threads: dict[str, int] = {}

    @tool
    def lookup(key: str) -> str:
        """A blocking lookup that traces itself."""
        threads[key] = threading.get_ident()
        with tracer.start_as_current_span(f"db {key}"):
            return key.upper()

    model = ScriptedChatModel(
        [asks(("c1", "lookup", {"key": "a"}), ("c2", "lookup", {"key": "b"})), "ok"]
    )
    agent = ReactAgent(
        "a", model, tools=[lookup], parallel_tool_execution=True, tracer_provider=traces.provider
    )
    await agent.invoke("go")
    assert threading.get_ident() not in threads.values()
    tool_spans = {
        attributes(s)["gen_ai.tool.call.id"]: s
        for s in traces.spans
        if s.name == "execute_tool lookup"
    }
    for call_id, key in (("c1", "a"), ("c2", "b")):
        inner = traces.named(f"db {key}")
        assert inner.parent is not None
        assert inner.parent.span_id == tool_spans[call_id].context.span_id


@pytest.mark.parametrize("parallel", [True, False])
async def test_run_cancelled_mid_batch_leaves_no_span_open(traces: Traces, parallel: bool) -> None:
    """Cancelling the run while its tools run: every span has ended, the tool spans and
    the run span with an error status; afterwards the caller's current span is its own."""
    model = ScriptedChatModel([asks(("c1", "slow", {"city": "a"}), ("c2", "slow", {"city": "b"}))])
    agent = ReactAgent(
        "a", model, tools=[slow], parallel_tool_execution=parallel, tracer_provider=traces.provider
    )
    caller = traces.provider.get_tracer("caller")
    with caller.start_as_current_span("request") as request_span:
        async with agent.start("go") as run, run.events() as events:
            async for event in events:
                if isinstance(event, ToolCallStarted):
                    await anyio.wait_all_tasks_blocked()
                    await run.cancel()
        with pytest.raises(RunCancelled):
            await run.result()
        assert trace.get_current_span() is request_span
    assert traces.opened.open == {}
    run_span = traces.named("invoke_agent a")
    assert run_span.parent is not None
    assert run_span.parent.span_id == request_span.get_span_context().span_id
    assert run_span.status.status_code is StatusCode.ERROR
    assert attributes(run_span)["reactcore.run.status"] == "cancelled"
    assert attributes(run_span)["error.type"] == "cancelled"
    tool_spans = [s for s in traces.spans if s.name == "execute_tool slow"]
    assert len(tool_spans) == (2 if parallel else 1)
    for span in tool_spans:
        assert span.status.status_code is StatusCode.ERROR
        assert attributes(span)["reactcore.tool.outcome"] == "cancelled"


async def test_cancelled_from_outside_ends_every_span(traces: Traces) -> None:
    """A caller's cancel scope that stops invoke() mid-batch: no span is left open."""
    model = ScriptedChatModel([asks(("c1", "slow", {"city": "a"}), ("c2", "slow", {"city": "b"}))])
    agent = ReactAgent(
        "a", model, tools=[slow], parallel_tool_execution=True, tracer_provider=traces.provider
    )
    with anyio.CancelScope() as scope:
        async with agent.start("go") as run, run.events() as events:
            async for event in events:
                if isinstance(event, ToolCallStarted) and event.call_id == "c2":
                    await anyio.wait_all_tasks_blocked()
                    scope.cancel()
    assert scope.cancelled_caught
    assert traces.opened.open == {}
    assert len([s for s in traces.spans if s.name == "execute_tool slow"]) == 2
    assert all(s.status.status_code is StatusCode.ERROR for s in traces.spans if s.name != "chat")


async def test_instrument_traces_every_agent_until_uninstrumented(traces: Traces) -> None:
    """instrument() traces agents that have no tracer_provider of their own, without
    setting OpenTelemetry's global provider; uninstrument() stops it."""
    before = trace.get_tracer_provider()
    agent = ReactAgent("plain", ScriptedChatModel(["one", "two"]))
    instrument(traces.provider)
    try:
        await agent.invoke("first")
    finally:
        uninstrument()
    await agent.invoke("second")
    assert trace.get_tracer_provider() is before
    assert [s.name for s in traces.spans] == ["chat", "invoke_agent plain"]


async def test_untraced_agent_inside_a_traced_tool_is_traced_under_it(traces: Traces) -> None:
    """An agent run from a traced agent's tool is traced by the same tracer, its run span
    under the tool's span."""
    inner = ReactAgent("inner", ScriptedChatModel(["inner answer"]))

    @tool
    async def ask_inner(question: str) -> str:
        """Ask the inner agent."""
        return (await inner.invoke(question)).text

    model = ScriptedChatModel([asks(("c1", "ask_inner", {"question": "q"})), "done"])
    outer = ReactAgent("outer", model, tools=[ask_inner], tracer_provider=traces.provider)
    await outer.invoke("go")
    inner_run = traces.named("invoke_agent inner")
    assert inner_run.parent is not None
    assert inner_run.parent.span_id == traces.named("execute_tool ask_inner").context.span_id


def test_reactcore_does_not_import_opentelemetry() -> None:
    """Importing reactcore (and running an agent) loads no OpenTelemetry module."""
    code = (
        "import sys, anyio, reactcore\n"
        "from reactcore.testing import ScriptedChatModel\n"
        "agent = reactcore.ReactAgent('a', ScriptedChatModel(['hi']))\n"
        "anyio.run(agent.invoke, 'go')\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_service_example_traces_a_run_under_its_request(traces: Traces) -> None:
    """examples/asyncio_service.py with tracing: the run started by ``POST /runs`` has its
    invoke_agent span under that request's span, with the model and tool spans under it;
    cancelling the slow tool over HTTP ends its span as cancelled."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        service = importlib.import_module("asyncio_service")
    finally:
        sys.path.remove(str(EXAMPLES))
    app = service.traced_app(traces.provider)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://service") as client,
    ):
        created = await client.post("/runs", json={"input": "Lisbon"})
        run = app.state.runs.records[created.json()["run_id"]].run
        async with run.events() as events:
            async for event in events:
                if isinstance(event, ToolCallStarted) and event.call_id == "call_hotels":
                    cancel = await client.post(f"/runs/{run.run_id}/tools/call_hotels/cancel")
                    assert cancel.json() == {"cancelled": True}
        assert (await run.result()).text.startswith("Here is what I found.")
    request_span = traces.named("POST /runs")
    run_span = traces.named("invoke_agent travel")
    assert run_span.parent is not None
    assert run_span.parent.span_id == request_span.context.span_id
    assert [s.name for s in traces.children(run_span)] == [
        "chat",
        "execute_tool weather",
        "execute_tool find_hotels",
        "chat",
    ]
    hotels = traces.named("execute_tool find_hotels")
    assert attributes(hotels)["reactcore.tool.outcome"] == "cancelled"
    assert traces.opened.open == {}


async def test_tool_error_that_ends_the_run(traces: Traces) -> None:
    """With always_throw a tool's error ends the run: its span still ends, as an error
    with the tool's exception, and so does the run span."""
    model = ScriptedChatModel([asks(("c1", "broken", {"city": "Rome"}))])
    agent = ReactAgent(
        "a",
        model,
        tools=[broken],
        exception_processor=DefaultToolExceptionProcessor(always_throw=True),
        tracer_provider=traces.provider,
    )
    with pytest.raises(ToolExecutionError):
        await agent.invoke("go")
    tool_span = traces.named("execute_tool broken")
    assert attributes(tool_span)["reactcore.tool.outcome"] == "error"
    assert attributes(tool_span)["error.type"] == "RuntimeError"
    assert tool_span.status.status_code is StatusCode.ERROR
    run_span = traces.named("invoke_agent a")
    assert attributes(run_span)["error.type"] == "ToolExecutionError"
    assert attributes(run_span)["reactcore.run.status"] == "failed"
    assert traces.opened.open == {}


def test_tracer_provider_without_opentelemetry_says_what_to_install() -> None:
    """Without opentelemetry installed, tracer_provider= fails at construction with an
    ImportError naming the extra to install."""
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "import reactcore\n"
        "from reactcore.testing import ScriptedChatModel\n"
        "class Provider:\n"  # what a TracerProvider looks like to the agent
        "    def get_tracer(self, *args): ...\n"
        "try:\n"
        "    reactcore.ReactAgent('a', ScriptedChatModel(['hi']), tracer_provider=Provider())\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (
        out.stdout.strip() == "tracer_provider needs OpenTelemetry: pip install 'reactcore[otel]'"
    )


def test_content_capture_follows_the_conventions_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    """OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true opts in; unset, it is off;
    an explicit capture_content wins over it."""
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    assert not OpenTelemetryTracer().capture_content
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    assert OpenTelemetryTracer().capture_content
    assert not OpenTelemetryTracer(capture_content=False).capture_content
    try:
        assert not instrument(capture_content=False).capture_content
    finally:
        uninstrument()


_CONVENTION_NAMES = {
    "openai": "openai",
    "anthropic": "anthropic",
    "openai-responses": "openai",
    "google": "gcp.gemini",
    "azure": "azure.ai.openai",
    "google-vertex": "gcp.vertex_ai",
    "anthropic-vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
}


@pytest.mark.parametrize("driver", PROVIDERS, ids=lambda d: d.name)
async def test_every_provider_is_named_as_the_conventions_name_it(
    traces: Traces, driver: Provider
) -> None:
    """Over each provider's loopback server, the chat and agent spans carry the
    ``gen_ai.provider.name`` the OpenTelemetry conventions give it (the Responses API is
    ``openai``, Gemini ``gcp.gemini``), not the key of its provider data."""
    with driver.serve([driver.reply("Hi.")]) as server:
        tracer = OpenTelemetryTracer(traces.provider)
        agent = ReactAgent("a", driver.model(server), tracer_provider=tracer)
        assert (await agent.invoke("Hello?")).text == "Hi."
    expected = _CONVENTION_NAMES[driver.name]
    assert attributes(traces.named("invoke_agent a"))["gen_ai.provider.name"] == expected
    chat = next(s for s in traces.spans if s.name.startswith("chat "))
    assert attributes(chat)["gen_ai.provider.name"] == expected
