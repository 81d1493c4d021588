"""``OpenAIResponsesModel``'s answers and failures against the loopback Responses server
of ``reactcore.testing`` (proven against the official SDK in
``test_openai_responses_sdk.py``; the requests are ``test_openai_responses_requests.py``'s);
on asyncio and trio."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import attrs
import pytest
import structlog

from reactcore import (
    AssistantMessage,
    ModelChunk,
    ModelError,
    ModelHTTPError,
    ModelRequest,
    ModelStreamError,
    ModelTruncatedError,
    OpenAIResponsesModel,
    ToolCall,
    UserMessage,
)
from reactcore.models import Usage
from reactcore.testing import (
    HTTPReply,
    ResponsesSSEReply,
    responses_error_reply,
    responses_events,
    responses_json,
    responses_reply,
)
from tests.helpers import streamed
from tests.responses_support import (
    KEY,
    OUTPUT,
    PARALLEL,
    REASONING,
    USAGE,
    ServerFor,
    model_for,
    server_for_fixture,  # noqa: F401 (the server_for fixture)
)

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest([UserMessage("hi")])


def event(kind: str, n: int, **fields: Any) -> dict[str, Any]:
    """A hand-made stream event with its sequence number."""
    return {"type": kind, "sequence_number": n, **fields}


# --- answers ----------------------------------------------------------------------------


async def test_streamed_and_whole_answers_give_the_same_message(server_for: ServerFor) -> None:
    """Text, parallel calls, the reasoning summary (as reasoning) and the output items
    (reasoning verbatim with its encrypted content, item ids, the response id, as
    provider data) and the usage details come out the same, streamed or whole."""
    server = server_for(
        [ResponsesSSEReply.of(PARALLEL, usage=USAGE), responses_reply(PARALLEL, usage=USAGE)]
    )
    async with model_for(server) as model:
        from_stream = await streamed(model)
        whole = await model.call(REQUEST)
    for response in (from_stream, whole):
        assert response.message == PARALLEL
        assert response.message.provider_data["openai-responses"]["output"][0] == REASONING
        assert response.finish_reason == "tool_calls"
        assert response.usage == USAGE


async def test_the_stream_yields_reasoning_text_and_call_fragments(server_for: ServerFor) -> None:
    """Chunks come as the events do: summary pieces as reasoning (parts joined by a blank
    line), text pieces, call fragments at their output index, the provider data as each
    item finishes, then the finish reason and usage."""
    two_parts = {
        **REASONING,
        "summary": [*REASONING["summary"], {"type": "summary_text", "text": "Go."}],
    }
    message = attrs.evolve(
        PARALLEL,
        reasoning="Two cities: two calls.\n\nGo.",
        provider_data={"openai-responses": {"output": [two_parts, *OUTPUT[1:]]}},
    )
    server = server_for([ResponsesSSEReply.of(message, usage=USAGE, chunk_size=3)])
    received: list[ModelChunk] = []
    async with model_for(server) as model, model.stream(REQUEST) as chunks:
        async for chunk in chunks:
            received.append(chunk)
    assert "".join(c.reasoning for c in received) == "Two cities: two calls.\n\nGo."
    assert "".join(c.text for c in received) == "Checking both."
    assert {d.index for c in received for d in c.tool_calls} == {2, 3}
    assert sum(1 for c in received if c.provider_data) == 5  # four items, then the end
    assert received[-1].finish_reason == "tool_calls" and received[-1].usage == USAGE


@pytest.mark.parametrize("left_out", ["deltas", "every-summary-event"])
async def test_summary_events_without_summary_index_are_read(
    server_for: ServerFor, left_out: str
) -> None:
    """Summary deltas without ``summary_index`` (LiteLLM's proxy sends them; the official
    SDK reads them) belong to the item's last announced summary part, or its first: the
    reasoning comes out whole, each part once, parts apart, as with the index."""
    two_parts = {
        **REASONING,
        "summary": [*REASONING["summary"], {"type": "summary_text", "text": "Go."}],
    }
    message = attrs.evolve(
        PARALLEL,
        reasoning="Two cities: two calls.\n\nGo.",
        provider_data={
            "openai-responses": {"output": [two_parts, *OUTPUT[1:]], "response_id": "resp_test"}
        },
    )
    stripped = "response.reasoning_summary_text.delta"
    events = [
        {k: v for k, v in e.items() if k != "summary_index"}
        if e["type"] == stripped or (left_out != "deltas" and "summary_index" in e)
        else e
        for e in responses_events(message, chunk_size=3)
    ]
    assert sum(1 for e in events if e["type"] == stripped and "summary_index" not in e) > 2
    sdk_types = pytest.importorskip("openai.types.responses")
    sdk_models = pytest.importorskip("openai._models")
    first = next(e for e in events if e["type"] == stripped)
    read = sdk_models.construct_type(type_=sdk_types.ResponseStreamEvent, value=first)
    assert isinstance(read, sdk_types.ResponseReasoningSummaryTextDeltaEvent)
    assert (read.delta, read.summary_index) == (first["delta"], None)
    server = server_for([ResponsesSSEReply(events)])
    async with model_for(server) as model:
        response = await streamed(model)
    assert response.message == message


async def test_parallel_calls_interleaved_by_output_index_stay_apart(server_for: ServerFor) -> None:
    """Two calls whose argument deltas interleave are joined by output index, each
    whole; the answer lists them in output order."""
    fc = [("fc_a", "call_a", '{"city": "Oslo"}'), ("fc_b", "call_b", '{"city": "Lima"}')]
    events: list[dict[str, Any]] = [event("response.created", 0, response={"id": "resp_x"})]
    for at, (item_id, call_id, _) in enumerate(fc):
        item = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": ""}
        item.update(call_id=call_id, name="weather")
        events.append(event("response.output_item.added", len(events), output_index=at, item=item))
    for a, b in zip(fc[0][2], fc[1][2], strict=True):
        for at, piece in ((0, a), (1, b)):
            fields = {"item_id": fc[at][0], "output_index": at, "delta": piece}
            events.append(event("response.function_call_arguments.delta", len(events), **fields))
    events.append(
        event("response.completed", len(events), response={"id": "resp_x", "status": "completed"})
    )
    server = server_for([ResponsesSSEReply(events)])
    async with model_for(server) as model:
        response = await streamed(model)
    assert response.message.tool_calls == (
        ToolCall("call_a", "weather", '{"city": "Oslo"}'),
        ToolCall("call_b", "weather", '{"city": "Lima"}'),
    )
    assert response.finish_reason == "tool_calls" and response.usage is None


async def test_items_sent_whole_without_deltas_are_read_whole(server_for: ServerFor) -> None:
    """A server that sends each item only in its ``output_item.added`` / ``…done`` (no
    deltas) still gives the whole text and arguments, once each."""
    events = [e for e in responses_events(PARALLEL) if not e["type"].endswith(".delta")]
    server = server_for([ResponsesSSEReply(events)])
    async with model_for(server) as model:
        response = await streamed(model)
    assert response.message == PARALLEL


@pytest.mark.parametrize(
    ("finish", "reason"), [("length", "max_output_tokens"), ("content_filter", "content_filter")]
)
async def test_incomplete_answers_map_to_finish_reasons(
    server_for: ServerFor, finish: str, reason: str
) -> None:
    """``response.incomplete`` with ``max_output_tokens`` is ``"length"`` (the cut text is
    returned), with ``content_filter`` is ``"content_filter"``; streamed or whole."""
    cut = AssistantMessage("cut he", finish_reason=finish)
    server = server_for([ResponsesSSEReply.of(cut), responses_reply(cut)])
    async with model_for(server) as model:
        for response in (await streamed(model), await model.call(REQUEST)):
            assert (response.message.text, response.finish_reason) == ("cut he", finish)
    assert responses_json(cut)["incomplete_details"] == {"reason": reason}


async def test_tool_calls_cut_at_max_output_tokens_are_never_run(server_for: ServerFor) -> None:
    """An incomplete answer (``max_output_tokens``) with calls is a
    ``ModelTruncatedError``, streamed or whole."""
    cut = AssistantMessage(
        "", [ToolCall("call_1", "weather", '{"city": "Pa"}')], finish_reason="length"
    )
    server = server_for([ResponsesSSEReply.of(cut), responses_reply(cut)])
    async with model_for(server) as model:
        with pytest.raises(ModelTruncatedError):
            await streamed(model)
        with pytest.raises(ModelTruncatedError):
            await model.call(REQUEST)


# --- failures ---------------------------------------------------------------------------


async def test_an_error_event_is_a_stream_error_with_the_servers_message(
    server_for: ServerFor,
) -> None:
    """An ``error`` event after some text is a ``ModelStreamError`` with its code and
    message."""
    events = responses_events("partial answer")[:6]
    events.append(
        event("error", 6, code="server_error", message="The server had an error", param=None)
    )
    server = server_for([ResponsesSSEReply(events)])
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError, match="server_error: The server had an error"):
            await streamed(model)


async def test_a_failed_response_is_an_error_streamed_or_whole(server_for: ServerFor) -> None:
    """``response.failed`` ends the stream with a ``ModelStreamError`` saying the
    response's error; a whole response with status ``failed`` is a ``ModelError``."""
    failed = {**responses_json("x"), "status": "failed", "output": []}
    failed["error"] = {"code": "rate_limit_exceeded", "message": "Too many tokens"}
    events = [*responses_events("partial")[:4], event("response.failed", 4, response=failed)]
    server = server_for([ResponsesSSEReply(events), HTTPReply.from_json(failed)])
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError, match="rate_limit_exceeded: Too many tokens"):
            await streamed(model)
        with pytest.raises(ModelError, match="the response failed: rate_limit_exceeded"):
            await model.call(REQUEST)


