"""Parsing a streamed Gemini answer: reactcore's ``GeminiModel`` against the official
``google-genai`` SDK's ``generate_content_stream``, on the same bytes.

The answer is one pre-built ``text/event-stream`` body of 10,000 events (``--quick``:
2,000), each a whole ``GenerateContentResponse`` chunk as ``streamGenerateContent?alt=sse``
sends it: thought pieces, text pieces, two ``functionCall`` parts (the first signed), the
last chunk with the finish reason and usage. Both clients read it through an
``httpx.MockTransport`` (no network): reactcore's ``stream`` → ``ChunkAssembler`` (the
agent loop's path), the SDK's ``aio.models.generate_content_stream`` with every chunk's
parts gathered (its typed ``GenerateContentResponse`` per event). Each side is run
``--repeat`` times, alternating; the table gives the medians and the ratio SDK /
reactcore (above 1: reactcore is faster). asyncio only (the SDK's only backend).

    python benchmarks/bench_gemini_stream.py [--quick] [--repeat N] [--json PATH]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import against_the_sdk, reactcore_stream, sse_transport

from reactcore import (
    AssistantMessage,
    ChatModel,
    GeminiModel,
    ToolCall,
)
from reactcore.testing import gemini_chunks


def stream_body(events: int) -> tuple[bytes, int]:
    """An SSE body of about ``events`` events, as the Gemini API frames them, and the
    exact number of events."""
    text_pieces = events - 22
    layout = [
        {"part": {"text": "t" * 20, "thought": True}},
        {"ref": "text", "size": text_pieces},
        {"ref": "call", "index": 0, "thoughtSignature": "c2lnbmF0dXJl"},
        {"ref": "call", "index": 1},
    ]
    message = AssistantMessage(
        "x" * text_pieces,
        [
            ToolCall("fc_1", "search", json.dumps({"q": "a" * 30})),
            ToolCall("fc_2", "search", "{}"),
        ],
        reasoning="t" * 20,
        provider_data={"google": {"parts": layout}},
    )
    chunks = gemini_chunks(message, chunk_size=1)
    body = b"".join(f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks)
    return body, len(chunks)


async def with_reactcore(body: bytes) -> float:
    def model(client: httpx.AsyncClient) -> ChatModel:
        return GeminiModel("m", base_url="http://bench", api_key="k", http_client=client)

    seconds, response = await reactcore_stream(body, model)
    assert len(response.message.tool_calls) == 2
    return seconds


async def with_sdk(body: bytes) -> float:
    from google import genai
    from google.genai import types

    async with httpx.AsyncClient(transport=sse_transport(body, httpx)) as client:
        options = types.HttpOptions(
            base_url="http://bench",
            api_version="v1beta",
            httpx_async_client=client,
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        sdk = genai.Client(api_key="k", http_options=options)
        start = time.perf_counter()
        parts: list[Any] = []
        stream = await sdk.aio.models.generate_content_stream(model="m", contents="hi")
        async for chunk in stream:
            parts += chunk.candidates[0].content.parts
        assert sum(p.function_call is not None for p in parts) == 2
        return time.perf_counter() - start


if __name__ == "__main__":
    against_the_sdk(__doc__ or "", stream_body, with_reactcore, with_sdk)
