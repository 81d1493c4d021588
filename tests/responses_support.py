"""What the tests of ``OpenAIResponsesModel`` share: the ``server_for`` fixture and
``model_for``; an answer with encrypted reasoning, a message and two parallel calls, as
the model keeps it; a conversation that uses every kind of input item."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reactcore import (
    AssistantMessage,
    AudioPart,
    ChatOptions,
    FilePart,
    ImagePart,
    ModelRequest,
    OpenAIResponsesModel,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from reactcore.models import ToolSpec, Usage
from reactcore.testing import OpenAICompatibleServer, Script, serve_openai_responses

KEY = "sk-responses-test-7f3a9c2e1d0b"
ENCRYPTED = "gAAAAABo-encrypted-reasoning-of-the-model=="
REASONING: dict[str, Any] = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Two cities: two calls."}],
    "encrypted_content": ENCRYPTED,
}
OUTPUT: list[dict[str, Any]] = [
    REASONING,
    {"type": "message", "id": "msg_1", "length": 14},
    {"type": "function_call", "call_id": "call_1", "id": "fc_1"},
    {"type": "function_call", "call_id": "call_2", "id": "fc_2"},
]
PARALLEL = AssistantMessage(
    "Checking both.",
    [
        ToolCall("call_1", "weather", '{"city": "Paris"}'),
        ToolCall("call_2", "weather", '{"city": "Rome"}'),
    ],
    reasoning="Two cities: two calls.",
    provider_data={"openai-responses": {"output": OUTPUT, "response_id": "resp_test"}},
)
USAGE = Usage(120, 30, 150, cached_tokens=80, reasoning_tokens=12, cache_creation_tokens=20)
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
OPEN_SCHEMA = {"type": "object", "properties": {"q": {"type": "string", "default": ""}}}
PNG = ImagePart.from_bytes(b"\x89PNG\r\n\x1a\nxx", "image/png")
PDF = FilePart.from_bytes(b"%PDF-1.4 x", "application/pdf", "a.pdf")


def rich_request(**options: Any) -> ModelRequest:
    """A conversation with every kind of input item: a user message with an image, a PDF,
    an uploaded file and audio; a developer message in the middle; the parallel answer
    with its encrypted reasoning; a text result and one with an image; two tools (one
    strict, one not)."""
    conversation = [
        UserMessage(
            "weather?",
            [
                PNG,
                ImagePart("https://x.test/a.png", "low"),
                PDF,
                FilePart(file_id="file_1"),
                AudioPart("UklGRg==", "wav"),
            ],
        ),
        SystemMessage("Answer in French.", role="developer"),
        PARALLEL,
        ToolResponseMessage(
            [
                ToolResponse("call_1", "weather", "sunny"),
                ToolResponse("call_2", "weather", "see the map", parts=[PNG]),
            ]
        ),
    ]
    return ModelRequest(
        conversation,
        system_message=SystemMessage("be brief"),
        tools=("weather", "search"),
        tool_specs=(
            ToolSpec("weather", "Weather.", SCHEMA),
            ToolSpec("search", "Search.", OPEN_SCHEMA),
        ),
        options=ChatOptions(**options),
    )


ServerFor = Callable[[Script], OpenAICompatibleServer]


@pytest.fixture(name="server_for")
def server_for_fixture() -> Iterator[ServerFor]:
    """The ``server_for`` fixture (import it into a test module to use it):
    ``server_for(script)`` starts a loopback Responses server that stops with the test."""
    with contextlib.ExitStack() as stack:
        yield lambda script: stack.enter_context(serve_openai_responses(script))


def model_for(server: OpenAICompatibleServer, **kwargs: Any) -> OpenAIResponsesModel:
    """The client on ``server``, retrying quickly."""
    kwargs.setdefault("retry_backoff", 0.01)
    return OpenAIResponsesModel("gpt-5", base_url=server.base_url, api_key=KEY, **kwargs)
