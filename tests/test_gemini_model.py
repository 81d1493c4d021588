"""``GeminiModel`` against the loopback Gemini server of ``reactcore.testing``, which is
first proven against the official ``google-genai`` SDK (answers, error bodies, and the
request bodies reactcore builds); on asyncio and trio."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest
import structlog

from reactcore import (
    AssistantMessage,
    GeminiModel,
    ModelChunk,
    ModelError,
    ModelHTTPError,
    ModelRequest,
    ModelStreamError,
    ModelTruncatedError,
    ToolCall,
    UserMessage,
)
from reactcore.models import Usage
from reactcore.testing import (
    GeminiSSEReply,
    HangReply,
    HTTPReply,
    OpenAICompatibleServer,
    Script,
    gemini_chunks,
    gemini_error_reply,
    gemini_reply,
    gemini_response_json,
    serve_gemini,
)
from tests.gemini_support import LAYOUT, PARALLEL, SIG_TEXT, THOUGHTS
from tests.helpers import cancel_after_first_chunk, streamed

KEY = "AIzaSyTest-9d8c7b6a5f4e3d2c1b0a"
REQUEST = ModelRequest([UserMessage("hi")])


# A text answer whose signature came on an empty last part, as streams send it.
SIGNED_TEXT = AssistantMessage(
    "Sunny in both.",
    provider_data={
        "google": {
            "parts": [
                {"ref": "text", "size": len("Sunny in both.")},
                {"ref": "text", "size": 0, "thoughtSignature": SIG_TEXT},
            ]
        }
    },
)
USAGE = Usage(120, 42, 162, cached_tokens=80, reasoning_tokens=12)

ServerFor = Callable[[Script], OpenAICompatibleServer]


@pytest.fixture
def server_for() -> Iterator[ServerFor]:
    """``server_for(script)`` starts a loopback Gemini server that stops when the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda script: stack.enter_context(serve_gemini(script))


def model_for(server: OpenAICompatibleServer, **kwargs: Any) -> GeminiModel:
    kwargs.setdefault("retry_backoff", 0.01)
    return GeminiModel("gemini-test", base_url=server.base_url, api_key=KEY, **kwargs)


# --- the loopback server, proven with the official SDK ------------------------------------


