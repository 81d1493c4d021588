"""``OpenAIResponsesModel`` against the loopback Responses server of ``reactcore.testing``
(proven against the official SDK in ``test_openai_responses_sdk.py``); on asyncio and
trio."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import attrs
import pytest
import structlog

from reactcore import (
    AssistantMessage,
    ChatOptions,
    ModelChunk,
    ModelError,
    ModelHTTPError,
    ModelRequest,
    ModelStreamError,
    ModelTruncatedError,
    OpenAIResponsesModel,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from reactcore.models import Usage
from reactcore.models.openai import request_body as chat_request_body
from reactcore.models.openai_responses import request_body
from reactcore.testing import (
    HTTPReply,
    OpenAICompatibleServer,
    ResponsesSSEReply,
    Script,
    responses_error_reply,
    responses_events,
    responses_json,
    responses_reply,
    serve_openai_responses,
)
from tests.helpers import streamed
from tests.responses_support import (
    ENCRYPTED,
    KEY,
    OPEN_SCHEMA,
    OUTPUT,
    PARALLEL,
    PNG,
    REASONING,
    SCHEMA,
    USAGE,
    rich_request,
)

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest([UserMessage("hi")])
ServerFor = Callable[[Script], OpenAICompatibleServer]


@pytest.fixture
def server_for() -> Iterator[ServerFor]:
    """``server_for(script)`` starts a loopback Responses server that stops with the test."""
    with contextlib.ExitStack() as stack:
        yield lambda script: stack.enter_context(serve_openai_responses(script))


def model_for(server: OpenAICompatibleServer, **kwargs: Any) -> OpenAIResponsesModel:
    kwargs.setdefault("retry_backoff", 0.01)
    return OpenAIResponsesModel("gpt-5", base_url=server.base_url, api_key=KEY, **kwargs)


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


# --- requests ---------------------------------------------------------------------------


async def test_the_request_maps_the_conversation_to_items(server_for: ServerFor) -> None:
    """``instructions`` from the system prompt; a developer message in place; user text,
    images (``detail``), a PDF and a file id as content, audio described; the answer's
    reasoning item verbatim, its text and calls with their item ids, in order; a text
    result and one with an image as ``function_call_output``; tools strict when their
    schema allows; ``store: false``, encrypted reasoning included; the key as a bearer."""
    server = server_for([responses_reply("ok")])
    async with model_for(server) as model:
        await model.call(rich_request())
    body, headers = server.requests[0], server.request_headers[0]
    assert headers["authorization"] == f"Bearer {KEY}"
    assert body["instructions"] == "be brief" and body["model"] == "gpt-5"
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    user, developer, reasoning, said, first, second, result, with_image = body["input"]
    assert [c["type"] for c in user["content"]] == [
        "input_text",
        "input_image",
        "input_image",
        "input_file",
        "input_file",
        "input_text",
    ]
    assert user["content"][1] == {"type": "input_image", "image_url": PNG.url, "detail": "auto"}
    assert user["content"][2]["detail"] == "low"
    assert user["content"][3]["filename"] == "a.pdf"
    assert user["content"][3]["file_data"].startswith("data:application/pdf;base64,")
    assert user["content"][4] == {"type": "input_file", "file_id": "file_1"}
    assert user["content"][5]["text"].startswith("[audio: wav")
    assert developer == {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": "Answer in French."}],
    }
    assert reasoning == REASONING
    assert said == {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Checking both.", "annotations": []}],
    }
    assert (first["id"], first["call_id"], second["id"]) == ("fc_1", "call_1", "fc_2")
    assert result == {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
    assert with_image["output"] == [
        {"type": "input_text", "text": "see the map"},
        {"type": "input_image", "image_url": PNG.url, "detail": "auto"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "weather",
            "description": "Weather.",
            "parameters": SCHEMA,
            "strict": True,
        },
        {
            "type": "function",
            "name": "search",
            "description": "Search.",
            "parameters": OPEN_SCHEMA,
            "strict": False,
        },
    ]
    assert "tool_choice" not in body and "parallel_tool_calls" not in body


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("any", "required"),
        ("none", "none"),
        (
            {"type": "function", "function": {"name": "weather"}},
            {"type": "function", "name": "weather"},
        ),
        ({"type": "function", "name": "weather"}, {"type": "function", "name": "weather"}),
    ],
)
def test_tool_choice_maps_to_the_responses_shape(given: Any, sent: Any) -> None:
    """``tool_choice`` in chat-completions' shape, or already in the Responses one."""
    body = request_body(rich_request(tool_choice=given), "gpt-5", stream=False)
    assert body["tool_choice"] == sent


