"""What the Gemini tests share: a signed parallel answer as the API would send it."""

from __future__ import annotations

import base64

from reactcore import AssistantMessage, ToolCall


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


SIG_CALL = b64("signature of the first call")
THOUGHTS = "Two cities: two calls."
LAYOUT = [
    {"part": {"text": THOUGHTS, "thought": True}},
    {"ref": "text", "size": len("Checking both.")},
    {"ref": "call", "index": 0, "thoughtSignature": SIG_CALL},
    {"ref": "call", "index": 1},
]
PARALLEL = AssistantMessage(
    "Checking both.",
    [
        ToolCall("fc_1", "weather", '{"city": "Paris"}'),
        ToolCall("fc_2", "weather", '{"city": "Rome"}'),
    ],
    reasoning=THOUGHTS,
    provider_data={"google": {"parts": LAYOUT}},
)
SIG_TEXT = b64("signature of the text")
