"""``AnthropicModel`` against the loopback Anthropic server of ``reactcore.testing``, which
is first proven against the official ``anthropic`` SDK; on asyncio and trio."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog

from reactcore import (
    AnthropicModel,
    AssistantMessage,
    ChatOptions,
    ImagePart,
    ModelChunk,
    ModelHTTPError,
    ModelRequest,
    ModelStreamError,
    ModelTruncatedError,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from reactcore._messages import FilePart
from reactcore.models import ToolSpec, Usage
from reactcore.models.anthropic import request_body
from reactcore.testing import (
    AnthropicSSEReply,
    HTTPReply,
    OpenAICompatibleServer,
    Script,
    anthropic_error_reply,
    anthropic_events,
    anthropic_message_json,
    anthropic_message_reply,
    serve_anthropic,
)
from tests.helpers import cancel_after_first_chunk, streamed

KEY = "sk-ant-test-9d8c7b6a5f4e3d2c1b0a"
REQUEST = ModelRequest([UserMessage("hi")])
THINKING = [
    {
        "index": 0,
        "type": "thinking",
        "thinking": "Two cities: two calls.",
        "signature": "EqQBsig==",
    },
    {"index": 1, "type": "redacted_thinking", "data": "EmwKAhgBEgyopaque"},
]
PARALLEL = AssistantMessage(
    "Checking both.",
    [
        ToolCall("toolu_1", "weather", '{"city": "Paris"}'),
        ToolCall("toolu_2", "weather", '{"city": "Rome"}'),
    ],
    reasoning="Two cities: two calls.",
    provider_data={"anthropic": {"thinking": THINKING}},
)
USAGE = Usage(120, 30, 150, cached_tokens=80, cache_creation_tokens=20)

ServerFor = Callable[[Script], OpenAICompatibleServer]


@pytest.fixture
def server_for() -> Iterator[ServerFor]:
    """``server_for(script)`` starts a loopback Anthropic server that stops when the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda script: stack.enter_context(serve_anthropic(script))


def model_for(server: OpenAICompatibleServer, **kwargs: Any) -> AnthropicModel:
    kwargs.setdefault("retry_backoff", 0.01)
    return AnthropicModel("claude-test", base_url=server.base_url, api_key=KEY, **kwargs)


# --- the loopback server, proven with the official SDK ------------------------------------


@pytest.mark.anyio
async def test_the_official_sdk_reads_the_loopback_server(server_for: ServerFor) -> None:
    """The official ``anthropic`` SDK parses the server's streamed and whole answers —
    thinking with its signature, redacted thinking, text, parallel tool_use — into its
    own types, with the stop reason and cache usage."""
    anthropic = pytest.importorskip("anthropic")
    server = server_for(
        [
            AnthropicSSEReply.of(PARALLEL, usage=USAGE),
            anthropic_message_reply(PARALLEL, usage=USAGE),
        ]
    )
    client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key=KEY, max_retries=0)
    ask: dict[str, Any] = {
        "model": "m",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
    }
    async with client.messages.stream(**ask) as stream:
        from_stream = await stream.get_final_message()
    whole = await client.messages.create(**ask)
    await client.close()
    for message in (from_stream, whole):
        kinds = [type(b).__name__ for b in message.content]
        assert kinds[0] == "ThinkingBlock" and kinds[1] == "RedactedThinkingBlock"
        assert kinds[3:] == ["ToolUseBlock", "ToolUseBlock"]
        thinking, redacted, text, first, second = message.content
        assert (thinking.thinking, thinking.signature) == ("Two cities: two calls.", "EqQBsig==")
        assert redacted.data == "EmwKAhgBEgyopaque"
        assert text.text == "Checking both."
        assert (first.id, first.input, second.input) == (
            "toolu_1",
            {"city": "Paris"},
            {"city": "Rome"},
        )
        assert message.stop_reason == "tool_use"
        assert message.usage.cache_read_input_tokens == 80
        assert message.usage.cache_creation_input_tokens == 20
        assert message.usage.input_tokens == 20 and message.usage.output_tokens == 30


# --- answers ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_streamed_and_whole_answers_give_the_same_message(server_for: ServerFor) -> None:
    """Text, parallel tool calls, thinking (as reasoning, and the signed blocks as
    provider data) and cache usage come out the same, streamed or whole."""
    server = server_for(
        [
            AnthropicSSEReply.of(PARALLEL, usage=USAGE),
            anthropic_message_reply(PARALLEL, usage=USAGE),
        ]
    )
    async with model_for(server) as model:
        from_stream = await streamed(model)
        whole = await model.call(REQUEST)
    for response in (from_stream, whole):
        assert response.message == PARALLEL
        assert response.message.provider_data == {"anthropic": {"thinking": THINKING}}
        assert response.finish_reason == "tool_calls"
        assert response.usage == USAGE


