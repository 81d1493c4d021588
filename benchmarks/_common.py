"""What the benchmark scripts share: their options, quiet logs, a settled heap, and one
way to measure cases against a baseline."""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import attrs
import httpx
import structlog

from reactcore import ChatModel, ChunkAssembler, ModelRequest, ModelResponse, UserMessage

Plan = TypeVar("Plan")
Run = Callable[[], Awaitable[None]]
Prepare = Callable[[], Run]  # builds, outside the timing, one run to time


def parse(doc: str, quick: Any, full: Any, argv: Sequence[str] | None) -> tuple[Any, Any]:
    """The script's options (``--quick``, ``--backend``, ``--repeat``, ``--json``) and the
    plan they select; then logs are quietened and the heap frozen, ready to measure."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 repeats")
    parser.add_argument("--backend", choices=("asyncio", "trio", "both"), default="both")
    parser.add_argument("--repeat", type=int, help="repeats per measurement (default 5; 3 quick)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    plan = quick if args.quick else full
    if args.repeat is not None:
        plan = attrs.evolve(plan, repeat=args.repeat)
    # The library only gets loggers; a script may configure them: errors only.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        cache_logger_on_first_use=True,
    )
    gc.collect()
    gc.freeze()  # what is loaded by now stays: the collections between measurements are quick
    return args, plan


def backends(args: Any) -> tuple[str, ...]:
    """The backends the options ask for."""
    return ("asyncio", "trio") if args.backend == "both" else (args.backend,)


def fmt(value: float | None, spec: str) -> str:
    """``value`` formatted for a table, ``-`` where there is none."""
    return "-" if value is None else format(value, spec)


@attrs.frozen
class Case:
    """One thing to time: ``n`` operations per run, compared with the case ``baseline``."""

    name: str
    n: int
    prepare: Prepare
    baseline: str | None = None


@attrs.frozen
class Row:
    section: str
    backend: str
    case: str
    n: int
    median_s: float
    baseline: str | None = None
    ratio: float | None = None

    @property
    def us_per_op(self) -> float:
        return self.median_s / self.n * 1e6

    @property
    def ops_per_s(self) -> float:
        return self.n / self.median_s


async def _time(prepare: Prepare) -> float:
    run = prepare()
    gc.collect()
    start = time.perf_counter()
    await run()
    return time.perf_counter() - start


async def measure(section: str, backend: str, cases: Sequence[Case], repeat: int) -> list[Row]:
    """Medians of every case, after one warm-up run each; repeats interleaved, so drift
    hits every case alike."""
    for case in cases:
        await _time(case.prepare)
    samples: dict[str, list[float]] = {case.name: [] for case in cases}
    for _ in range(repeat):
        for case in cases:
            samples[case.name].append(await _time(case.prepare))
    medians = {name: statistics.median(s) for name, s in samples.items()}
    return [
        Row(
            section,
            backend,
            case.name,
            case.n,
            medians[case.name],
            case.baseline,
            medians[case.name] / medians[case.baseline] if case.baseline else None,
        )
        for case in cases
    ]


def sse_transport(body: bytes, http: Any) -> Any:
    """A transport answering every request with the event-stream ``body`` (``http``:
    httpx, or the httpx fork the official SDKs use, ``httpx2``)."""

    def answer(request: Any) -> Any:
        return http.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return http.MockTransport(answer)


async def alternate(
    sides: Sequence[Callable[[bytes], Awaitable[float]]], body: bytes, repeat: int
) -> list[float]:
    """The median seconds of each side reading ``body``: each warmed up once, then run
    ``repeat`` times, in turn, so that the machine's load falls on every side alike."""
    for side in sides:
        await side(body)
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(repeat):
        for side, found in zip(sides, times, strict=True):
            found.append(await side(body))
    return [statistics.median(found) for found in times]


async def reactcore_stream(
    body: bytes, model: Callable[[httpx.AsyncClient], ChatModel]
) -> tuple[float, ModelResponse]:
    """The seconds ``model`` (made on a client answering with ``body``) takes to stream
    the answer into a ``ChunkAssembler`` (the agent loop's path), and the answer."""
    async with httpx.AsyncClient(transport=sse_transport(body, httpx)) as client:
        chat_model = model(client)
        start = time.perf_counter()
        assembler = ChunkAssembler()
        async with chat_model.stream(ModelRequest([UserMessage("hi")])) as chunks:
            async for chunk in chunks:
                assembler.add(chunk)
        seconds = time.perf_counter() - start
    return seconds, assembler.result()


@attrs.frozen
class StreamPlan:
    events: int = 10_000
    repeat: int = 5