async def with_sdk(base_url: str, use: Callable[[Any], Awaitable[Any]]) -> Any:
    """``use(client)`` with a ``google-genai`` client of ``base_url`` (retries off), run
    in a worker thread on the SDK's own asyncio loop: the SDK runs on asyncio only, and
    this way the test runs on both backends."""
    genai = pytest.importorskip("google.genai")
    types = genai.types

    async def run() -> Any:
        options = types.HttpOptions(
            base_url=base_url,
            api_version="v1beta",
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        return await use(genai.Client(api_key=KEY, http_options=options))

    return await anyio.to_thread.run_sync(lambda: asyncio.run(run()))


@pytest.mark.anyio
async def test_the_official_sdk_reads_the_loopback_server(server_for: ServerFor) -> None:
    """``google-genai`` parses the server's whole and streamed answers into its own types:
    a thought part, text, parallel function calls with their ids, the thought signature
    (base64, decoded to bytes) on the first call, the finish reason, and usage with the
    cached and thought tokens; a signature on an empty last text part of a stream too."""
    server = server_for(
        [
            gemini_reply(PARALLEL, usage=USAGE),
            GeminiSSEReply.of(PARALLEL, usage=USAGE),
            GeminiSSEReply.of(SIGNED_TEXT),
        ]
    )

    async def use(client: Any) -> Any:
        whole = await client.aio.models.generate_content(model="gemini-test", contents="hi")
        chunks = [
            c
            async for c in await client.aio.models.generate_content_stream(
                model="gemini-test", contents="hi"
            )
        ]
        text_chunks = [
            c
            async for c in await client.aio.models.generate_content_stream(
                model="gemini-test", contents="hi"
            )
        ]
        return whole, chunks, text_chunks

    whole, chunks, text_chunks = await with_sdk(server.base_url, use)
    from google.genai import types

    streamed_parts = [p for c in chunks for p in c.candidates[0].content.parts]
    for parts, last in ((whole.candidates[0].content.parts, whole), (streamed_parts, chunks[-1])):
        assert all(isinstance(p, types.Part) for p in parts)
        thoughts = [p for p in parts if p.thought]
        assert "".join(p.text for p in thoughts) == THOUGHTS
        assert "".join(p.text for p in parts if p.text and not p.thought) == "Checking both."
        calls = [p for p in parts if p.function_call is not None]
        assert [(p.function_call.id, p.function_call.args) for p in calls] == [
            ("fc_1", {"city": "Paris"}),
            ("fc_2", {"city": "Rome"}),
        ]
        assert calls[0].thought_signature == b"signature of the first call"
        assert calls[1].thought_signature is None
        assert last.candidates[0].finish_reason == types.FinishReason.STOP
        usage = last.usage_metadata
        assert (usage.prompt_token_count, usage.cached_content_token_count) == (120, 80)
        assert (usage.candidates_token_count, usage.thoughts_token_count) == (30, 12)
        assert usage.total_token_count == 162
    assert [c.candidates[0].finish_reason for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    last_part = text_chunks[-1].candidates[0].content.parts[-1]
    assert (last_part.text, last_part.thought_signature) == ("", b"signature of the text")
    assert server.request_paths == [
        "/v1beta/models/gemini-test:generateContent",
        "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
        "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
    ]


@pytest.mark.anyio
async def test_the_official_sdk_reads_the_error_bodies(server_for: ServerFor) -> None:
    """A 429 ``RESOURCE_EXHAUSTED`` with its ``RetryInfo`` and a 503 ``UNAVAILABLE`` come
    out of the SDK as its ``ClientError`` / ``ServerError`` with the status and details."""
    server = server_for(
        [
            gemini_error_reply(429, "quota exceeded", retry_delay=13),
            gemini_error_reply(503, "The model is overloaded."),
        ]
    )
    from google.genai import errors

    async def use(client: Any) -> list[Any]:
        caught = []
        for _ in range(2):
            try:
                await client.aio.models.generate_content(model="m", contents="hi")
            except errors.APIError as exc:
                caught.append(exc)
        return caught

    quota, overloaded = await with_sdk(server.base_url, use)
    assert isinstance(quota, errors.ClientError) and quota.code == 429
    assert quota.status == "RESOURCE_EXHAUSTED" and quota.message == "quota exceeded"
    retry_info = quota.details["error"]["details"][-1]
    assert retry_info == {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13s"}
    assert isinstance(overloaded, errors.ServerError) and overloaded.status == "UNAVAILABLE"


# --- answers ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_streamed_and_whole_answers_give_the_same_message(server_for: ServerFor) -> None:
    """Text, parallel calls with their ids, thoughts (as reasoning) and the turn's layout
    with its signature (as provider data), and usage come out the same, streamed or
    whole: the message the server was given."""
    server = server_for(
        [GeminiSSEReply.of(PARALLEL, usage=USAGE), gemini_reply(PARALLEL, usage=USAGE)]
    )
    async with model_for(server) as model:
        from_stream = await streamed(model)
        whole = await model.call(REQUEST)
    for response in (from_stream, whole):
        assert response.message == PARALLEL
        assert response.message.provider_data == {"google": {"parts": LAYOUT}}
        assert response.finish_reason == "tool_calls"
        assert response.usage == USAGE


@pytest.mark.anyio
async def test_the_stream_yields_reasoning_text_and_whole_calls(server_for: ServerFor) -> None:
    """Chunks come as the events do: thought pieces as reasoning, text pieces, each call
    whole at its own index; the last chunk has the finish reason, usage and layout."""
    server = server_for([GeminiSSEReply.of(PARALLEL, usage=USAGE, chunk_size=3)])
    received: list[ModelChunk] = []
    async with model_for(server) as model, model.stream(REQUEST) as chunks:
        async for chunk in chunks:
            received.append(chunk)
    assert "".join(c.reasoning for c in received) == THOUGHTS
    assert "".join(c.text for c in received) == "Checking both."
    calls = [d for c in received for d in c.tool_calls]
    assert [(d.index, d.id, d.arguments) for d in calls] == [
        (0, "fc_1", '{"city": "Paris"}'),
        (1, "fc_2", '{"city": "Rome"}'),
    ]
    last = received[-1]
    assert (last.finish_reason, last.usage) == ("tool_calls", USAGE)
    assert last.provider_data == {"google": {"parts": LAYOUT}}
    assert all(c.finish_reason is None for c in received[:-1])


@pytest.mark.anyio
async def test_calls_without_ids_get_ids_of_the_answer(server_for: ServerFor) -> None:
    """Calls the model sent without an id get ``call_<responseId>_<index>``, the same
    streamed or whole; the layout marks them made up (so they are never sent back)."""
    made = {"google": {"parts": [{"ref": "call", "index": i, "made_id": True} for i in (0, 1)]}}
    answer = AssistantMessage(
        "",
        [ToolCall("x", "weather", '{"city": "Paris"}'), ToolCall("y", "weather", "{}")],
        provider_data=made,
    )
    server = server_for([GeminiSSEReply.of(answer), gemini_reply(answer)])
    async with model_for(server) as model:
        responses = [await streamed(model), await model.call(REQUEST)]
    for response in responses:
        assert [c.id for c in response.message.tool_calls] == [
            "call_resp_test_0",
            "call_resp_test_1",
        ]
        assert response.message.provider_data == made


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("wire", "finish"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("OTHER", "other"),
        ("LANGUAGE", "language"),
    ],
)
async def test_finish_reasons_map_to_the_loops(
    server_for: ServerFor, wire: str, finish: str
) -> None:
    """``STOP`` → stop, ``MAX_TOKENS`` → length (a cut text answer is returned), every
    safety reason → content_filter with the text so far, others in lower case; streamed
    and whole alike."""
    server = server_for(
        [
            GeminiSSEReply.of("cut here", finish_reason=wire),
            gemini_reply("cut here", finish_reason=wire),
        ]
    )
    async with model_for(server) as model:
        responses = [await streamed(model), await model.call(REQUEST)]
    for response in responses:
        assert (response.message.text, response.finish_reason) == ("cut here", finish)
        assert response.message.finish_reason == finish


@pytest.mark.anyio
async def test_tool_calls_cut_at_max_tokens_are_never_run(server_for: ServerFor) -> None:
    """``MAX_TOKENS`` with function calls is a ``ModelTruncatedError``, streamed or whole."""
    cut = AssistantMessage("", [ToolCall("fc_1", "weather", "{}")])
    server = server_for(
        [
            GeminiSSEReply.of(cut, finish_reason="MAX_TOKENS"),
            gemini_reply(cut, finish_reason="MAX_TOKENS"),
        ]
    )
    async with model_for(server) as model:
        with pytest.raises(ModelTruncatedError):
            await streamed(model)
        with pytest.raises(ModelTruncatedError):
            await model.call(REQUEST)


@pytest.mark.anyio
async def test_a_malformed_function_call_is_a_clear_error(server_for: ServerFor) -> None:
    """``MALFORMED_FUNCTION_CALL`` raises ``ModelError`` (``ModelStreamError`` in a
    stream) with the API's ``finishMessage``: there is no call to run."""
    whole = gemini_response_json("", finish_reason="MALFORMED_FUNCTION_CALL")
    whole["candidates"][0]["finishMessage"] = "Malformed function call: weather(city=)"
    chunks = gemini_chunks("", finish_reason="MALFORMED_FUNCTION_CALL")
    chunks[-1]["candidates"][0]["finishMessage"] = "Malformed function call: weather(city=)"
    server = server_for([GeminiSSEReply(chunks), HTTPReply.from_json(whole)])
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError, match=r"malformed function call.*weather\(city=\)"):
            await streamed(model)
        with pytest.raises(ModelError, match=r"MALFORMED_FUNCTION_CALL.*weather\(city=\)"):
            await model.call(REQUEST)


@pytest.mark.anyio
async def test_a_blocked_prompt_is_a_clear_error(server_for: ServerFor) -> None:
    """A prompt the API blocked (``promptFeedback.blockReason``, no candidate) raises
    ``ModelError`` naming the reason, streamed (``ModelStreamError``) or whole."""
    blocked = {
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        "modelVersion": "test-model",
        "responseId": "resp_test",
    }
    server = server_for([GeminiSSEReply([blocked]), HTTPReply.from_json(blocked)])
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError, match=r"blocked the prompt.*PROHIBITED_CONTENT"):
            await streamed(model)
        with pytest.raises(ModelError, match=r"blocked the prompt.*PROHIBITED_CONTENT"):
            await model.call(REQUEST)


