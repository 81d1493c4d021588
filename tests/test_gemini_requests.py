"""The requests ``GeminiModel`` sends: the conversation as ``contents``, thought signatures
back on their parts (and only to Gemini), tools in the API's schema subset, tool config,
structured output and generation settings. Every body is also fed to the official
``google-genai`` SDK's own types, which forbid unknown fields, so a shape the API does not
know fails here. Over the loopback server, on asyncio and trio."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog

from reactcore import (
    AnthropicModel,
    AssistantMessage,
    AudioPart,
    ChatOptions,
    ChunkAssembler,
    FilePart,
    GeminiModel,
    ImagePart,
    ModelRequest,
    OpenAIChatModel,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from reactcore.models import ToolSpec
from reactcore.models._gemini_schema import gemini_schema
from reactcore.models.gemini import request_body
from reactcore.testing import (
    GeminiSSEReply,
    HTTPReply,
    OpenAICompatibleServer,
    Script,
    anthropic_message_reply,
    gemini_reply,
    gemini_response_json,
    serve_anthropic,
    serve_gemini,
    serve_openai_compatible,
)
from tests.gemini_support import PARALLEL, SIG_TEXT, THOUGHTS
from tests.gemini_support import SIG_CALL as SIG

KEY = "AIzaSyTest-requests-0a1b2c3d4e5f"
RESULTS = ToolResponseMessage(
    [
        ToolResponse("fc_1", "weather", "sunny"),
        ToolResponse("fc_2", "weather", "no such city", is_error=True),
    ]
)
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = ToolSpec("weather", "Weather.", SCHEMA)
PNG = ImagePart.from_bytes(b"\x89PNG\r\n\x1a\nxx", "image/png")
PDF = FilePart.from_bytes(b"%PDF-1.4 x", "application/pdf", "a.pdf")
BLOB = FilePart.from_bytes(b"\x00\x01", "application/octet-stream", "a.bin")
WAV = AudioPart(base64.b64encode(b"RIFFxxxxWAVE").decode(), "wav")

ServerFor = Callable[[Callable[[Script], Any], Script], OpenAICompatibleServer]


@pytest.fixture
def server_for() -> Iterator[ServerFor]:
    """``server_for(serve, script)`` starts a loopback server (``serve_gemini`` …) that
    stops when the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda serve, script: stack.enter_context(serve(script))


def model_for(server: OpenAICompatibleServer, **kwargs: Any) -> GeminiModel:
    return GeminiModel("gemini-test", base_url=server.base_url, api_key=KEY, **kwargs)


def the_sdk_takes(body: dict[str, Any]) -> None:
    """Each part of ``body`` parses as the ``google-genai`` type of its field (from the
    wire JSON, so base64 is checked too); the SDK's types forbid unknown fields."""
    types = pytest.importorskip("google.genai").types
    fields = {
        "contents": types.Content,
        "systemInstruction": types.Content,
        "tools": types.Tool,
        "toolConfig": types.ToolConfig,
        "generationConfig": types.GenerationConfig,
        "safetySettings": types.SafetySetting,
    }
    assert set(body) <= set(fields), set(body) - set(fields)
    for key, value in body.items():
        for item in value if isinstance(value, list) else [value]:
            fields[key].model_validate_json(json.dumps(item))


def test_the_sdk_check_fails_on_a_shape_it_does_not_know() -> None:
    """The proof above can fail: a part with a field the API does not have, or a thought
    signature that is not base64, is refused by the SDK's types."""
    pydantic = pytest.importorskip("pydantic")
    with pytest.raises(pydantic.ValidationError):
        the_sdk_takes({"contents": [{"role": "model", "parts": [{"text": "x", "made_id": 1}]}]})
    with pytest.raises(pydantic.ValidationError):
        the_sdk_takes({"contents": [{"role": "model", "parts": [{"thoughtSignature": "%%"}]}]})


