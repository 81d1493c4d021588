"""What providers keep of a model's answer (``provider_data``) under ``PIIRedactionHook``:
through real agent runs against the loopback servers of Anthropic, the Responses API and
Gemini, the next request and the SQLite file hold no value; unsigned copies are redacted
in place, signed ones dropped.

Every async test runs on asyncio and trio.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from reactcore import (
    AssistantMessage,
    ModelResponse,
    PIIRedactionHook,
    ReactAgent,
    RunnableConfig,
    SqliteSaver,
    ToolCall,
)
from reactcore.testing import reasoning_signature
from tests.providers import PROVIDERS, Provider
from tests.test_pii_redaction import EMAIL, PHONE, lookup_tool, stored_bytes

pytestmark = pytest.mark.anyio

SIGNED = "EqQBCkgIARABGAIiQL-signed-thinking"
ENCRYPTED = "gAAAAABo-encrypted-reasoning"
CALL_SIGNATURE = "R2VtaW5pLWNhbGwtc2lnbmF0dXJl"
THOUGHT_SIGNATURE = "R2VtaW5pLXRob3VnaHQtc2lnbmF0dXJl"
ANSWER_TEXT = "Checking."


def thinking_answer(provider: Provider) -> AssistantMessage:
    """An answer asking for one call whose thinking — in ``reasoning`` and in the
    provider's own copy, ``provider_data`` — names the user's e-mail address."""
    thought = f"The user is {EMAIL}."
    data: dict[str, Any] = {
        "anthropic": {
            "thinking": [{"index": 0, "type": "thinking", "thinking": thought, "signature": SIGNED}]
        },
        "bedrock": {
            "reasoning": [{"index": 0, "text": thought, "signature": reasoning_signature(thought)}]
        },
        "openai-responses": {
            "output": [
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": thought}],
                    "encrypted_content": ENCRYPTED,
                }
            ]
        },
        "google": {
            "parts": [
                {"part": {"text": thought, "thought": True}},
                {
                    "part": {
                        "text": f" Mail {EMAIL}.",
                        "thought": True,
                        "thoughtSignature": THOUGHT_SIGNATURE,
                    }
                },
                {"ref": "text", "size": len(ANSWER_TEXT)},
                {"ref": "call", "index": 0, "thoughtSignature": CALL_SIGNATURE},
            ]
        },
    }[provider.name]
    reasoning = thought + (f" Mail {EMAIL}." if provider.name == "google" else "")
    call = ToolCall("toolu_1", "lookup", json.dumps({"who": "x"}))
    return AssistantMessage(
        ANSWER_TEXT, [call], reasoning=reasoning, provider_data={provider.name: data}
    )


# The providers whose answers carry thinking the next request sends back (Vertex's keep
# Gemini's and Anthropic's data: the same code covers them).
THINKING_PROVIDERS = [
    p for p in PROVIDERS if p.name in ("anthropic", "openai-responses", "google", "bedrock")
]


@pytest.mark.parametrize("provider", THINKING_PROVIDERS, ids=lambda p: p.name)
async def test_the_providers_copy_of_the_thinking_is_redacted_or_dropped(
    provider: Provider, tmp_path: Path
) -> None:
    """The copy of the model's thinking its provider keeps (``provider_data``) is redacted
    with the reasoning: the next request and the SQLite file hold no value. Unsigned
    copies are redacted in place (a Responses reasoning summary, its encrypted content
    kept; a Gemini thought); signed ones, which cannot be edited, are dropped (Anthropic's
    thinking block — the tool loop then goes on without thinking, as the API allows; a
    signed Gemini thought), while a call's signature stays."""
    db = tmp_path / "runs.db"
    script = [provider.reply(thinking_answer(provider)), provider.reply("found")]
    with provider.serve(script) as server:
        async with SqliteSaver(db) as saver:
            agent = ReactAgent(
                "a",
                provider.model(server, thinking=True),
                tools=[lookup_tool("ok")],
                hooks=[PIIRedactionHook()],
                saver=saver,
            )
            result = await agent.invoke("who?", RunnableConfig(thread_id="t"))
    assert result.text == "found"
    answer = result.messages[1]
    assert isinstance(answer, AssistantMessage)
    assert "[REDACTED:email]" in answer.reasoning
    after = server.requests[1]
    sent = json.dumps(after)
    assert EMAIL not in sent and EMAIL not in repr(result.state.data)
    assert EMAIL.encode() not in stored_bytes(db)
    if provider.name == "anthropic":
        assert answer.provider_data == {}
        assert SIGNED not in sent and "thinking" not in after
    elif provider.name == "bedrock":
        assert answer.provider_data == {}
        assert reasoning_signature(f"The user is {EMAIL}.") not in sent
        assert "reasoningContent" not in sent
    elif provider.name == "openai-responses":
        reasoning = next(i for i in after["input"] if i.get("type") == "reasoning")
        assert reasoning["summary"] == [
            {"type": "summary_text", "text": "The user is [REDACTED:email]."}
        ]
        assert reasoning["encrypted_content"] == ENCRYPTED
    else:
        turn = next(t for t in after["contents"] if t["role"] == "model")
        assert turn["parts"][0] == {"text": "The user is [REDACTED:email].", "thought": True}
        assert THOUGHT_SIGNATURE not in sent
        assert [p.get("thoughtSignature") for p in turn["parts"] if "functionCall" in p] == [
            CALL_SIGNATURE
        ]


@pytest.mark.parametrize("provider", THINKING_PROVIDERS, ids=lambda p: p.name)
async def test_the_providers_copy_of_harmless_thinking_is_kept_whole(provider: Provider) -> None:
    """Thinking that holds nothing the detectors find goes back to its provider as it
    came, signatures and all."""
    message = thinking_answer(provider)
    clean = json.loads(json.dumps(message.provider_data).replace(EMAIL, "the customer"))
    message = attrs.evolve(
        message, reasoning=message.reasoning.replace(EMAIL, "the customer"), provider_data=clean
    )
    response = ModelResponse(message)
    assert PIIRedactionHook().answer(response) is response


def test_a_signed_gemini_text_part_loses_its_signature_when_the_text_is_redacted() -> None:
    """A Gemini text part signed by the model goes back unsigned once its text is
    redacted, even when the redaction keeps its length (``mask``): the signature was for
    the text the model wrote."""
    layout = [{"ref": "text", "size": 21, "thoughtSignature": THOUGHT_SIGNATURE}]
    message = AssistantMessage(f"call {PHONE}", provider_data={"google": {"parts": layout}})
    cleaned = PIIRedactionHook(mode="mask").answer(ModelResponse(message)).message
    assert cleaned.text == "call +** ** **** 0958"
    assert cleaned.provider_data == {"google": {"parts": [{"ref": "text", "size": 21}]}}