# --- failures ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_429_retry_delay_in_the_body_is_honoured(server_for: ServerFor) -> None:
    """A 429 ``RESOURCE_EXHAUSTED`` whose body's ``RetryInfo`` asks for 0.4 s is retried no
    sooner (no ``Retry-After`` header needed), then a 503 is retried, and the answer after
    them is returned; streamed and whole."""
    server = server_for(
        [
            gemini_error_reply(429, "quota exceeded", retry_delay=0.4),
            gemini_error_reply(503, "The model is overloaded."),
            GeminiSSEReply.of("finally"),
            gemini_error_reply(429, "quota exceeded", retry_delay=0.4),
            gemini_reply("whole"),
        ]
    )
    async with model_for(server, max_retries=2) as model:
        assert (await streamed(model)).message.text == "finally"
        assert (await model.call(REQUEST)).message.text == "whole"
    times = server.request_times
    assert times[1] - times[0] >= 0.4 and times[4] - times[3] >= 0.4
    assert len(server.requests) == 5


@pytest.mark.anyio
async def test_a_retry_delay_past_the_cap_fails_at_once(server_for: ServerFor) -> None:
    """A ``retryDelay`` longer than ``retry_after_cap`` fails at once with
    ``ModelHTTPError`` carrying the status, the server's message and ``retry_after``."""
    server = server_for([gemini_error_reply(429, "daily quota exceeded", retry_delay=3600)])
    async with model_for(server, retry_after_cap=30.0) as model:
        with pytest.raises(ModelHTTPError) as caught:
            await model.call(REQUEST)
    error = caught.value
    assert (error.status_code, error.retry_after) == (429, 3600.0)
    assert "daily quota exceeded" in str(error) and "retry_after_cap" in str(error)
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_other_4xx_are_not_retried(server_for: ServerFor) -> None:
    """A 400 ``INVALID_ARGUMENT`` is raised at once with the API's message."""
    server = server_for([gemini_error_reply(400, "* GenerateContentRequest.contents: empty")])
    async with model_for(server) as model:
        with pytest.raises(ModelHTTPError, match=r"GenerateContentRequest\.contents") as caught:
            await model.call(REQUEST)
    assert caught.value.status_code == 400 and len(server.requests) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("ending", ["cut", "eof"])
