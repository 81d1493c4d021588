"""ReactAgent end to end on OpenAIChatModel against a real local OpenAI-compatible server
(uvicorn on 127.0.0.1): what the agent sends, and what it makes of the answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from reactcore import (
    AssistantMessage,
    MemorySaver,
    ModelCallFinished,
    ModelCallRetried,
    ModelCallStarted,
    ModelChunk,
    ModelDelta,
    ModelRetryInterceptor,
    ModelTruncatedError,
    OpenAIChatModel,
    ReactAgent,
    RunCancelled,
    RunnableConfig,
    SqliteSaver,
    Usage,
    tool,
)
from reactcore.hooks import ModelCallLimitHook
from reactcore.interceptors import ModelFallbackInterceptor
from reactcore.testing import (
    HTTPReply,
    OpenAICompatibleServer,
    ServerReply,
    SSEReply,
    serve_openai_compatible,
)
from tests.helpers import asks

pytestmark = pytest.mark.anyio


@pytest.fixture
def servers() -> Iterator[Any]:
    """Start local servers on demand; all are stopped after the test."""
    stack: list[Any] = []

    def start(script: Any) -> OpenAICompatibleServer:
        manager = serve_openai_compatible(script)
        stack.append(manager)
        return manager.__enter__()

    yield start
    for manager in reversed(stack):
        manager.__exit__(None, None, None)


def model_on(server: OpenAICompatibleServer, **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        "test-model", base_url=server.base_url, api_key="sk-test", retry_backoff=0.01, **kwargs
    )


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(return_direct=True)
async def lookup(key: str) -> str:
    """Look a key up; its value is the answer."""
    return f"value of {key}"


async def test_two_turn_tool_conversation_over_http(servers: Any) -> None:
    """Streamed tool call, tool run, streamed answer; the second request echoes the
    assistant's tool_calls and answers them with `tool` messages carrying tool_call_id."""
    server = servers(
        [
            SSEReply.of(asks(("call_1", "weather", {"city": "Oslo"})), usage=Usage(7, 3, 10)),
            SSEReply.of("It is sunny in Oslo.", usage=Usage(20, 6, 26)),
        ]
    )
    async with model_on(server) as model:
        agent = ReactAgent("forecaster", model, tools=[weather], system_prompt="Be brief.")
        result = await agent.invoke("Weather in Oslo?")
    assert result.text == "It is sunny in Oslo."
    assert result.usage == Usage(27, 9, 36)
    first, second = server.requests
    assert first["stream"] is True
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert first["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "The weather in a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "additionalProperties": False,
                    "required": ["city"],
                },
            },
        }
    ]
    assistant, answer = second["messages"][-2:]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
        }
    ]
    assert answer == {"role": "tool", "tool_call_id": "call_1", "content": "sunny in Oslo"}


async def test_parallel_tool_calls_over_http(servers: Any) -> None:
    """Several tool calls in one streamed answer run in parallel and are all answered."""
    many = asks(*((f"c{i}", "weather", {"city": f"city{i}"}) for i in range(3)))
    server = servers([SSEReply.of(many, chunk_size=2), SSEReply.of("done")])
    async with model_on(server) as model:
        agent = ReactAgent("a", model, tools=[weather], parallel_tool_execution=True)
        result = await agent.invoke("go")
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c0", "c1", "c2"]
    assert [m["content"] for m in tool_messages] == [f"sunny in city{i}" for i in range(3)]
    assert result.text == "done"


@pytest.mark.parametrize(
    ("options", "sent"),
    [
        ({}, False),
        ({"parallel_tool_execution": True}, True),
        ({"parallel_tool_execution": True, "parallel_tool_calls": False}, False),
        ({"parallel_tool_calls": None}, None),
    ],
    ids=["sequential", "parallel", "overridden", "not-sent"],
)
async def test_parallel_tool_calls_follows_parallel_tool_execution(
    servers: Any, options: dict[str, Any], sent: bool | None
) -> None:
    """The model is told ``parallel_tool_calls`` from ``parallel_tool_execution`` unless
    the agent is given ``parallel_tool_calls`` (``None``: the field is not sent)."""
    server = servers([SSEReply.of("done")])
    async with model_on(server) as model:
        await ReactAgent("a", model, tools=[weather], **options).invoke("go")
    assert server.requests[0].get("parallel_tool_calls", None) is sent
    assert ("parallel_tool_calls" in server.requests[0]) is (sent is not None)


async def test_return_direct_over_http(servers: Any) -> None:
    """A return_direct tool ends the run: one model request, the tool's text as answer."""
    server = servers([SSEReply.of(asks(("c", "lookup", {"key": "k"})))])
    async with model_on(server) as model:
        result = await ReactAgent("a", model, tools=[lookup]).invoke("go")
    assert result.text == "value of k"
    assert len(server.requests) == 1


