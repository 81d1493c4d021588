"""The Responses wire format, proven against the official ``openai`` SDK in both
directions: the SDK parses what the loopback server sends (whole, streamed, every event
validated as the SDK's own type), and the request ``OpenAIResponsesModel`` builds
validates as the SDK's request types and goes through the SDK unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

from reactcore import AssistantMessage, ModelRequest, OpenAIResponsesModel, ToolCall
from reactcore.models.openai_responses import request_body
from reactcore.testing import (
    ResponsesSSEReply,
    responses_events,
    responses_json,
    responses_reply,
    serve_openai_responses,
)
from tests.responses_support import ENCRYPTED, KEY, PARALLEL, REASONING, USAGE, rich_request

openai = pytest.importorskip("openai")
from openai.types.responses import (  # noqa: E402
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseReasoningItem,
    ResponseStreamEvent,
)
from openai.types.responses.response_create_params import (  # noqa: E402
    ResponseCreateParamsNonStreaming,
    ResponseCreateParamsStreaming,
)

FORBID = pydantic.ConfigDict(extra="forbid")


def extras(value: Any, where: str = "$") -> Iterator[str]:
    """Where ``value`` (an SDK model, validated) holds fields its type does not declare."""
    if isinstance(value, pydantic.BaseModel):
        for name in value.model_extra or {}:
            yield f"{where}.{name}"
        for name in type(value).model_fields:
            yield from extras(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, list):
        for at, item in enumerate(value):
            yield from extras(item, f"{where}[{at}]")


def forced(value: Any) -> Any:
    """``value`` with every lazily validated iterable (the SDK's ``Iterable[...]`` params)
    read, so that its items are validated too."""
    if isinstance(value, dict):
        return {k: forced(v) for k, v in value.items()}
    if isinstance(value, list | tuple) or (
        hasattr(value, "__next__") and hasattr(value, "__iter__")
    ):
        return [forced(v) for v in value]
    return value


def check_typed(message: Any) -> None:
    """``message`` (the SDK's parse of the server's answer to PARALLEL) holds its items as
    the SDK's types, with the encrypted reasoning, the text, both calls and the usage."""
    reasoning, said, first, second = message.output
    assert isinstance(reasoning, ResponseReasoningItem)
    assert (reasoning.id, reasoning.encrypted_content) == ("rs_1", ENCRYPTED)
    assert [s.text for s in reasoning.summary] == ["Two cities: two calls."]
    assert isinstance(said, ResponseOutputMessage) and said.id == "msg_1"
    assert said.content[0].text == "Checking both."
    assert isinstance(first, ResponseFunctionToolCall) and isinstance(
        second, ResponseFunctionToolCall
    )
    assert (first.id, first.call_id, first.name) == ("fc_1", "call_1", "weather")
    assert json.loads(second.arguments) == {"city": "Rome"}
    usage = message.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (120, 30, 150)
    assert usage.input_tokens_details.cached_tokens == 80
    assert usage.input_tokens_details.cache_write_tokens == 20
    assert usage.output_tokens_details.reasoning_tokens == 12
    assert message.status == "completed" and message.id == "resp_test"


# --- what the server sends --------------------------------------------------------------


@pytest.mark.anyio
async def test_the_official_sdk_reads_the_loopback_server() -> None:
    """The official SDK's ``responses.stream(...)`` (its accumulating parser),
    ``responses.create(stream=True)`` (raw events) and ``responses.create`` (whole) read
    the server's answers into their own types: a reasoning item with its encrypted
    content, the message, two ``ResponseFunctionToolCall``s, the usage details."""
    server_replies = [
        ResponsesSSEReply.of(PARALLEL, usage=USAGE),
        ResponsesSSEReply.of(PARALLEL, usage=USAGE, chunk_size=3),
        responses_reply(PARALLEL, usage=USAGE),
    ]
    with serve_openai_responses(server_replies) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        async with client.responses.stream(model="m", input="hi") as stream:
            final = await stream.get_final_response()
        events = [
            e async for e in await client.responses.create(model="m", input="hi", stream=True)
        ]
        whole = await client.responses.create(model="m", input="hi")
        await client.close()
    check_typed(final)
    check_typed(whole)
    names = [type(e).__name__ for e in events]
    assert names[:3] == [
        "ResponseCreatedEvent",
        "ResponseInProgressEvent",
        "ResponseOutputItemAddedEvent",
    ]
    assert names[-1] == "ResponseCompletedEvent"
    check_typed(events[-1].response)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e for e in events if e.type == "response.function_call_arguments.delta"]
    assert {e.item_id for e in deltas} == {"fc_1", "fc_2"}
    assert "".join(e.delta for e in deltas if e.output_index == 3) == '{"city": "Rome"}'


