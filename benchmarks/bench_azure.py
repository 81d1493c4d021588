"""Per-call overhead on Azure OpenAI: reactcore's Azure client (``azure_model``, api-key)
beside the official ``openai.AsyncAzureOpenAI`` on the same loopback Azure server.

Both send the same small chat-completions request to
``/openai/deployments/{deployment}/chat/completions?api-version=…`` on
``serve_azure_openai`` (uvicorn on 127.0.0.1, real sockets, kept-alive connections) and
read Azure's answer: whole (``call`` / ``create``), and streamed (``stream`` into a
``ChunkAssembler`` / ``create(stream=True)`` read to the end, ~40 events whose first
has no choices). Each side makes ``--calls`` calls per repeat, in turn; the table gives
the median seconds per call of each and the ratio SDK / reactcore (above 1: reactcore
is faster). The server's own time is in both. asyncio only (the SDK's home backend).

    python benchmarks/bench_azure.py [--quick] [--repeat N] [--json PATH]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse

from reactcore import ChunkAssembler, ModelRequest, UserMessage
from reactcore.models import azure_model
from reactcore.testing import azure_reply, azure_stream_reply, serve_azure_openai

KEY = "azure-bench-key"
VERSION = "2024-10-21"
DEPLOYMENT = "gpt-4o-bench"
ANSWER = "The weather in Paris is sunny, with a light breeze from the west; 21 degrees."


@attrs.frozen
class Plan:
    calls: int = 200
    repeat: int = 5


Side = Callable[[], Awaitable[None]]


async def per_call(side: Side, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await side()
    return (time.perf_counter() - start) / calls


async def measure(endpoint: str, plan: Plan, stream: bool) -> tuple[float, float]:
    import openai  # a benchmark dependency, as the SDK's tests have it

    request = ModelRequest([UserMessage("What is the weather in Paris?")])
    messages: Any = [{"role": "user", "content": "What is the weather in Paris?"}]
    async with (
        azure_model(DEPLOYMENT, endpoint=endpoint, api_key=KEY, api_version=VERSION) as ours,
        openai.AsyncAzureOpenAI(azure_endpoint=endpoint, api_key=KEY, api_version=VERSION) as sdk,
    ):

        async def reactcore_side() -> None:
            if not stream:
                await ours.call(request)
                return
            assembler = ChunkAssembler()
            async with ours.stream(request) as chunks:
                async for chunk in chunks:
                    assembler.add(chunk)
            assembler.result()

        async def sdk_side() -> None:
            if not stream:
                await sdk.chat.completions.create(model=DEPLOYMENT, messages=messages)
                return
            events = await sdk.chat.completions.create(
                model=DEPLOYMENT, messages=messages, stream=True
            )
            async for _ in events:
                pass

        sides = [reactcore_side, sdk_side]
        for side in sides:  # warm up: connections, imports, caches
            await per_call(side, 5)
        times: list[list[float]] = [[], []]
        for _ in range(plan.repeat):
            for side, found in zip(sides, times, strict=True):
                found.append(await per_call(side, plan.calls))
    return statistics.median(times[0]), statistics.median(times[1])


def main(argv: list[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", Plan(calls=50, repeat=3), Plan(), argv)
    rows = []
    for stream in (False, True):
        reply = azure_stream_reply(ANSWER, chunk_size=2) if stream else azure_reply(ANSWER)
        with serve_azure_openai(lambda _, reply=reply: reply) as server:
            ours, sdk = anyio.run(measure, server.base_url, plan, stream, backend="asyncio")
        rows.append(
            {
                "mode": "streamed" if stream else "whole",
                "calls": plan.calls,
                "reactcore_ms": round(ours * 1000, 3),
                "sdk_ms": round(sdk * 1000, 3),
                "sdk_over_reactcore": round(sdk / ours, 2),
            }
        )
    print(f"{'mode':>9} {'calls':>6} {'reactcore ms':>13} {'SDK ms':>8} {'SDK/reactcore':>14}")
    for row in rows:
        print(
            f"{row['mode']:>9} {row['calls']:>6} {row['reactcore_ms']:>13.3f}"
            f" {row['sdk_ms']:>8.3f} {row['sdk_over_reactcore']:>14.2f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