@pytest.mark.parametrize("ending", ["cut", "eof"])
async def test_a_stream_that_ends_before_it_completes_is_cut(
    server_for: ServerFor, ending: str
) -> None:
    """A stream that ends (cut, or cleanly) inside a call's arguments, before
    ``response.completed``, is a ``ModelStreamError``: no half-made call is returned."""
    events = responses_events(PARALLEL, chunk_size=3)
    inside = next(
        i for i, e in enumerate(events) if e["type"] == "response.function_call_arguments.delta"
    )
    server = server_for([ResponsesSSEReply(events[: inside + 2], ending=ending)])  # type: ignore[arg-type]
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError, match=r"cut|broke off"):
            await streamed(model)


async def test_429_with_retry_after_is_retried_and_400_is_not(server_for: ServerFor) -> None:
    """429 with ``retry-after`` is retried after at least the asked pause; a 400 is raised
    at once with OpenAI's message and request id."""
    server = server_for(
        [
            responses_error_reply(
                429,
                "slow down",
                error_type="requests",
                code="rate_limit_exceeded",
                headers={"retry-after": "0.3"},
            ),
            ResponsesSSEReply.of("finally"),
            responses_error_reply(
                400, "Unsupported parameter: 'reasoning.effort'", error_type="invalid_request_error"
            ),
        ]
    )
    async with model_for(server, max_retries=2) as model:
        assert (await streamed(model)).message.text == "finally"
        with pytest.raises(ModelHTTPError) as caught:
            await model.call(REQUEST)
    assert server.request_times[1] - server.request_times[0] >= 0.3
    assert caught.value.status_code == 400 and caught.value.request_id == "req_test"
    assert "Unsupported parameter" in str(caught.value) and len(server.requests) == 3


