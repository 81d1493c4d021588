"""What the streamed-parse benchmarks against an official SDK share: the plan, a transport
answering with one pre-built body, the alternating measurement and its table."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx
from _common import parse

from reactcore import ChatModel, ChunkAssembler, ModelRequest, UserMessage


@attrs.frozen
class Plan:
    events: int = 10_000
    repeat: int = 5


def transport(body: bytes, http: Any = httpx) -> Any:
    """A transport answering every request with ``body`` as an event stream (``http``:
    httpx, or the httpx fork an SDK uses, ``httpx2``)."""

    def answer(request: Any) -> Any:
        return http.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return http.MockTransport(answer)


async def assembled_in(model: ChatModel, calls: int) -> float:
    """Seconds ``model`` takes to stream its answer into a ``ChunkAssembler`` (the agent
    loop's path); the answer must have ``calls`` tool calls."""
    start = time.perf_counter()
    assembler = ChunkAssembler()
    async with model.stream(ModelRequest([UserMessage("hi")])) as chunks:
        async for chunk in chunks:
            assembler.add(chunk)
    assert len(assembler.result().message.tool_calls) == calls
    return time.perf_counter() - start


Reader = Callable[[bytes], Awaitable[float]]
"""Reads one streamed answer from the body; the seconds it took."""


async def measure(
    plan: Plan, stream_body: Callable[[int], tuple[bytes, int]], ours: Reader, theirs: Reader
) -> dict[str, Any]:
    """Both readers, warmed up once, then ``plan.repeat`` times each, alternating: the
    medians and the ratio SDK / reactcore."""
    body, count = stream_body(plan.events)
    times: tuple[list[float], list[float]] = ([], [])
    await ours(body)
    await theirs(body)
    for _ in range(plan.repeat):
        times[0].append(await ours(body))
        times[1].append(await theirs(body))
    reactcore_s, sdk_s = statistics.median(times[0]), statistics.median(times[1])
    return {
        "events": count,
        "bytes": len(body),
        "reactcore_ms": round(reactcore_s * 1000, 2),
        "sdk_ms": round(sdk_s * 1000, 2),
        "sdk_over_reactcore": round(sdk_s / reactcore_s, 2),
    }


def main(
    doc: str,
    stream_body: Callable[[int], tuple[bytes, int]],
    ours: Reader,
    theirs: Reader,
    argv: Sequence[str] | None = None,
) -> None:
    """The script: its options, the measurement on asyncio (the SDKs' backend), the table."""
    args, plan = parse(doc, Plan(events=2_000, repeat=3), Plan(), argv)
    row = anyio.run(measure, plan, stream_body, ours, theirs, backend="asyncio")
    print(f"{'events':>8} {'bytes':>9} {'reactcore ms':>13} {'SDK ms':>8} {'SDK/reactcore':>14}")
    print(
        f"{row['events']:>8} {row['bytes']:>9} {row['reactcore_ms']:>13.2f} {row['sdk_ms']:>8.2f}"
        f" {row['sdk_over_reactcore']:>14.2f}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps([row], indent=2), encoding="utf-8")
