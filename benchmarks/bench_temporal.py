"""Benchmark: what running a ``ReactAgent`` as a Temporal workflow costs, against the same
agent in process, measured side by side in the same run.

A local dev server (``temporal server start-dev``, SQLite in a temp dir) and one worker
in this process (same event loop as the client: a lower bound of what a network hop to
a remote worker adds).

Sections: ``loop`` — T turns of one model call asking for one no-op async tool call,
then an answer: ms per iteration (a model activity and a tool activity, each a round
trip through the server and a workflow task); ``batch`` — one turn with a parallel batch
of N no-op calls (max_parallel_tools=N): ms for the whole batch and per call.

Columns: median wall time over the repeats (after one warm-up run), ms per operation, and
the ratio Temporal / in process.

    python benchmarks/bench_temporal.py [--quick] [--repeat R] [--json PATH]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
from _common import fmt, parse

from reactcore import (
    AssistantMessage,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ReactAgent,
    ToolCall,
    tool,
)
from reactcore.temporal import TemporalAgent, worker
from reactcore.temporal.testing import DevServer
from reactcore.testing import message_chunks


@attrs.frozen
class Plan:
    turns: int
    calls: int
    repeat: int


FULL = Plan(turns=20, calls=20, repeat=5)
QUICK = Plan(turns=5, calls=20, repeat=3)


@tool
async def noop(i: int) -> int:
    """Give ``i`` back."""
    return i


@attrs.frozen
class RequestModel:
    """A chat model answering ``answer(request)``: from the request alone, so any worker
    gives the same answer."""

    answer: Callable[[ModelRequest], AssistantMessage]

    async def call(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(self.answer(request))

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelChunk]]:
        chunks = message_chunks(self.answer(request))

        async def produce() -> AsyncIterator[ModelChunk]:
            for chunk in chunks:
                yield chunk

        yield produce()


def turn_model(turns: int, per_turn: int) -> RequestModel:
    """Asks for ``per_turn`` calls a turn for ``turns`` turns, then answers."""

    def answer(request: ModelRequest) -> AssistantMessage:
        turn = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if turn >= turns:
            return AssistantMessage("done")
        calls = [ToolCall(f"c{turn}-{i}", "noop", f'{{"i": {i}}}') for i in range(per_turn)]
        return AssistantMessage("", calls)

    return RequestModel(answer)


async def median_seconds(run: Callable[[], Awaitable[object]], repeat: int) -> float:
    await run()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def measure(plan: Plan) -> list[dict[str, object]]:
    loop_agent = ReactAgent("bench-loop", turn_model(plan.turns, 1), tools=[noop])
    batch_agent = ReactAgent(
        "bench-batch",
        turn_model(1, plan.calls),
        tools=[noop],
        parallel_tool_execution=True,
        max_parallel_tools=plan.calls,
    )
    queue = f"bench-{uuid.uuid4().hex[:6]}"
    durable = {a.name: TemporalAgent(a, task_queue=queue) for a in (loop_agent, batch_agent)}
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp, DevServer(str(Path(tmp) / "db")) as server:
        client = await server.connect()
        async with worker(client, list(durable.values())):
            cases = [
                ("loop", loop_agent, plan.turns, "iteration"),
                ("batch", batch_agent, plan.calls, "call"),
            ]
            for section, agent, ops, unit in cases:
                durable_agent = durable[agent.name]

                async def local(agent: ReactAgent = agent) -> object:
                    return await agent.invoke("go")

                async def remote(durable_agent: TemporalAgent = durable_agent) -> object:
                    thread = f"bench-{uuid.uuid4().hex[:10]}"
                    return await durable_agent.invoke(client, "go", thread_id=thread)

                base = await median_seconds(local, plan.repeat)
                over = await median_seconds(remote, plan.repeat)
                for mode, seconds in (("in process", base), ("Temporal", over)):
                    rows.append(
                        {
                            "section": section,
                            "mode": mode,
                            "ops": ops,
                            "unit": unit,
                            "seconds": seconds,
                            "ms_per_op": seconds * 1000 / ops,
                            "ratio": seconds / base,
                        }
                    )
    return rows


def print_rows(rows: Sequence[dict[str, object]]) -> None:
    print(f"{'section':<8} {'mode':<11} {'ops':>4} {'total ms':>10} {'ms/op':>9} {'ratio':>8}")
    for row in rows:
        total = float(row["seconds"]) * 1000  # type: ignore[arg-type]
        print(
            f"{row['section']!s:<8} {row['mode']!s:<11} {row['ops']!s:>4} "
            f"{fmt(total, '10.2f')} {fmt(float(row['ms_per_op']), '9.3f')} "  # type: ignore[arg-type]
            f"{fmt(float(row['ratio']), '8.1f')}"  # type: ignore[arg-type]
        )


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    rows = asyncio.run(measure(plan))
    print_rows(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