@pytest.mark.anyio
async def test_a_tool_use_with_an_empty_id_is_read_alike_streamed_or_whole(
    server_for: ServerFor,
) -> None:
    """A ``tool_use`` block whose id is ``""`` is read the same streamed (no
    ``ModelStreamError``) or whole: a call with an empty id, which the LLM node re-keys
    ``call_<index>``."""
    asks = AssistantMessage("", [ToolCall("", "weather", '{"city": "Paris"}')])
    server = server_for([AnthropicSSEReply.of(asks), anthropic_message_reply(asks)])
    async with model_for(server) as model:
        from_stream = await streamed(model)
        whole = await model.call(REQUEST)
    assert from_stream.message.tool_calls == whole.message.tool_calls == asks.tool_calls


@pytest.mark.anyio
async def test_the_stream_yields_text_reasoning_and_call_fragments(server_for: ServerFor) -> None:
    """Chunks come as the events do: reasoning pieces, text pieces, tool-call fragments
    at the block's index, then the finish reason and usage."""
    server = server_for([AnthropicSSEReply.of(PARALLEL, usage=USAGE, chunk_size=3)])
    received: list[ModelChunk] = []
    async with model_for(server) as model, model.stream(REQUEST) as chunks:
        async for chunk in chunks:
            received.append(chunk)
    assert "".join(c.reasoning for c in received) == "Two cities: two calls."
    assert "".join(c.text for c in received) == "Checking both."
    assert {d.index for c in received for d in c.tool_calls} == {3, 4}
    assert received[-1].finish_reason == "tool_calls" and received[-1].usage == USAGE


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("refusal", "content_filter"),
        ("pause_turn", "pause_turn"),
        ("max_tokens", "length"),
    ],
)
async def test_stop_reasons_map_to_finish_reasons(
    server_for: ServerFor, stop_reason: str, finish: str
) -> None:
    """``end_turn`` → stop, ``refusal`` → content_filter, ``pause_turn`` kept,
    ``max_tokens`` → length (a cut text answer is returned)."""
    events = anthropic_events("cut here")
    events[-2]["delta"]["stop_reason"] = stop_reason
    server = server_for([AnthropicSSEReply(events)])
    async with model_for(server) as model:
        response = await streamed(model)
    assert (response.message.text, response.finish_reason) == ("cut here", finish)


@pytest.mark.anyio
async def test_tool_calls_cut_at_max_tokens_are_never_run(server_for: ServerFor) -> None:
    """``max_tokens`` with tool calls is a ``ModelTruncatedError``, streamed or whole."""
    cut = AssistantMessage(
        "", [ToolCall("toolu_1", "weather", '{"city": "Pa"}')], finish_reason="length"
    )
    server = server_for([AnthropicSSEReply.of(cut), anthropic_message_reply(cut)])
    async with model_for(server) as model:
        with pytest.raises(ModelTruncatedError):
            await streamed(model)
        with pytest.raises(ModelTruncatedError):
            await model.call(REQUEST)