# --- the conversation -------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_request_maps_the_conversation_to_contents(server_for: ServerFor) -> None:
    """System prompts become ``systemInstruction``; roles are ``user`` and ``model``;
    media go as ``inlineData`` (image, PDF, audio), an image URL as ``fileData``, other
    files described; the answer's thought part, text and calls go back in order with the
    signature on the first call and the calls' ids; the batch's responses are
    ``functionResponse`` parts of one user turn (``output`` / ``error``, ids matched),
    a tool's image after them, and the next user message joined into that turn. The key
    goes in ``x-goog-api-key``, the request to ``…/models/gemini-test:generateContent``."""
    conversation = [
        SystemMessage("and in French"),
        UserMessage("weather?", [PNG, PDF, WAV, ImagePart("https://x.test/a.png"), BLOB]),
        PARALLEL,
        ToolResponseMessage(
            [
                ToolResponse("fc_1", "weather", "sunny", parts=[PNG]),
                ToolResponse("fc_2", "weather", "no such city", is_error=True),
            ]
        ),
        UserMessage("and tomorrow?"),
    ]
    request = ModelRequest(
        conversation,
        system_message=SystemMessage("be brief"),
        tools=("weather",),
        tool_specs=(WEATHER,),
    )
    server = server_for(serve_gemini, [gemini_reply("ok")])
    async with model_for(server) as model:
        await model.call(request)
    body, headers = server.requests[0], server.request_headers[0]
    the_sdk_takes(body)
    assert server.request_paths == ["/v1beta/models/gemini-test:generateContent"]
    assert headers["x-goog-api-key"] == KEY and "authorization" not in headers
    assert body["systemInstruction"] == {"parts": [{"text": "be brief\n\nand in French"}]}
    user, answer, results = body["contents"]
    assert [t["role"] for t in body["contents"]] == ["user", "model", "user"]
    png = {"inlineData": {"mimeType": "image/png", "data": PNG.url.split(",")[1]}}
    assert user["parts"][:2] == [{"text": "weather?"}, png]
    assert user["parts"][2]["inlineData"]["mimeType"] == "application/pdf"
    assert user["parts"][3]["inlineData"]["mimeType"] == "audio/wav"
    assert user["parts"][4] == {
        "fileData": {"mimeType": "image/png", "fileUri": "https://x.test/a.png"}
    }
    assert user["parts"][5] == {"text": "[file: a.bin, application/octet-stream, 2 bytes]"}
    assert answer["parts"] == [
        {"text": THOUGHTS, "thought": True},
        {"text": "Checking both."},
        {
            "functionCall": {"id": "fc_1", "name": "weather", "args": {"city": "Paris"}},
            "thoughtSignature": SIG,
        },
        {"functionCall": {"id": "fc_2", "name": "weather", "args": {"city": "Rome"}}},
    ]
    assert results["parts"] == [
        {"functionResponse": {"id": "fc_1", "name": "weather", "response": {"output": "sunny"}}},
        {
            "functionResponse": {
                "id": "fc_2",
                "name": "weather",
                "response": {"error": "no such city"},
            }
        },
        png,
        {"text": "and tomorrow?"},
    ]


async def _round_trip(
    server_for: ServerFor, answer: AssistantMessage, *, stream: bool
) -> tuple[AssistantMessage, list[dict[str, Any]]]:
    """``answer`` as the server sends it (streamed or whole), read by the model, then sent
    back in the next request: the message read, and the parts of the ``model`` turn."""
    reply = GeminiSSEReply.of(answer) if stream else gemini_reply(answer)
    server = server_for(serve_gemini, [reply, gemini_reply("done")])
    async with model_for(server) as model:
        if stream:
            assembler = ChunkAssembler()
            async with model.stream(ModelRequest([UserMessage("go")])) as chunks:
                async for chunk in chunks:
                    assembler.add(chunk)
            message = assembler.result().message
        else:
            message = (await model.call(ModelRequest([UserMessage("go")]))).message
        history: list[Any] = [UserMessage("go"), message]
        if message.tool_calls:
            history.append(
                ToolResponseMessage(
                    [ToolResponse(c.id, c.name, "sunny") for c in message.tool_calls]
                )
            )
        await model.call(ModelRequest(history))
    the_sdk_takes(server.requests[1])
    return message, server.requests[1]["contents"][1]["parts"]


SIGNED_TEXT = AssistantMessage(
    "Sunny in both.",
    provider_data={
        "google": {
            "parts": [
                {"ref": "text", "size": 5},
                {"ref": "text", "size": 9, "thoughtSignature": SIG_TEXT},
                {"ref": "text", "size": 0, "thoughtSignature": SIG},
            ]
        }
    },
)


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("answer", [PARALLEL, SIGNED_TEXT], ids=["calls", "text"])
async def test_thought_signatures_go_back_exactly_where_they_came(
    server_for: ServerFor, answer: AssistantMessage, stream: bool
) -> None:
    """The parts of the model's turn come back in the next request exactly as the API
    sent them: thoughts, text split where a signed part began, the signature on the
    first call, on a signed text part, on an empty last part."""
    sent = gemini_response_json(answer)["candidates"][0]["content"]["parts"]
    message, parts = await _round_trip(server_for, answer, stream=stream)
    assert message == answer
    assert parts == sent