def test_every_event_and_response_validates_as_the_sdks_types() -> None:
    """Each streamed event (validated, not merely built) is the SDK type its ``type``
    names, with every required field and none the SDK does not know; so is the whole
    response, and an incomplete one."""
    adapter = pydantic.TypeAdapter(ResponseStreamEvent)
    cut = AssistantMessage("cut he", finish_reason="length")
    for message in (PARALLEL, cut):
        events = responses_events(message, usage=USAGE, chunk_size=5)
        for event in events:
            typed = adapter.validate_python(event)
            assert typed.type == event["type"]
            assert list(extras(typed)) == []
        whole = Response.model_validate(responses_json(message, usage=USAGE))
        assert list(extras(whole)) == []
    assert events[-1]["type"] == "response.incomplete"
    assert whole.status == "incomplete" and whole.incomplete_details.reason == "max_output_tokens"


# --- what reactcore sends ---------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
def test_the_request_validates_as_the_sdks_request_params(stream: bool) -> None:
    """The body reactcore builds for a conversation with every kind of item (user parts,
    a developer message, reasoning verbatim, text and calls with their ids, outputs as
    text and as content lists) and every option validates as the SDK's
    ``ResponseCreateParams``, with no key the SDK does not declare (extra forbidden)."""
    request = rich_request(
        tool_choice={"type": "function", "function": {"name": "weather"}},
        parallel_tool_calls=False,
        max_tokens=500,
        temperature=0.2,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "o", "schema": {"type": "object"}, "strict": False},
        },
    )
    body = request_body(
        request, "gpt-5", stream=stream, reasoning_effort="low", reasoning_summary="auto"
    )
    params = ResponseCreateParamsStreaming if stream else ResponseCreateParamsNonStreaming
    adapter = pydantic.TypeAdapter(list[params], config=FORBID)  # type: ignore[valid-type]
    assert forced(adapter.validate_python([body])[0])["input"] == body["input"]
    assert len(body["input"]) == 8  # user, developer, reasoning, text, 2 calls, 2 outputs
    broken = {**body, "input": [{**body["input"][2], "encrypted": "x"}]}
    with pytest.raises(pydantic.ValidationError):
        forced(adapter.validate_python([broken]))


@pytest.mark.anyio
async def test_the_sdk_sends_reactcores_request_unchanged() -> None:
    """The body reactcore sends, given to the official SDK's ``responses.create``, reaches
    the server as the same JSON: the SDK takes every item and option as they are."""
    request = rich_request(tool_choice="required", max_tokens=300)
    replies = [responses_reply("ok"), responses_reply("ok")]
    with serve_openai_responses(replies) as server:
        async with OpenAIResponsesModel("gpt-5", base_url=server.base_url, api_key=KEY) as model:
            await model.call(request)
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        await client.responses.create(**server.requests[0])
        await client.close()
    ours, the_sdks = server.requests
    assert the_sdks == ours
    kinds = [item.get("type") for item in ours["input"]]
    assert (
        kinds
        == ["message", "message", "reasoning", "message"]
        + ["function_call"] * 2
        + ["function_call_output"] * 2
    )


def test_a_call_made_by_hand_is_sent_without_an_item_id() -> None:
    """A message with no Responses provider data (written by hand, or another provider's)
    becomes a plain assistant message and id-less ``function_call`` items, which the SDK's
    request types accept."""
    message = AssistantMessage("hm", [ToolCall("toolu_1", "weather", "{}")])
    body = request_body(ModelRequest([message]), "gpt-5", stream=False)
    assert body["input"] == [
        {"type": "message", "role": "assistant", "content": "hm"},
        {"type": "function_call", "call_id": "toolu_1", "name": "weather", "arguments": "{}"},
    ]
    adapter = pydantic.TypeAdapter(list[ResponseCreateParamsNonStreaming], config=FORBID)
    forced(adapter.validate_python([body]))


def test_an_answer_without_encrypted_reasoning_goes_back_as_the_sdk_takes_it() -> None:
    """Unstored (``store: false``), an answer whose reasoning item has no encrypted content
    goes back without it and without item ids: a plain assistant message and id-less
    ``function_call`` items, which the SDK's request types accept (extra forbidden)."""
    plain = {k: v for k, v in REASONING.items() if k != "encrypted_content"}
    output = [plain, *PARALLEL.provider_data["openai-responses"]["output"][1:]]
    message = AssistantMessage(
        PARALLEL.text, PARALLEL.tool_calls, provider_data={"openai-responses": {"output": output}}
    )
    body = request_body(ModelRequest([message]), "gpt-5", stream=False, encrypted_reasoning=False)
    assert [(i["type"], "id" in i) for i in body["input"]] == [
        ("message", False),
        ("function_call", False),
        ("function_call", False),
    ]
    adapter = pydantic.TypeAdapter(list[ResponseCreateParamsNonStreaming], config=FORBID)
    forced(adapter.validate_python([body]))
