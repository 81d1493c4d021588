"""Provider data on messages: opaque, provider-keyed, kept in checkpoints and events,
assembled from streamed chunks, and never sent to another provider."""

from __future__ import annotations

from typing import Any

from reactcore import (
    AssistantMessage,
    ChunkAssembler,
    ModelCallFinished,
    ModelChunk,
    ModelRequest,
    OverAllState,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    event_from_json,
    to_json,
)
from reactcore._checkpoint import Checkpoint, dump_checkpoint, load_checkpoint
from reactcore.models.openai import request_body

THINKING: dict[str, Any] = {
    "anthropic": {
        "thinking": [
            {"index": 0, "type": "thinking", "thinking": "Let me see.", "signature": "c2ln=="},
            {"index": 1, "type": "redacted_thinking", "data": "b3BhcXVl"},
        ]
    }
}
ANSWER = AssistantMessage(
    "",
    [ToolCall("toolu_1", "weather", '{"city": "Paris"}')],
    reasoning="Let me see.",
    provider_data=THINKING,
)


def test_provider_data_round_trips_through_a_checkpoint() -> None:
    """A checkpoint keeps the provider data whole (signatures and all), and a message
    without any is written as before (the field left out)."""
    state = OverAllState({"messages": [UserMessage("hi"), ANSWER, AssistantMessage("plain")]})
    text = dump_checkpoint(Checkpoint("t", state, "tools", 1, "r"))
    messages = load_checkpoint(text).state["messages"]
    assert messages[1] == ANSWER
    assert messages[1].provider_data == THINKING
    assert text.count("provider_data") == 1


def test_provider_data_round_trips_through_event_json() -> None:
    """``ModelCallFinished`` carries the message with its provider data in JSON."""
    event = ModelCallFinished(ANSWER)
    back = event_from_json(to_json(event))
    assert isinstance(back, ModelCallFinished)
    assert back.message.provider_data == THINKING


def test_the_assembler_gathers_provider_data_from_chunks() -> None:
    """Chunks' provider data end on the message; a later chunk's entry replaces an
    earlier one's, key by key within a provider."""
    assembler = ChunkAssembler()
    first = {"anthropic": {"thinking": THINKING["anthropic"]["thinking"][:1]}}
    assembler.add(ModelChunk(reasoning="Let me see.", provider_data=first))
    assembler.add(ModelChunk(provider_data=THINKING))
    assembler.add(ModelChunk(provider_data={"other": {"x": 1}}))
    assembler.add(ModelChunk(text="ok", finish_reason="stop"))
    message = assembler.result().message
    assert message.provider_data == {**THINKING, "other": {"x": 1}}
    assert message.reasoning == "Let me see."


def test_an_openai_compatible_request_never_carries_another_providers_data() -> None:
    """Moving a conversation with Anthropic thinking blocks to an OpenAI-compatible
    endpoint sends the calls and results, but no signature or thinking block."""
    conversation = [
        UserMessage("weather?"),
        ANSWER,
        ToolResponseMessage([ToolResponse("toolu_1", "weather", "sunny")]),
    ]
    body = request_body(ModelRequest(conversation), "gpt", stream=False)
    text = repr(body)
    assert "c2ln==" not in text and "b3BhcXVl" not in text and "provider_data" not in text
    assert body["messages"][1]["tool_calls"][0]["id"] == "toolu_1"
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"}