@pytest.mark.anyio
async def test_made_up_ids_are_never_sent(server_for: ServerFor) -> None:
    """Calls the model gave no id go back without the ids reactcore made up, as do their
    responses (paired by order and name); the signature stays on the first call."""
    answer = AssistantMessage(
        "",
        [ToolCall("a", "weather", '{"city": "Paris"}'), ToolCall("b", "weather", "{}")],
        provider_data={
            "google": {
                "parts": [
                    {"ref": "call", "index": 0, "made_id": True, "thoughtSignature": SIG},
                    {"ref": "call", "index": 1, "made_id": True},
                ]
            }
        },
    )
    message, parts = await _round_trip(server_for, answer, stream=True)
    assert [c.id for c in message.tool_calls] == ["call_resp_test_0", "call_resp_test_1"]
    assert parts == [
        {"functionCall": {"name": "weather", "args": {"city": "Paris"}}, "thoughtSignature": SIG},
        {"functionCall": {"name": "weather", "args": {}}},
    ]


def test_an_edited_answer_goes_back_whole_with_its_call_signature() -> None:
    """When the text no longer adds up to the layout (an interceptor edited it) it goes
    as one part, unsigned, where the text was; thoughts and the call's signature stay."""
    edited = AssistantMessage(
        "Checking.", PARALLEL.tool_calls, provider_data=PARALLEL.provider_data
    )
    body = request_body(ModelRequest([UserMessage("go"), edited]))
    the_sdk_takes(body)
    parts = body["contents"][1]["parts"]
    assert parts[:2] == [{"text": THOUGHTS, "thought": True}, {"text": "Checking."}]
    assert parts[2]["thoughtSignature"] == SIG and "thoughtSignature" not in parts[3]


@pytest.mark.anyio
async def test_provider_data_stays_with_its_provider(server_for: ServerFor) -> None:
    """Gemini's layout (signatures, thoughts) is never sent to Anthropic or an
    OpenAI-compatible server, and Anthropic's signed thinking never to Gemini: the
    foreign answer goes to Gemini as its text and calls (with their ids)."""
    history = [UserMessage("weather?"), PARALLEL, RESULTS]
    anthropic = server_for(serve_anthropic, [anthropic_message_reply("ok")])
    openai = server_for(serve_openai_compatible, [HTTPReply.completion("ok")])
    async with AnthropicModel("claude-x", base_url=anthropic.base_url, api_key="k") as model:
        await model.call(ModelRequest(history))
    async with OpenAIChatModel("gpt-x", base_url=openai.base_url, api_key="k") as model:
        await model.call(ModelRequest(history))
    for body in (anthropic.requests[0], openai.requests[0]):
        assert SIG not in json.dumps(body) and THOUGHTS not in json.dumps(body)
    thinking = {"type": "thinking", "thinking": "secret", "signature": "EqQBsig==", "index": 0}
    foreign = AssistantMessage(
        "Checking.",
        [ToolCall("toolu_1", "weather", '{"city": "Paris"}')],
        provider_data={"anthropic": {"thinking": [thinking]}},
    )
    body = request_body(
        ModelRequest(
            [
                UserMessage("weather?"),
                foreign,
                ToolResponseMessage([ToolResponse("toolu_1", "weather", "sunny")]),
            ]
        )
    )
    the_sdk_takes(body)
    assert "EqQBsig==" not in json.dumps(body) and "secret" not in json.dumps(body)
    assert body["contents"][1]["parts"] == [
        {"text": "Checking."},
        {"functionCall": {"id": "toolu_1", "name": "weather", "args": {"city": "Paris"}}},
    ]
    assert body["contents"][2]["parts"][0]["functionResponse"]["id"] == "toolu_1"


# --- tools, output, settings ------------------------------------------------------------

