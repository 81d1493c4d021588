"""Parsing a streamed Responses answer: reactcore's ``OpenAIResponsesModel`` against the
official ``openai`` SDK's streaming parsers, on the same bytes.

The answer is one pre-built ``text/event-stream`` body of about 10,000 events
(``--quick``: 2,000), as OpenAI's Responses API frames them: ``response.created``,
``response.in_progress``, a reasoning item with its encrypted content and a summary
streamed as ``response.reasoning_summary_text.delta`` pieces, a message streamed as
``response.output_text.delta`` pieces (one character each), two function calls streamed
as ``response.function_call_arguments.delta`` pieces, every ``…added`` / ``…done`` event
between, and ``response.completed`` with the whole response. Every client reads it
through the same ``httpx.MockTransport`` (no network): reactcore's ``stream`` →
``ChunkAssembler`` (the agent loop's path); the SDK's ``responses.create(stream=True)``
(each event parsed into its typed model) and its ``responses.stream(...)
.get_final_response()`` (the same, accumulated into the final response). Each side is run
``--repeat`` times, in turn; the table gives the medians and the ratios SDK / reactcore
(above 1: reactcore is faster). asyncio only (the SDK's home backend).

    python benchmarks/bench_responses_stream.py [--quick] [--repeat N] [--json PATH]
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import alternate, parse, reactcore_stream, sse_transport

from reactcore import (
    AssistantMessage,
    ChatModel,
    OpenAIResponsesModel,
    ToolCall,
)
from reactcore.testing import responses_events

_SUMMARY = 200


@attrs.frozen
class Plan:
    events: int = 10_000
    repeat: int = 5


def stream_body(events: int) -> tuple[bytes, int]:
    """An SSE body of about ``events`` events, as the Responses API frames them, and the
    exact number of events."""
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "s" * _SUMMARY}],
        "encrypted_content": "gAAAAB" + "e" * 2_000,
    }
    message = AssistantMessage(
        "x" * (events - _SUMMARY - 80),
        [
            ToolCall("call_1", "search", json.dumps({"q": "a" * 30})),
            ToolCall("call_2", "search", "{}"),
        ],
        reasoning="s" * _SUMMARY,
        provider_data={"openai-responses": {"output": [reasoning]}},
    )
    frames = responses_events(message, chunk_size=1)
    body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in frames)
    return body, len(frames)


def _sdk(body: bytes) -> Any:
    """The official SDK's client on a transport answering with ``body`` (and its own
    httpx fork's client, to close)."""
    import httpx2  # the SDK's own httpx
    import openai

    client = httpx2.AsyncClient(transport=sse_transport(body, httpx2))
    sdk = openai.AsyncOpenAI(base_url="http://bench", api_key="k", http_client=client)
    return sdk.with_options(max_retries=0), client


async def with_reactcore(body: bytes) -> float:
    def model(client: httpx.AsyncClient) -> ChatModel:
        return OpenAIResponsesModel("m", base_url="http://bench", api_key="k", http_client=client)

    seconds, response = await reactcore_stream(body, model)
    assert len(response.message.tool_calls) == 2
    return seconds


async def with_sdk_events(body: bytes) -> float:
    sdk, client = _sdk(body)
    async with client:
        start = time.perf_counter()
        calls = 0
        async for event in await sdk.responses.create(model="m", input="hi", stream=True):
            calls += event.type == "response.function_call_arguments.done"
        assert calls == 2
        return time.perf_counter() - start


async def with_sdk_final(body: bytes) -> float:
    sdk, client = _sdk(body)
    async with client:
        start = time.perf_counter()
        async with sdk.responses.stream(model="m", input="hi") as stream:
            response = await stream.get_final_response()
        assert sum(item.type == "function_call" for item in response.output) == 2
        return time.perf_counter() - start


async def measure(plan: Plan) -> dict[str, Any]:
    body, count = stream_body(plan.events)
    sides = [with_reactcore, with_sdk_events, with_sdk_final]
    reactcore_s, events_s, final_s = await alternate(sides, body, plan.repeat)
    return {
        "events": count,
        "bytes": len(body),
        "reactcore_ms": round(reactcore_s * 1000, 2),
        "sdk_events_ms": round(events_s * 1000, 2),
        "sdk_final_ms": round(final_s * 1000, 2),
        "sdk_events_over_reactcore": round(events_s / reactcore_s, 2),
        "sdk_final_over_reactcore": round(final_s / reactcore_s, 2),
    }


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", Plan(events=2_000, repeat=3), Plan(), argv)
    row = anyio.run(measure, plan, backend="asyncio")
    head = ("events", "bytes", "reactcore ms", "SDK events ms", "SDK final ms", "×", "×")
    print("{:>7} {:>9} {:>13} {:>14} {:>13} {:>6} {:>6}".format(*head))
    print(
        f"{row['events']:>7} {row['bytes']:>9} {row['reactcore_ms']:>13.2f}"
        f" {row['sdk_events_ms']:>14.2f} {row['sdk_final_ms']:>13.2f}"
        f" {row['sdk_events_over_reactcore']:>6.2f} {row['sdk_final_over_reactcore']:>6.2f}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps([row], indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