@attrs.frozen
class Forecast:
    city: str
    temperature: int


async def test_structured_output_without_streaming(servers: Any) -> None:
    """With `_stream_: False` the agent makes one non-streaming request and parses the
    JSON answer into output_type."""
    server = servers([HTTPReply.completion('{"city": "Oslo", "temperature": 4}')])
    async with model_on(server) as model:
        agent = ReactAgent("a", model, output_type=Forecast)
        result = await agent.invoke("forecast", RunnableConfig(metadata={"_stream_": False}))
    assert result.output == Forecast("Oslo", 4)
    assert "stream" not in server.requests[0] or server.requests[0]["stream"] is False
    assert '"temperature"' in server.requests[0]["messages"][-1]["content"]


async def test_model_call_limit_over_http(servers: Any) -> None:
    """The model-call limit ends the run without another request."""
    server = servers([SSEReply.of(asks(("c", "weather", {"city": "x"})))])
    async with model_on(server) as model:
        agent = ReactAgent("a", model, tools=[weather], hooks=[ModelCallLimitHook(run_limit=1)])
        result = await agent.invoke("go")
    assert result.text.startswith("Model call limits exceeded")
    assert len(server.requests) == 1


async def test_retry_after_then_success(servers: Any) -> None:
    """A 429 with Retry-After is retried after the pause, then the answer is used."""
    server = servers(
        [HTTPReply.error(429, "slow down", headers={"Retry-After": "0.1"}), SSEReply.of("ok")]
    )
    async with model_on(server) as model:
        result = await ReactAgent("a", model).invoke("go")
    assert result.text == "ok"
    assert len(server.requests) == 2


async def test_fallback_to_a_second_endpoint(servers: Any) -> None:
    """A primary that fails for good (500 after its retries) falls back to another
    endpoint's model."""
    primary = servers([HTTPReply.error(500, "down")] * 3)
    backup = servers([SSEReply.of("from backup")])
    async with model_on(primary, max_retries=2) as first, model_on(backup) as second:
        agent = ReactAgent("a", first, interceptors=[ModelFallbackInterceptor([second])])
        result = await agent.invoke("go")
    assert result.text == "from backup"
    assert len(primary.requests) == 3
    assert len(backup.requests) == 1


async def test_cancelling_a_run_mid_stream_leaves_no_open_connection(servers: Any) -> None:
    """Cancelling the run while the model streams closes the HTTP response: no connection
    stays open in the client's pool, and the server sees the client leave."""
    reply = SSEReply([*SSEReply.of("partial answer").events[:2]], ending="hang")
    server = servers([reply])
    async with httpx.AsyncClient() as client:
        model = model_on(server, http_client=client)
        async with ReactAgent("a", model).start("go") as run, run.events() as events:
            async for event in events:
                if isinstance(event, ModelDelta):
                    await run.cancel()
            with pytest.raises(RunCancelled):
                await run.result()
        pool = client._transport._pool  # type: ignore[attr-defined]
        assert [c for c in pool.connections if not c.is_closed()] == []
    assert reply.client_left.wait(5)


# --- answers cut at the token limit (finish_reason "length") ------------------------------

STREAMING = [True, False]


def cut(message: AssistantMessage, stream: bool) -> ServerReply:
    """``message`` sent as an answer the server cut at the token limit."""
    message = attrs.evolve(message, finish_reason="length")
    return SSEReply.of(message) if stream else HTTPReply.completion(message)


@pytest.mark.parametrize("stream", STREAMING, ids=["stream", "call"])
async def test_a_text_answer_cut_by_length_is_returned_with_its_finish_reason(
    servers: Any, tmp_path: Path, stream: bool
) -> None:
    """A plain text answer cut at the token limit is the run's answer, with
    ``finish_reason == "length"`` on the result and on the message, also once stored in
    SQLite and read back."""
    server = servers([cut(AssistantMessage("The answer is a long sto"), stream)])
    config = RunnableConfig(thread_id="t", metadata={"_stream_": stream})
    async with model_on(server) as model, SqliteSaver(tmp_path / "cp.db") as saver:
        result = await ReactAgent("a", model, saver=saver).invoke("tell me", config)
        stored = await saver.get("t")
    assert (result.text, result.finish_reason) == ("The answer is a long sto", "length")
    assert result.messages[-1].finish_reason == "length"
    assert stored is not None
    assert stored.state["messages"][-1].finish_reason == "length"