async def test_the_api_key_never_leaks(
    server_for: ServerFor, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """The key is sent, yet absent from the repr, the errors (a 401 body and an ``error``
    event that echo it, ``response.failed`` too), the structlog events and the logs."""
    failed = {
        **responses_json("x"),
        "status": "failed",
        "error": {"code": "server_error", "message": f"bad {KEY}"},
    }
    server = server_for(
        [
            responses_error_reply(500, f"busy for {KEY}", headers={"retry-after": "0"}),
            responses_error_reply(
                401, f"Incorrect API key provided: {KEY}", error_type="invalid_request_error"
            ),
            ResponsesSSEReply([event("error", 0, code="invalid_api_key", message=f"key {KEY}")]),
            ResponsesSSEReply([event("response.failed", 0, response=failed)]),
        ]
    )
    model = model_for(server)
    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []
    with structlog.testing.capture_logs() as logs:
        async with model:
            for _ in range(3):
                with pytest.raises((ModelHTTPError, ModelStreamError)) as caught:
                    await streamed(model)
                errors.append(caught.value)
    assert server.request_headers[0]["authorization"] == f"Bearer {KEY}"
    assert "Incorrect API key" in str(errors[0]) and "invalid_api_key" in str(errors[1])
    texts = [repr(model), repr(logs), caplog.text, capsys.readouterr().out]
    texts += [text for e in errors for text in (str(e), repr(e), getattr(e, "body", ""))]
    assert [KEY in text for text in texts] == [False] * len(texts)


async def test_cancelling_mid_stream_closes_the_connection(server_for: ServerFor) -> None:
    """Cancelling while the stream hangs ends the request: the server sees the client go."""
    reply = ResponsesSSEReply(responses_events("slow answer")[:6], ending="hang")
    server = server_for([reply])
    async with model_for(server) as model:
        with anyio.CancelScope() as scope:
            async with model.stream(REQUEST) as chunks:
                async for _ in chunks:
                    scope.cancel()
    assert scope.cancelled_caught
    assert await anyio.to_thread.run_sync(reply.client_left.wait, 5)


async def test_a_missing_key_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, server_for: ServerFor
) -> None:
    """Without a key for OpenAI itself, calling says to set ``OPENAI_API_KEY``; with a
    base URL the key may be left out (a local server), and no bearer is sent."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    async with OpenAIResponsesModel("gpt-5") as model:
        with pytest.raises(ValueError, match="OPENAI_API_KEY"):
            await model.call(REQUEST)
    server = server_for([responses_reply("keyless")])
    async with OpenAIResponsesModel("gpt-5", base_url=server.base_url) as model:
        assert (await model.call(REQUEST)).message.text == "keyless"
    assert "authorization" not in server.request_headers[0]


def test_bad_settings_fail_at_construction() -> None:
    """Settings of the wrong kind or value fail when the model is made, naming them."""
    with pytest.raises(ValueError, match="reasoning_summary must be one of 'auto'"):
        OpenAIResponsesModel("gpt-5", api_key="k", reasoning_summary="short")
    with pytest.raises(TypeError, match="use_previous_response_id must be a bool"):
        OpenAIResponsesModel("gpt-5", api_key="k", use_previous_response_id="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="encrypted_reasoning must be a bool or None"):
        OpenAIResponsesModel("gpt-5", api_key="k", encrypted_reasoning=1)  # type: ignore[arg-type]


def test_usage_details_are_read() -> None:
    """``cached_tokens``, ``cache_write_tokens`` and ``reasoning_tokens`` are kept; a
    response without usage has none."""
    from reactcore.models._responses_answers import parse_response

    whole = responses_json(
        "x", usage=Usage(9, 4, 13, cached_tokens=3, reasoning_tokens=2, cache_creation_tokens=1)
    )
    assert parse_response(whole).usage == Usage(
        9, 4, 13, cached_tokens=3, reasoning_tokens=2, cache_creation_tokens=1
    )
    assert parse_response({**whole, "usage": None}).usage is None