async def test_a_stream_without_a_finish_reason_is_cut(server_for: ServerFor, ending: str) -> None:
    """The stream has no end marker: one that ends (cut, or cleanly) before the event
    with a ``finishReason`` is a ``ModelStreamError``, even after whole calls."""
    chunks = gemini_chunks(PARALLEL)
    server = server_for([GeminiSSEReply(chunks[:-1], ending=ending)])  # type: ignore[arg-type]
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError, match=r"cut|broke off"):
            await streamed(model)


@pytest.mark.anyio
async def test_an_error_in_the_stream_is_a_stream_error(server_for: ServerFor) -> None:
    """An ``error`` object in the stream after some text is a ``ModelStreamError`` naming
    it."""
    chunks: list[Any] = gemini_chunks("partial answer")[:2]
    chunks.append({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}})
    server = server_for([GeminiSSEReply(chunks)])
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError, match="UNAVAILABLE"):
            await streamed(model)


@pytest.mark.anyio
async def test_cancelling_mid_stream_closes_the_connection(server_for: ServerFor) -> None:
    """Cancelling while the stream hangs ends the request: the server sees the client go."""
    reply = GeminiSSEReply(gemini_chunks("slow answer")[:2], ending="hang")
    server = server_for([reply])
    async with model_for(server) as model:
        await cancel_after_first_chunk(model, REQUEST, reply.client_left)