@pytest.mark.parametrize("stream", STREAMING, ids=["stream", "call"])
async def test_tool_calls_cut_by_length_are_a_truncation_error_and_never_run(
    servers: Any, stream: bool
) -> None:
    """An answer cut at the token limit while it asked for a tool call (its arguments
    may be cut) raises ``ModelTruncatedError`` carrying the answer so far; the tool is
    not run."""
    ran: list[str] = []

    @tool
    async def save(text: str) -> str:
        """Save a text."""
        ran.append(text)
        return "saved"

    server = servers([cut(asks(("call_1", "save", {"text": "half a sen"})), stream)])
    async with model_on(server) as model:
        agent = ReactAgent("a", model, tools=[save])
        with pytest.raises(ModelTruncatedError, match="cut at its token limit") as caught:
            await agent.invoke("save it", RunnableConfig(metadata={"_stream_": stream}))
    assert [c.name for c in caught.value.message.tool_calls] == ["save"]
    assert caught.value.message.finish_reason == "length"
    assert ran == []


@pytest.mark.parametrize("stream", STREAMING, ids=["stream", "call"])
async def test_a_structured_answer_cut_by_length_is_a_truncation_error(
    servers: Any, stream: bool
) -> None:
    """With ``output_type`` set, a final answer cut at the token limit raises
    ``ModelTruncatedError`` (with the text so far), not an ``OutputParseError`` of the
    cut JSON, and never a structured output built from it."""
    server = servers([cut(AssistantMessage('{"city": "Oslo", "temp'), stream)])
    async with model_on(server) as model:
        agent = ReactAgent("a", model, output_type=Forecast)
        with pytest.raises(ModelTruncatedError, match="not parsed as the structured output") as e:
            await agent.invoke("forecast", RunnableConfig(metadata={"_stream_": stream}))
    assert e.value.message.text == '{"city": "Oslo", "temp'


# --- retries in the event stream ----------------------------------------------------------


async def events_of(agent: ReactAgent) -> list[Any]:
    """Every event of a run of ``agent`` on "go", up to the last."""
    async with agent.stream("go") as events:
        return [event async for event in events]


def model_events(events: list[Any]) -> list[Any]:
    """The events of the model step, in order; deltas as their text."""
    kinds = (ModelCallStarted, ModelDelta, ModelCallRetried, ModelCallFinished)
    return [e.text if isinstance(e, ModelDelta) else e for e in events if isinstance(e, kinds)]


async def test_a_stream_cut_mid_way_and_retried_is_marked_in_the_events(servers: Any) -> None:
    """A stream cut after "Hel" and retried by ``ModelRetryInterceptor``: the consumer sees
    the partial delta, then ``ModelCallRetried`` (attempt 1, the delay, the error), then
    the deltas of the retried answer, which is the one the run keeps."""
    cut_short = SSEReply([ModelChunk(text="Hel")], ending="cut")
    server = servers([cut_short, SSEReply.of("Hello", chunk_size=3)])
    async with model_on(server, max_retries=0) as model:
        retry = ModelRetryInterceptor(initial_delay=0.001, jitter=0)
        events = await events_of(ReactAgent("a", model, interceptors=[retry]))
    started, partial, retried, *again, finished = model_events(events)
    assert (started, partial) == (ModelCallStarted(0), "Hel")
    assert isinstance(retried, ModelCallRetried)
    assert (retried.attempt, retried.delay_s, retried.model) == (1, 0.001, None)
    assert retried.reason.startswith("ModelStreamError: the stream broke off")
    assert again == ["Hel", "lo"]
    assert finished.message.text == "Hello"
    assert events[-1].result.text == "Hello"


async def test_the_clients_own_http_retries_are_in_the_events(servers: Any) -> None:
    """``OpenAIChatModel`` retrying a 503 itself sends ``ModelCallRetried`` (attempt 1,
    reason "HTTP 503") before the answer's deltas."""
    server = servers([HTTPReply.error(503, "busy"), SSEReply.of("ok")])
    async with model_on(server) as model:
        events = await events_of(ReactAgent("a", model))
    started, retried, text, finished = model_events(events)
    assert started == ModelCallStarted(0)
    assert isinstance(retried, ModelCallRetried)
    assert (retried.attempt, retried.reason, retried.model) == (1, "HTTP 503", None)
    assert retried.delay_s > 0
    assert (text, finished.message.text) == ("ok", "ok")