def against_the_sdk(
    doc: str,
    stream_body: Callable[[int], tuple[bytes, int]],
    ours: Callable[[bytes], Awaitable[float]],
    sdk: Callable[[bytes], Awaitable[float]],
    argv: Sequence[str] | None = None,
) -> None:
    """A streamed-parse script: reactcore's reading (``ours``) against an official SDK's
    (``sdk``) of one body of ``stream_body(events)``, alternating on asyncio (the SDKs'
    backend); prints the medians and the ratio SDK / reactcore (``--json``: the row)."""
    args, plan = parse(doc, StreamPlan(events=2_000, repeat=3), StreamPlan(), argv)
    body, count = stream_body(plan.events)
    reactcore_s, sdk_s = anyio.run(alternate, [ours, sdk], body, plan.repeat, backend="asyncio")
    row = {
        "events": count,
        "bytes": len(body),
        "reactcore_ms": round(reactcore_s * 1000, 2),
        "sdk_ms": round(sdk_s * 1000, 2),
        "sdk_over_reactcore": round(sdk_s / reactcore_s, 2),
    }
    print(f"{'events':>8} {'bytes':>9} {'reactcore ms':>13} {'SDK ms':>8} {'SDK/reactcore':>14}")
    print(
        f"{row['events']:>8} {row['bytes']:>9} {row['reactcore_ms']:>13.2f} {row['sdk_ms']:>8.2f}"
        f" {row['sdk_over_reactcore']:>14.2f}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps([row], indent=2), encoding="utf-8")


# --- per-call overhead against an official SDK, on a loopback server -----------------------

Side = Callable[[], Awaitable[None]]


@attrs.frozen
class CallPlan:
    calls: int = 200
    repeat: int = 5


async def per_call(side: Side, calls: int) -> float:
    """The mean seconds of one of ``calls`` calls of ``side``, one after the other."""
    start = time.perf_counter()
    for _ in range(calls):
        await side()
    return (time.perf_counter() - start) / calls


async def per_call_medians(sides: Sequence[Side], plan: CallPlan) -> list[float]:
    """The median seconds per call of each side: each warmed up (connections, imports,
    caches), then ``plan.repeat`` runs of ``plan.calls`` calls, the sides in turn, so that
    the machine's load falls on every side alike."""
    for side in sides:
        await per_call(side, 5)
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(plan.repeat):
        for side, found in zip(sides, times, strict=True):
            found.append(await per_call(side, plan.calls))
    return [statistics.median(found) for found in times]


def model_side(model: ChatModel, request: ModelRequest, stream: bool) -> Side:
    """One call of reactcore's ``model``: whole, or streamed into a ``ChunkAssembler`` (the
    agent loop's path)."""

    async def side() -> None:
        if not stream:
            await model.call(request)
            return
        assembler = ChunkAssembler()
        async with model.stream(request) as chunks:
            async for chunk in chunks:
                assembler.add(chunk)
        assembler.result()

    return side


def per_call_row(mode: str, calls: int, ours: float, sdk: float) -> dict[str, Any]:
    """A table row: reactcore's and the SDK's milliseconds per call, and SDK / reactcore."""
    return {
        "mode": mode,
        "calls": calls,
        "reactcore_ms": round(ours * 1000, 3),
        "sdk_ms": round(sdk * 1000, 3),
        "sdk_over_reactcore": round(sdk / ours, 2),
    }


def print_per_call(rows: Sequence[dict[str, Any]], json_path: str | None) -> None:
    """The rows as a table (``--json``: also written to ``json_path``)."""
    width = max(9, *(len(row["mode"]) for row in rows))
    print(
        f"{'mode':>{width}} {'calls':>6} {'reactcore ms':>13} {'SDK ms':>8} {'SDK/reactcore':>14}"
    )
    for row in rows:
        print(
            f"{row['mode']:>{width}} {row['calls']:>6} {row['reactcore_ms']:>13.3f}"
            f" {row['sdk_ms']:>8.3f} {row['sdk_over_reactcore']:>14.2f}"
        )
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=2), encoding="utf-8")


def per_call_script(
    doc: str,
    serve: Callable[[Any], AbstractContextManager[Any]],
    reply: Callable[[bool], Any],
    measure: Callable[[str, CallPlan, bool], Awaitable[tuple[float, float]]],
    argv: Sequence[str] | None = None,
) -> None:
    """A per-call script against one SDK: for whole then streamed answers, a loopback
    server (``serve``) answering every request with ``reply(stream)``, and ``measure``'s
    medians (reactcore's, the SDK's) on asyncio; prints the table (``--json``: the rows)."""
    args, plan = parse(doc, CallPlan(calls=50, repeat=3), CallPlan(), argv)
    rows = []
    for stream in (False, True):
        answer = reply(stream)
        with serve(lambda _, answer=answer: answer) as server:
            ours, sdk = anyio.run(measure, server.base_url, plan, stream, backend="asyncio")
        rows.append(per_call_row("streamed" if stream else "whole", plan.calls, ours, sdk))
    print_per_call(rows, args.json)