def _unsigned_thinking_first(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` with a thinking block streamed first that never gets a signature."""
    shifted = [{**e, "index": e["index"] + 1} if "index" in e else e for e in events]
    start = {"type": "thinking", "thinking": "", "signature": ""}
    thinking: list[dict[str, Any]] = [
        {"type": "content_block_start", "index": 0, "content_block": start},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Hm."},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    return [*shifted[:2], *thinking, *shifted[2:]]


@pytest.mark.anyio
async def test_an_unsigned_thinking_block_is_read_and_never_sent_back(
    server_for: ServerFor,
) -> None:
    """A whole answer whose thinking block has ``"signature": null`` (LiteLLM's proxy sends
    it; the official SDK reads it) and a stream whose thinking block gets no
    ``signature_delta`` are read alike: the thinking is the reasoning and stays in the
    provider data, unsigned. The next request of the loop sends no unsigned block back
    (the API refuses one) and so, its first answer having no signed thinking, goes
    without ``thinking``."""
    asks = AssistantMessage("", [ToolCall("toolu_1", "weather", '{"city": "Paris"}')])
    whole = anthropic_message_json(asks)
    whole["content"].insert(0, {"type": "thinking", "thinking": "Hm.", "signature": None})
    events = _unsigned_thinking_first(anthropic_events(asks))
    server = server_for([HTTPReply.from_json(whole), HTTPReply.from_json(whole)])
    stream_server = server_for([AnthropicSSEReply(events)])
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key=KEY, max_retries=0)
    ask = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    by_sdk = await client.messages.create(**ask)  # type: ignore[call-overload]
    await client.close()
    assert (by_sdk.content[0].thinking, by_sdk.content[0].signature) == ("Hm.", None)
    async with model_for(server) as model, model_for(stream_server) as streaming:
        answers = [(await model.call(REQUEST)).message, (await streamed(streaming)).message]
    unsigned = [{"index": 0, "type": "thinking", "thinking": "Hm.", "signature": ""}]
    for answer in answers:
        assert answer.reasoning == "Hm." and answer.tool_calls == asks.tool_calls
        assert answer.provider_data == {"anthropic": {"thinking": unsigned}}
        body = _thinking_body(UserMessage("go"), answer, _result("toolu_1"))
        assert _kinds(body) == [["text"], ["tool_use"], ["tool_result"]]
        assert "thinking" not in body


# --- requests ---------------------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
PNG = ImagePart.from_bytes(b"\x89PNG\r\n\x1a\nxx", "image/png")
PDF = FilePart.from_bytes(b"%PDF-1.4 x", "application/pdf", "a.pdf")


@pytest.mark.anyio
async def test_the_request_maps_the_conversation_to_messages(server_for: ServerFor) -> None:
    """System top level; tools with ``input_schema``; thinking blocks sent back verbatim
    before text and ``tool_use``; every result of the batch in one user turn as
    ``tool_result`` blocks (``is_error``, images and PDFs inside); images and documents
    in user turns; ``disable_parallel_tool_use``; the default ``max_tokens``; the key in
    ``x-api-key`` and the API version header."""
    conversation = [
        UserMessage("weather?", [PNG, PDF, ImagePart("https://x.test/a.png")]),
        PARALLEL,
        ToolResponseMessage(
            [
                ToolResponse("toolu_1", "weather", "sunny", parts=[PNG]),
                ToolResponse("toolu_2", "weather", "no such city", is_error=True),
            ]
        ),
    ]
    request = ModelRequest(
        conversation,
        system_message=SystemMessage("be brief"),
        tools=("weather",),
        tool_specs=(ToolSpec("weather", "Weather.", SCHEMA),),
        options=ChatOptions(parallel_tool_calls=False, temperature=0.2),
    )
    server = server_for([anthropic_message_reply("ok")])
    async with model_for(server) as model:
        await model.call(request)
    body, headers = server.requests[0], server.request_headers[0]
    assert (headers["x-api-key"], headers["anthropic-version"]) == (KEY, "2023-06-01")
    assert "authorization" not in headers
    assert (
        body["system"] == "be brief" and body["max_tokens"] == 4096 and body["temperature"] == 0.2
    )
    assert body["tools"] == [{"name": "weather", "description": "Weather.", "input_schema": SCHEMA}]
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    user, assistant, results = body["messages"]
    assert [b["type"] for b in user["content"]] == ["text", "image", "document", "image"]
    assert user["content"][1]["source"]["type"] == "base64"
    assert user["content"][2]["source"]["media_type"] == "application/pdf"
    assert user["content"][3]["source"] == {"type": "url", "url": "https://x.test/a.png"}
    assert assistant["content"][:2] == [
        {k: v for k, v in b.items() if k != "index"} for b in THINKING
    ]
    assert assistant["content"][2:] == [
        {"type": "text", "text": "Checking both."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}},
    ]
    assert results["role"] == "user"
    first, second = results["content"]
    assert first["tool_use_id"] == "toolu_1" and [b["type"] for b in first["content"]] == [
        "text",
        "image",
    ]
    assert second == {
        "type": "tool_result",
        "tool_use_id": "toolu_2",
        "content": [{"type": "text", "text": "no such city"}],
        "is_error": True,
    }


@pytest.mark.anyio
async def test_a_user_message_between_a_call_and_its_results_goes_after_them(
    server_for: ServerFor,
) -> None:
    """A user message sent between a ``tool_use`` and its results (steering, a hook) is
    joined into the results' user turn after the ``tool_result`` blocks: the API takes a
    ``tool_use`` only when the next turn starts with its results."""
    conversation = [
        UserMessage("weather?"),
        PARALLEL,
        UserMessage("and be quick", [PNG]),
        ToolResponseMessage(
            [
                ToolResponse("toolu_1", "weather", "sunny"),
                ToolResponse("toolu_2", "weather", "rain"),
            ]
        ),
        UserMessage("thanks"),
    ]
    server = server_for([anthropic_message_reply("ok")])
    async with model_for(server) as model:
        await model.call(ModelRequest(conversation))
    user, assistant, joined = server.requests[0]["messages"]
    assert (user["role"], assistant["role"], joined["role"]) == ("user", "assistant", "user")
    assert [(b["type"], b.get("tool_use_id") or b.get("text")) for b in joined["content"]] == [
        ("tool_result", "toolu_1"),
        ("tool_result", "toolu_2"),
        ("text", "and be quick"),
        ("image", None),
        ("text", "thanks"),
    ]


@pytest.mark.anyio
async def test_prompt_caching_thinking_and_native_output(server_for: ServerFor) -> None:
    """``cache_prompt`` puts ``cache_control`` on the system prompt, the last tool and the
    last block; ``thinking_budget`` turns thinking on; a strict JSON-schema
    ``response_format`` goes as native ``output_config.format``; options.max_tokens wins."""
    strict = {**SCHEMA, "additionalProperties": False}
    request = ModelRequest(
        [UserMessage("weather?")],
        system_message=SystemMessage("be brief"),
        tools=("weather",),
        tool_specs=(ToolSpec("weather", "Weather.", SCHEMA),),
        options=ChatOptions(
            max_tokens=9000,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "o", "schema": strict, "strict": True},
            },
        ),
    )
    server = server_for([anthropic_message_reply("ok")])
    async with model_for(server, cache_prompt=True, thinking_budget=2048) as model:
        await model.call(request)
    body = server.requests[0]
    ephemeral = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "be brief", "cache_control": ephemeral}]
    assert body["tools"][-1]["cache_control"] == ephemeral
    assert body["messages"][-1]["content"][-1]["cache_control"] == ephemeral
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": strict}}
    assert body["max_tokens"] == 9000


def _answer(call_id: str, *, thinks: bool) -> AssistantMessage:
    """An answer asking for one call, with signed thinking (Anthropic's) or without."""
    data = {"anthropic": {"thinking": THINKING[:1]}} if thinks else {}
    return AssistantMessage("", [ToolCall(call_id, "weather", "{}")], provider_data=data)


def _result(call_id: str) -> ToolResponseMessage:
    return ToolResponseMessage([ToolResponse(call_id, "weather", "sunny")])


def _thinking_body(*messages: Any, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    options = ChatOptions(extra_body=extra or {})
    return request_body(
        ModelRequest(list(messages), options=options),
        "claude-test",
        stream=False,
        thinking_budget=1024,
    )


def _kinds(body: dict[str, Any]) -> list[list[str]]:
    return [[b["type"] for b in m["content"]] for m in body["messages"]]


def test_a_tool_loop_runs_in_one_thinking_mode() -> None:
    """With thinking on, a tool loop (one assistant turn) whose first answer thought keeps
    thinking, even past another provider's answer; one whose first answer did not (it
    came through a fallback) is finished without ``thinking`` and without the turn's
    thinking blocks, while earlier turns keep theirs; the next user message starts a turn
    that thinks again; adaptive thinking is left alone."""
    enabled = {"type": "enabled", "budget_tokens": 1024}
    began_thinking = _thinking_body(
        UserMessage("go"),
        _answer("a", thinks=True),
        _result("a"),
        _answer("b", thinks=False),
        _result("b"),
    )
    assert began_thinking["thinking"] == enabled
    assert _kinds(began_thinking) == [
        ["text"],
        ["thinking", "tool_use"],
        ["tool_result"],
        ["tool_use"],
        ["tool_result"],
    ]
    done_turn = [UserMessage("go"), _answer("a", thinks=True), _result("a"), AssistantMessage("ok")]
    began_without = _thinking_body(
        *done_turn,
        UserMessage("again"),
        _answer("b", thinks=False),
        _result("b"),
        _answer("c", thinks=True),
        _result("c"),
    )
    assert "thinking" not in began_without
    assert _kinds(began_without) == [
        ["text"],
        ["thinking", "tool_use"],
        ["tool_result"],
        ["text"],
        ["text"],
        ["tool_use"],
        ["tool_result"],
        ["tool_use"],
        ["tool_result"],
    ]
    new_turn = _thinking_body(
        UserMessage("go"),
        _answer("b", thinks=False),
        _result("b"),
        AssistantMessage("ok"),
        UserMessage("more"),
    )
    assert new_turn["thinking"] == enabled
    adaptive = {"thinking": {"type": "adaptive"}}
    kept = _thinking_body(
        UserMessage("go"), _answer("b", thinks=False), _result("b"), extra=adaptive
    )
    assert kept["thinking"] == {"type": "adaptive"}


# --- failures ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_429_and_529_are_retried_honouring_retry_after(server_for: ServerFor) -> None:
    """429 with ``retry-after`` and 529 ``overloaded_error`` are retried (the pause never
    shorter than asked); the answer after them is returned."""
    server = server_for(
        [
            anthropic_error_reply(
                429, "slow down", error_type="rate_limit_error", headers={"retry-after": "0.3"}
            ),
            anthropic_error_reply(529, "Overloaded", error_type="overloaded_error"),
            AnthropicSSEReply.of("finally"),
        ]
    )
    async with model_for(server, max_retries=2) as model:
        response = await streamed(model)
    assert response.message.text == "finally"
    assert server.request_times[1] - server.request_times[0] >= 0.3


@pytest.mark.anyio
async def test_other_4xx_are_not_retried_and_say_what_the_server_said(
    server_for: ServerFor,
) -> None:
    """A 400 is raised at once as ``ModelHTTPError`` with Anthropic's error message and
    request id."""
    server = server_for(
        [anthropic_error_reply(400, "max_tokens: too large", error_type="invalid_request_error")]
    )
    async with model_for(server) as model:
        with pytest.raises(ModelHTTPError) as caught:
            await model.call(REQUEST)
    assert caught.value.status_code == 400 and caught.value.request_id == "req_test"
    assert "max_tokens: too large" in str(caught.value)
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_an_error_event_mid_stream_is_a_stream_error(server_for: ServerFor) -> None:
    """An ``error`` event after some text is a ``ModelStreamError`` naming the error."""
    events = anthropic_events("partial answer")[:5]
    events.append({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    server = server_for([AnthropicSSEReply(events)])
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError, match="overloaded_error"):
            await streamed(model)


@pytest.mark.anyio
@pytest.mark.parametrize("ending", ["cut", "eof"])
async def test_a_stream_cut_inside_a_tool_use_input_is_a_stream_error(
    server_for: ServerFor, ending: str
) -> None:
    """A stream that ends (cut, or cleanly) inside a ``tool_use`` input, before
    ``message_stop``, is a ``ModelStreamError``: no half-made call is returned."""
    events = anthropic_events(PARALLEL, chunk_size=3)
    inside = next(
        i for i, e in enumerate(events) if e.get("delta", {}).get("type") == "input_json_delta"
    )
    server = server_for([AnthropicSSEReply(events[: inside + 2], ending=ending)])  # type: ignore[arg-type]
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError):
            await streamed(model)


@pytest.mark.anyio
async def test_cancelling_mid_stream_closes_the_connection(server_for: ServerFor) -> None:
    """Cancelling while the stream hangs ends the request: the server sees the client go."""
    reply = AnthropicSSEReply(anthropic_events("slow")[:4], ending="hang")
    server = server_for([reply])
    async with model_for(server) as model:
        await cancel_after_first_chunk(model, REQUEST, reply.client_left)


@pytest.mark.anyio
async def test_the_api_key_never_leaks(
    server_for: ServerFor, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """The key is sent, yet absent from the repr, the error (message, body, repr), the
    structlog events and the stdlib logs, even when the server echoes it."""
    server = server_for(
        [
            anthropic_error_reply(
                529,
                f"overloaded for {KEY}",
                error_type="overloaded_error",
                headers={"retry-after": "0"},
            ),
            anthropic_error_reply(
                401, f"invalid x-api-key: {KEY}", error_type="authentication_error"
            ),
        ]
    )
    model = model_for(server)
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as logs, pytest.raises(ModelHTTPError) as caught:
        async with model:
            await model.call(REQUEST)
    assert server.request_headers[0]["x-api-key"] == KEY
    error = caught.value
    assert "invalid x-api-key" in str(error)
    texts = [repr(model), str(error), repr(error), error.body, repr(logs), caplog.text]
    texts.append(capsys.readouterr().out)
    assert [KEY in text for text in texts] == [False] * len(texts)


@pytest.mark.anyio
async def test_a_missing_key_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, server_for: ServerFor
) -> None:
    """Without a key for the Anthropic API itself, calling says to set
    ``ANTHROPIC_API_KEY``; with a base URL the key may be left out (a local proxy)."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    async with AnthropicModel("claude-x") as model:
        with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
            await model.call(REQUEST)
    server = server_for([anthropic_message_reply("keyless")])
    async with AnthropicModel("claude-x", base_url=server.base_url) as model:
        assert (await model.call(REQUEST)).message.text == "keyless"
    assert "x-api-key" not in server.request_headers[0]