async def test_a_fallback_after_a_cut_stream_names_the_next_model(servers: Any) -> None:
    """A primary whose stream is cut after "par", then a fallback endpoint: the events say
    ``ModelCallRetried(model="backup-model")`` between the primary's partial delta and the
    backup's answer."""
    primary = servers([SSEReply([ModelChunk(text="par")], ending="cut")])
    backup = servers([SSEReply.of("from backup", chunk_size=20)])
    async with (
        model_on(primary) as first,
        OpenAIChatModel("backup-model", base_url=backup.base_url, api_key="sk-test") as second,
    ):
        agent = ReactAgent("a", first, interceptors=[ModelFallbackInterceptor([second])])
        events = await events_of(agent)
    _, partial, retried, text, finished = model_events(events)
    assert partial == "par"
    assert isinstance(retried, ModelCallRetried)
    assert (retried.attempt, retried.delay_s, retried.model) == (1, 0.0, "backup-model")
    assert retried.reason.startswith("ModelStreamError: the stream broke off")
    assert (text, finished.message.text) == ("from backup", "from backup")


# --- usage details ------------------------------------------------------------------------


@pytest.mark.parametrize("stream", STREAMING, ids=["stream", "call"])
async def test_cached_and_reasoning_tokens_are_kept_and_summed(servers: Any, stream: bool) -> None:
    """``prompt_tokens_details.cached_tokens`` and ``completion_tokens_details.
    reasoning_tokens`` are read into ``Usage`` and summed over the run's model calls like
    the other counts; checkpoints keep them."""
    first = Usage(100, 20, 120, cached_tokens=64, reasoning_tokens=12)
    second = Usage(150, 10, 160, cached_tokens=96, reasoning_tokens=4)
    asking = asks(("call_1", "weather", {"city": "Oslo"}))
    reply = SSEReply.of if stream else HTTPReply.completion
    replies = [reply(asking, usage=first), reply("sunny", usage=second)]
    server = servers(replies)
    saver = MemorySaver()
    config = RunnableConfig(thread_id="t", metadata={"_stream_": stream})
    async with model_on(server) as model:
        result = await ReactAgent("a", model, tools=[weather], saver=saver).invoke("go", config)
    assert result.usage == Usage(250, 30, 280, cached_tokens=160, reasoning_tokens=16)
    stored = await saver.get("t")
    assert stored is not None
    assert stored.state["_TOKEN_USAGE_"] == result.usage


# --- reasoning ----------------------------------------------------------------------------

THINKING = asks(("call_1", "weather", {"city": "Oslo"}))


@pytest.mark.parametrize("send_reasoning", [False, True], ids=["not-sent", "sent-back"])
async def test_streamed_reasoning_is_kept_streamed_and_sent_back_when_asked(
    servers: Any, tmp_path: Path, send_reasoning: bool
) -> None:
    """``reasoning_content`` deltas (DeepSeek, vLLM) come as ``ModelDelta(reasoning=…)``
    events before the answer, and the assistant message keeps the whole reasoning, also in
    SQLite. The next request carries it back as ``reasoning_content`` only with
    ``send_reasoning=True``."""
    thinking = attrs.evolve(THINKING, reasoning="The user wants Oslo. Ask the tool.")
    server = servers([SSEReply.of(thinking, chunk_size=10), SSEReply.of("Sunny.")])
    config = RunnableConfig(thread_id="t")
    async with (
        model_on(server, send_reasoning=send_reasoning) as model,
        SqliteSaver(tmp_path / "cp.db") as saver,
    ):
        agent = ReactAgent("a", model, tools=[weather], saver=saver)
        async with agent.stream("weather?", config) as stream:
            events = [event async for event in stream]
        stored = await saver.get("t")
    pieces = [e.reasoning for e in events if isinstance(e, ModelDelta) and e.reasoning]
    assert "".join(pieces) == "The user wants Oslo. Ask the tool."
    first_call = next(i for i, e in enumerate(events) if isinstance(e, ModelDelta) and e.tool_call)
    assert max(i for i, e in enumerate(events) if isinstance(e, ModelDelta) and e.reasoning) < (
        first_call
    )
    assert stored is not None
    assert stored.state["messages"][1].reasoning == "The user wants Oslo. Ask the tool."
    sent = server.requests[1]["messages"][1]
    if send_reasoning:
        assert sent["reasoning_content"] == "The user wants Oslo. Ask the tool."
    else:
        assert "reasoning_content" not in sent


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_of_a_whole_answer_is_kept(servers: Any, field: str) -> None:
    """A whole answer's ``reasoning_content`` (DeepSeek) or ``reasoning`` (OpenRouter,
    newer vLLM) is kept on the assistant message; the text is the answer."""
    message = {"role": "assistant", "content": "42", field: "6 times 7"}
    payload = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    server = servers([HTTPReply.from_json(payload)])
    async with model_on(server) as model:
        result = await ReactAgent("a", model).invoke(
            "answer?", RunnableConfig(metadata={"_stream_": False})
        )
    assert result.text == "42"
    assert result.messages[-1].reasoning == "6 times 7"
