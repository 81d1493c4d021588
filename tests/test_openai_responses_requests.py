"""The requests ``OpenAIResponsesModel`` sends to the loopback Responses server: every
kind of input item, the reasoning round trip, options, stateless and
``previous_response_id`` modes; on asyncio and trio."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from reactcore import (
    AssistantMessage,
    ChatOptions,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from reactcore.models.openai import request_body as chat_request_body
from reactcore.models.openai_responses import request_body
from reactcore.testing import ResponsesSSEReply, responses_reply
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
    ServerFor,
    model_for,
    rich_request,
    server_for_fixture,  # noqa: F401 (the server_for fixture)
)

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest([UserMessage("hi")])


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


async def test_reasoning_without_encrypted_content_is_not_sent_back_unstored(
    server_for: ServerFor,
) -> None:
    """With ``encrypted_reasoning=False`` (``store: false``, no ``include``) the answer's
    reasoning item comes without encrypted content: the API could not look its id up, so
    the next request leaves it out, and the item ids of the answer's text and calls
    (which the API would pair with it), keeping the text and calls; the reasoning stays
    on the message. With ``store: true`` the item goes back by its id."""
    plain = {k: v for k, v in REASONING.items() if k != "encrypted_content"}
    data = {"output": [plain, *OUTPUT[1:]], "response_id": "resp_test"}
    message = attrs.evolve(PARALLEL, provider_data={"openai-responses": data})
    server = server_for([ResponsesSSEReply.of(message), responses_reply("Sunny.")])
    results = ToolResponseMessage(
        [ToolResponse("call_1", "weather", "sunny"), ToolResponse("call_2", "weather", "rain")]
    )
    async with model_for(server, encrypted_reasoning=False) as model:
        answer = (await streamed(model)).message
        assert answer == message
        await model.call(ModelRequest([UserMessage("weather?"), answer, results]))
    first, second = server.requests
    assert first["store"] is False and "include" not in first
    items = second["input"]
    assert [(i["type"], i.get("id")) for i in items] == [
        ("message", None),
        ("message", None),
        ("function_call", None),
        ("function_call", None),
        ("function_call_output", None),
        ("function_call_output", None),
    ]
    assert items[1] == {"type": "message", "role": "assistant", "content": "Checking both."}
    assert [i["call_id"] for i in items[2:]] == ["call_1", "call_2"] * 2
    unanswered = attrs.evolve(
        answer, provider_data={"openai-responses": {"output": data["output"]}}
    )
    stored = request_body(
        ModelRequest([UserMessage("weather?"), unanswered, results]),
        "gpt-5",
        stream=False,
        use_previous_response_id=True,
    )
    assert stored["input"][1] == plain
    assert [i.get("id") for i in stored["input"][2:5]] == ["msg_1", "fc_1", "fc_2"]


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