DEFS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {
        "Place": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "format": "uri"},
                "when": {"type": "string", "format": "date-time"},
            },
            "required": ["city"],
            "additionalProperties": False,
        }
    },
    "type": "object",
    "properties": {
        "place": {"$ref": "#/$defs/Place", "description": "where"},
        "days": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
    "required": ["place"],
    "additionalProperties": False,
}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", {"functionCallingConfig": {"mode": "AUTO"}}),
        ("required", {"functionCallingConfig": {"mode": "ANY"}}),
        ("none", {"functionCallingConfig": {"mode": "NONE"}}),
        (
            {"type": "function", "function": {"name": "plan"}},
            {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["plan"]}},
        ),
    ],
)
async def test_tools_go_in_the_apis_schema_subset_with_their_tool_config(
    server_for: ServerFor, choice: Any, config: dict[str, Any]
) -> None:
    """Tools are ``functionDeclarations`` whose parameters have their ``$defs`` inlined,
    upper-case types, ``nullable`` for null, and without what the API refuses
    (``additionalProperties``, ``$schema``, unknown formats, ``uniqueItems``), each
    dropped key logged at debug level; a tool without parameters has none; tool_choice
    becomes ``toolConfig.functionCallingConfig``; no JSON mode beside tools."""
    request = ModelRequest(
        [UserMessage("plan")],
        tools=("plan", "now"),
        tool_specs=(
            ToolSpec("plan", "Plan a trip.", DEFS_SCHEMA),
            ToolSpec("now", "The time.", {"type": "object", "properties": {}}),
        ),
        options=ChatOptions(
            tool_choice=choice,
            response_format={"type": "json_schema", "json_schema": {"name": "o", "schema": SCHEMA}},
        ),
    )
    server = server_for(serve_gemini, [gemini_reply("ok")])
    with structlog.testing.capture_logs() as logs:
        async with model_for(server) as model:
            await model.call(request)
    body = server.requests[0]
    the_sdk_takes(body)
    plan, now = body["tools"][0]["functionDeclarations"]
    assert now == {"name": "now", "description": "The time."}
    assert plan["parameters"] == {
        "type": "OBJECT",
        "properties": {
            "place": {
                "type": "OBJECT",
                "properties": {
                    "city": {"type": "STRING"},
                    "when": {"type": "STRING", "format": "date-time"},
                },
                "required": ["city"],
                "description": "where",
            },
            "days": {"default": None, "type": "INTEGER", "minimum": 1, "nullable": True},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}},
        },
        "required": ["place"],
    }
    assert body["toolConfig"] == config
    assert "generationConfig" not in body
    dropped = [e for e in logs if e["event"] == "gemini_schema_keys_dropped"]
    assert dropped == [
        {
            "event": "gemini_schema_keys_dropped",
            "log_level": "debug",
            "schema": "tool plan",
            "dropped": [
                "$.$schema",
                "$.additionalProperties",
                "$.properties.place<Place>.additionalProperties",
                "$.properties.place<Place>.properties.city.format",
                "$.properties.tags.uniqueItems",
            ],
        }
    ]


@pytest.mark.anyio
async def test_structured_output_and_generation_settings(server_for: ServerFor) -> None:
    """Without tools a JSON-schema ``response_format`` becomes ``responseMimeType`` and the
    converted ``responseSchema``; temperature, top_p, max_tokens, the model's stop
    sequences and thinking settings go in ``generationConfig``; ``extra_body`` merges one
    level deep; ``options.model`` names the model in the path, a tuned model's path is
    taken as is; ``api_version`` is the path's version; a stream asks for SSE."""
    strict = {**SCHEMA, "additionalProperties": False}
    options = ChatOptions(
        model="gemini-other",
        temperature=0.2,
        top_p=0.9,
        max_tokens=512,
        response_format={"type": "json_schema", "json_schema": {"name": "o", "schema": strict}},
        extra_body={
            "generationConfig": {"seed": 7},
            "safetySettings": [
                {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}
            ],
        },
    )
    server = server_for(
        serve_gemini, [gemini_reply("{}"), GeminiSSEReply.of("{}"), gemini_reply("{}")]
    )
    settings = {
        "stop_sequences": ["END"],
        "thinking_budget": 1024,
        "thinking_level": "high",
        "include_thoughts": True,
    }
    async with model_for(server, **settings) as model:
        await model.call(ModelRequest([UserMessage("go")], options=options))
        async with model.stream(ModelRequest([UserMessage("go")])) as chunks:
            async for _ in chunks:
                pass
    async with model_for(server, api_version="v1alpha") as model:
        await model.call(
            ModelRequest(
                [UserMessage("go")],
                options=ChatOptions(
                    model="tunedModels/t1", response_format={"type": "json_object"}
                ),
            )
        )
    body = server.requests[0]
    the_sdk_takes(body)
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "topP": 0.9,
        "maxOutputTokens": 512,
        "stopSequences": ["END"],
        "thinkingConfig": {
            "thinkingBudget": 1024,
            "thinkingLevel": "HIGH",
            "includeThoughts": True,
        },
        "responseMimeType": "application/json",
        "responseSchema": {
            "type": "OBJECT",
            "properties": {"city": {"type": "STRING"}},
            "required": ["city"],
        },
        "seed": 7,
    }
    assert body["safetySettings"][0]["threshold"] == "BLOCK_ONLY_HIGH"
    assert server.requests[2]["generationConfig"] == {"responseMimeType": "application/json"}
    assert server.request_paths == [
        "/v1beta/models/gemini-other:generateContent",
        "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
        "/v1alpha/tunedModels/t1:generateContent",
    ]


