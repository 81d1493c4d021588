"""Parsing a streamed Anthropic answer: reactcore's ``AnthropicModel`` against the official
``anthropic`` SDK's streaming parser, on the same bytes.

The answer is one pre-built ``text/event-stream`` body of 10,000 events (``--quick``:
2,000): ``message_start``, a thinking block with its signature, text deltas, two
``tool_use`` blocks streamed as ``input_json_delta`` pieces, ``message_delta``,
``message_stop``. Both clients read it through the same ``httpx.MockTransport`` (no
network): reactcore's ``stream`` → ``ChunkAssembler`` (the agent loop's path), the SDK's
``messages.stream(...).get_final_message()`` (its accumulating parser). Each side is run
``--repeat`` times, alternating; the table gives the medians and the ratio SDK /
reactcore (above 1: reactcore is faster). asyncio only (the SDK's home backend).

    python benchmarks/bench_anthropic_stream.py [--quick] [--repeat N] [--json PATH]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import against_the_sdk, reactcore_stream, sse_transport

from reactcore import (
    AnthropicModel,
    AssistantMessage,
    ChatModel,
    ToolCall,
)
from reactcore.testing import anthropic_events


def stream_body(events: int) -> tuple[bytes, int]:
    """An SSE body of about ``events`` events, as the Messages API frames them, and the
    exact number of events."""
    text_pieces = events - 40
    message = AssistantMessage(
        "x" * text_pieces,
        [
            ToolCall("toolu_1", "search", json.dumps({"q": "a" * 30})),
            ToolCall("toolu_2", "search", "{}"),
        ],
        reasoning="thinking",
        provider_data={
            "anthropic": {
                "thinking": [
                    {"index": 0, "type": "thinking", "thinking": "t" * 20, "signature": "sig"}
                ]
            }
        },
    )
    frames = anthropic_events(message, chunk_size=1)
    body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in frames)
    return body, len(frames)


async def with_reactcore(body: bytes) -> float:
    def model(client: httpx.AsyncClient) -> ChatModel:
        return AnthropicModel("m", base_url="http://bench", api_key="k", http_client=client)

    seconds, response = await reactcore_stream(body, model)
    assert len(response.message.tool_calls) == 2
    return seconds


async def with_sdk(body: bytes) -> float:
    import anthropic
    import httpx2  # the SDK's own httpx

    async with httpx2.AsyncClient(transport=sse_transport(body, httpx2)) as client:
        sdk = anthropic.AsyncAnthropic(
            base_url="http://bench", api_key="k", http_client=client, max_retries=0
        )
        start = time.perf_counter()
        async with sdk.messages.stream(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            message = await stream.get_final_message()
        assert sum(b.type == "tool_use" for b in message.content) == 2
        return time.perf_counter() - start


if __name__ == "__main__":
    against_the_sdk(__doc__ or "", stream_body, with_reactcore, with_sdk)