def test_an_unknown_tool_choice_is_refused() -> None:
    """A ``tool_choice`` string the API does not know is a ``ValueError`` naming it."""
    with pytest.raises(ValueError, match="'sometimes'"):
        request_body(rich_request(tool_choice="sometimes"), "gpt-5", stream=False)


async def test_options_reasoning_and_structured_output(server_for: ServerFor) -> None:
    """``parallel_tool_calls``, ``max_tokens`` as ``max_output_tokens``, temperature, the
    model's reasoning effort and summary as ``reasoning``, a chat-completions JSON-schema
    ``response_format`` as ``text.format`` (strict as the schema allows when not said),
    ``options.model`` over the model's, ``stream: true`` when streaming, ``extra_body``
    last."""
    fmt = {"type": "json_schema", "json_schema": {"name": "forecast", "schema": SCHEMA}}
    options = ChatOptions(
        model="gpt-5-mini",
        parallel_tool_calls=False,
        max_tokens=900,
        temperature=0.3,
        response_format=fmt,
        extra_body={"service_tier": "flex"},
    )
    request = attrs.evolve(rich_request(), options=options)
    server = server_for([ResponsesSSEReply.of("ok")])
    async with model_for(server, reasoning_effort="high", reasoning_summary="detailed") as model:
        await streamed(model, request)
    body = server.requests[0]
    assert body["model"] == "gpt-5-mini" and body["stream"] is True
    assert (body["parallel_tool_calls"], body["max_output_tokens"], body["temperature"]) == (
        False,
        900,
        0.3,
    )
    assert body["reasoning"] == {"effort": "high", "summary": "detailed"}
    assert body["text"] == {
        "format": {"type": "json_schema", "name": "forecast", "schema": SCHEMA, "strict": True}
    }
    assert body["service_tier"] == "flex"
    json_object = request_body(
        ModelRequest(
            [UserMessage("x")], options=ChatOptions(response_format={"type": "json_object"})
        ),
        "gpt-5",
        stream=False,
    )
    assert (
        json_object["text"] == {"format": {"type": "json_object"}}
        and "reasoning" not in json_object
    )


@pytest.mark.parametrize(
    ("model", "given", "included"),
    [
        ("gpt-5", None, True),
        ("o4-mini", None, True),
        ("gpt-4.1", None, False),
        ("gpt-4o", True, True),
        ("gpt-5", False, False),
    ],
)
def test_encrypted_reasoning_is_asked_for_reasoning_models(
    model: str, given: bool | None, included: bool
) -> None:
    """By default the stateless request asks for encrypted reasoning unless the model is
    of a family that does not reason (which refuses it); ``encrypted_reasoning`` says so
    outright."""
    body = request_body(REQUEST, model, stream=False, encrypted_reasoning=given)
    assert ("include" in body) == included and body["store"] is False