@pytest.mark.anyio
async def test_the_api_key_never_leaks(
    server_for: ServerFor, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """The key goes in ``x-goog-api-key`` only: never in the URL (path or query), the
    repr, the error (message, body, repr), the structlog events or the stdlib logs, even
    when the server echoes it (a retried 503, then a 400)."""
    server = server_for(
        [
            gemini_error_reply(503, f"busy for {KEY}"),
            gemini_error_reply(400, f"API key not valid: {KEY}"),
        ]
    )
    model = model_for(server)
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as logs, pytest.raises(ModelHTTPError) as caught:
        async with model:
            await streamed(model)
    assert server.request_headers[0]["x-goog-api-key"] == KEY
    assert all("key=" not in p and KEY not in p for p in server.request_paths)
    error = caught.value
    assert "API key not valid" in str(error)
    texts = [repr(model), str(error), repr(error), error.body, repr(logs), caplog.text]
    texts.append(capsys.readouterr().out)
    assert [KEY in text for text in texts] == [False] * len(texts)


@pytest.mark.anyio
async def test_a_missing_key_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, server_for: ServerFor
) -> None:
    """Without a key for the Gemini API itself, calling says to set ``GOOGLE_API_KEY`` or
    ``GEMINI_API_KEY``; with a base URL the key may be left out (a local proxy), and no
    key header is sent."""
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    async with GeminiModel("gemini-x") as model:
        with pytest.raises(ValueError, match="GOOGLE_API_KEY or GEMINI_API_KEY"):
            await model.call(REQUEST)
    server = server_for([gemini_reply("keyless")])
    async with GeminiModel("gemini-x", base_url=server.base_url) as model:
        assert (await model.call(REQUEST)).message.text == "keyless"
    assert "x-goog-api-key" not in server.request_headers[0]


@pytest.mark.anyio
async def test_a_hanging_server_is_cut_by_the_timeout(server_for: ServerFor) -> None:
    """A server that never answers is a ``ModelError`` after the timeout (retries off)."""
    server = server_for([HangReply()])
    async with model_for(server, timeout=0.3, max_retries=0) as model:
        with pytest.raises(ModelError, match="timed out"):
            await model.call(REQUEST)


def test_the_body_json_of_the_builders_is_the_apis() -> None:
    """The builders' JSON is camelCase as the API sends it: candidates with content,
    role ``model``, ``finishReason``, ``usageMetadata`` with its counts."""
    answer = gemini_response_json(PARALLEL, usage=USAGE)
    candidate = answer["candidates"][0]
    assert candidate["content"]["role"] == "model" and candidate["finishReason"] == "STOP"
    assert answer["usageMetadata"]["thoughtsTokenCount"] == 12
    assert answer["usageMetadata"]["cachedContentTokenCount"] == 80
    assert json.loads(json.dumps(answer)) == answer