def test_a_bad_tool_choice_names_what_is_taken() -> None:
    """An unknown ``tool_choice`` is a ``ValueError`` saying what is taken."""
    for choice in ("sometimes", {"type": "weird"}):
        request = ModelRequest(
            [UserMessage("x")],
            tools=("weather",),
            tool_specs=(WEATHER,),
            options=ChatOptions(tool_choice=choice),
        )
        with pytest.raises(ValueError, match="tool_choice must be auto, required"):
            request_body(request)


# --- the schema subset ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "converted", "dropped"),
    [
        ({"type": ["string", "null"]}, {"type": "STRING", "nullable": True}, []),
        (
            {"type": ["string", "integer"]},
            {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
            [],
        ),
        (
            {"oneOf": [{"type": "string"}, {"type": "number", "format": "double"}]},
            {"anyOf": [{"type": "STRING"}, {"type": "NUMBER", "format": "double"}]},
            [],
        ),
        (
            {"allOf": [{"type": "boolean"}], "description": "d"},
            {"description": "d", "type": "BOOLEAN"},
            [],
        ),
        ({"allOf": [{"type": "string"}, {"minLength": 1}]}, {}, ["$.allOf"]),
        ({"const": "only"}, {"enum": ["only"], "type": "STRING"}, []),
        ({"const": 3}, {}, ["$.const"]),
        ({"enum": [1, 2]}, {}, ["$.enum"]),
        ({"enum": ["a", None]}, {"enum": ["a"], "type": "STRING", "nullable": True}, []),
        ({"type": "integer", "format": "int64"}, {"type": "INTEGER", "format": "int64"}, []),
        ({"type": "string", "format": "email"}, {"type": "STRING"}, ["$.format"]),
        ({"type": "object", "properties": {}}, {"type": "OBJECT"}, []),
        (
            {"type": "array", "prefixItems": [{"type": "string"}]},
            {"type": "ARRAY"},
            ["$.prefixItems"],
        ),
        (
            {"type": "object", "properties": {"x": True}, "required": ["x", "y"]},
            {"type": "OBJECT", "properties": {"x": {}}, "required": ["x"]},
            ["$.properties.x"],
        ),
        (
            {
                "definitions": {
                    "N": {"type": "object", "properties": {"next": {"$ref": "#/definitions/N"}}}
                },
                "$ref": "#/definitions/N",
            },
            {"type": "OBJECT", "properties": {"next": {"type": "OBJECT"}}},
            ["$<N>.properties.next.$ref"],
        ),
        ({"$ref": "https://elsewhere.test/x.json"}, {}, ["$.$ref"]),
        (
            {"type": "number", "exclusiveMinimum": 0, "multipleOf": 2, "examples": [4]},
            {"type": "NUMBER"},
            ["$.exclusiveMinimum", "$.multipleOf", "$.examples"],
        ),
    ],
)
def test_json_schema_becomes_the_apis_subset(
    schema: dict[str, Any], converted: dict[str, Any], dropped: list[str]
) -> None:
    """Each JSON Schema construct comes out as the API takes it, and what it cannot take
    is reported by path (see ``reactcore.models._gemini_schema``)."""
    assert gemini_schema(schema) == (converted, dropped)
    types = pytest.importorskip("google.genai").types
    types.Schema.model_validate_json(json.dumps(converted))