async def test_encrypted_reasoning_goes_back_verbatim_on_the_next_request(
    server_for: ServerFor,
) -> None:
    """The answer's reasoning item, as the server sent it (id, summary, encrypted
    content), is on the next request before its text and calls, which carry their item
    ids (what the API pairs it with); the results follow."""
    server = server_for([ResponsesSSEReply.of(PARALLEL), responses_reply("Sunny in both.")])
    async with model_for(server) as model:
        answer = (await streamed(model)).message
        results = ToolResponseMessage(
            [ToolResponse("call_1", "weather", "sunny"), ToolResponse("call_2", "weather", "sunny")]
        )
        await model.call(ModelRequest([UserMessage("weather?"), answer, results]))
    items = server.requests[1]["input"]
    assert [i["type"] for i in items] == [
        "message",
        "reasoning",
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert items[1] == REASONING
    assert [i.get("id") for i in items[2:5]] == ["msg_1", "fc_1", "fc_2"]


def test_a_conversation_from_another_provider_sends_none_of_its_data() -> None:
    """Anthropic's signed thinking on an answer never reaches a Responses request, and
    this provider's encrypted reasoning never reaches a chat-completions request; both
    get the calls and results."""
    thinking = {
        "anthropic": {
            "thinking": [{"index": 0, "type": "thinking", "thinking": "t", "signature": "c2lnbmVk"}]
        }
    }
    claude = AssistantMessage("", [ToolCall("toolu_1", "weather", "{}")], provider_data=thinking)
    results = ToolResponseMessage([ToolResponse("toolu_1", "weather", "sunny")])
    ours = json.dumps(
        request_body(ModelRequest([UserMessage("q"), claude, results]), "gpt-5", stream=False)
    )
    assert "c2lnbmVk" not in ours and "thinking" not in ours and "toolu_1" in ours
    answer = ToolResponseMessage(
        [ToolResponse("call_1", "weather", "x"), ToolResponse("call_2", "weather", "y")]
    )
    theirs = json.dumps(
        chat_request_body(ModelRequest([UserMessage("q"), PARALLEL, answer]), "m", stream=False)
    )
    assert ENCRYPTED not in theirs and "rs_1" not in theirs and "call_2" in theirs


async def test_previous_response_id_mode_sends_only_what_is_new(server_for: ServerFor) -> None:
    """With ``use_previous_response_id``: ``store: true``; the first request sends the
    whole conversation; the next sends the previous answer's response id and only the
    results after it (the instructions again: the API does not carry them over)."""
    server = server_for(
        [
            ResponsesSSEReply.of(PARALLEL, response_id="resp_first"),
            responses_reply("Sunny.", response_id="resp_2"),
        ]
    )
    system = SystemMessage("be brief")
    async with model_for(server, use_previous_response_id=True) as model:
        answer = (
            await streamed(model, ModelRequest([UserMessage("weather?")], system_message=system))
        ).message
        results = ToolResponseMessage(
            [ToolResponse("call_1", "weather", "sunny"), ToolResponse("call_2", "weather", "rain")]
        )
        later = ModelRequest([UserMessage("weather?"), answer, results], system_message=system)
        final = (await model.call(later)).message
    first, second = server.requests
    assert answer.provider_data["openai-responses"]["response_id"] == "resp_first"
    assert final.provider_data["openai-responses"]["response_id"] == "resp_2"
    assert first["store"] is True and "previous_response_id" not in first and "include" not in first
    assert len(first["input"]) == 1
    assert second["previous_response_id"] == "resp_first" and second["instructions"] == "be brief"
    assert [i["type"] for i in second["input"]] == ["function_call_output"] * 2


async def test_two_message_items_are_sent_back_as_two(server_for: ServerFor) -> None:
    """An answer with two message items (commentary, then the final answer, with a
    reasoning item between) is sent back as the same items, each text with its id and
    phase."""
    output = [
        {"type": "message", "id": "msg_a", "length": 4, "phase": "commentary"},
        REASONING,
        {"type": "message", "id": "msg_b", "length": 5, "phase": "final_answer"},
    ]
    message = AssistantMessage(
        "Hmm.Done.",
        reasoning="Two cities: two calls.",
        provider_data={"openai-responses": {"output": output, "response_id": "resp_test"}},
    )
    server = server_for([responses_reply(message), responses_reply("ok")])
    async with model_for(server) as model:
        answer = (await model.call(REQUEST)).message
        assert answer == message
        await model.call(ModelRequest([UserMessage("hi"), answer, UserMessage("and?")]))
    items = server.requests[1]["input"][1:-1]
    assert [(i["type"], i.get("id"), i.get("phase")) for i in items] == [
        ("message", "msg_a", "commentary"),
        ("reasoning", "rs_1", None),
        ("message", "msg_b", "final_answer"),
    ]
    assert [i["content"][0]["text"] for i in (items[0], items[2])] == ["Hmm.", "Done."]


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
