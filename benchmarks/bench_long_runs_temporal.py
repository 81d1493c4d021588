"""Benchmark: long runs in Temporal — N turns of one tool call returning 10 KB each.

For each N: does the run complete, how many runs its chain has (continue-as-new), the
largest history of the chain (events and bytes), the largest payload of any event, and
the milliseconds per turn over the first 10 and the last 10 turns (read from the
history's event times: from one model call's scheduling to the next).

Modes: ``inline`` — the agent without a payload store (every payload inline: the only
mode before the store existed, so running this script against an older checkout
measures the before); ``store`` — ``TemporalAgent(store=FileStore(dir))``. One dev
server on SQLite and one worker in this process.

    python benchmarks/bench_long_runs_temporal.py [--quick] [--json PATH] [--sizes 100,400]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from _common import fmt
from bench_temporal import RequestModel
from temporalio.api.enums.v1 import EventType

from reactcore import (
    AssistantMessage,
    ModelRequest,
    ReactAgent,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from reactcore.temporal import TemporalAgent, worker
from reactcore.temporal.testing import DevServer, history_chain

RESULT_BYTES = 10_240
FULL = (100, 400, 1000)
QUICK = (100,)


@tool
async def blob(turn: int) -> str:
    """10 KB of text for ``turn``."""
    return (f"<{turn}>" + "abcdefghijklmnopqrstuvwxyz" * 400)[:RESULT_BYTES]


def long_model(turns: int) -> RequestModel:
    """One ``blob`` call a turn for ``turns`` turns, then the number of results it saw
    whole."""

    def answer(request: ModelRequest) -> AssistantMessage:
        turn = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if turn < turns:
            return AssistantMessage("", [ToolCall(f"c{turn}", "blob", f'{{"turn": {turn}}}')])
        whole = sum(
            len(r.response_data) == RESULT_BYTES
            for m in request.messages
            if isinstance(m, ToolResponseMessage)
            for r in m.responses
        )
        return AssistantMessage(f"whole={whole}")

    return RequestModel(answer)


def has_store() -> bool:
    """Whether this checkout's ``TemporalAgent`` takes a payload store."""
    return "store" in attrs.fields_dict(TemporalAgent)


def payload_sizes(event: Any) -> list[int]:
    """The sizes of the payloads an event carries (inputs, results)."""
    which = event.WhichOneof("attributes")
    attributes = getattr(event, which) if which else None
    sizes = []
    for name in ("input", "result"):
        fields = attributes.DESCRIPTOR.fields_by_name if attributes is not None else {}
        if name in fields and attributes.HasField(name):
            sizes.extend(p.ByteSize() for p in getattr(attributes, name).payloads)
    return sizes


def turn_ms(histories: Sequence[Any]) -> list[float]:
    """Milliseconds from each model call's scheduling to the next, over the chain."""
    stamps = []
    for history in histories:
        names: dict[int, str] = {}
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                attributes = event.activity_task_scheduled_event_attributes
                names[event.event_id] = attributes.activity_type.name
                if attributes.activity_type.name == "reactcore.model":
                    stamps.append(event.event_time.ToMilliseconds())
    return [b - a for a, b in itertools.pairwise(stamps)]


async def measure(sizes: Sequence[int], modes: Sequence[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, DevServer(str(Path(tmp) / "db")) as server:
        client = await server.connect()
        for mode in modes:
            for turns in sizes:
                agent = ReactAgent(
                    f"long-{mode}-{turns}", long_model(turns), tools=[blob], max_iterations=None
                )
                options: dict[str, Any] = {}
                if mode == "store":
                    from reactcore.temporal import FileStore

                    options["store"] = FileStore(Path(tmp) / "store")
                durable = TemporalAgent(agent, task_queue=f"long-{uuid.uuid4().hex[:6]}", **options)
                thread = f"long-{uuid.uuid4().hex[:10]}"
                async with worker(client, [durable]):
                    start = time.perf_counter()
                    run = await durable.start(client, "go", thread_id=thread)
                    try:
                        result = await run.result(poll=0.2)
                        outcome = result.text
                    except Exception as exc:  # the run failed or was terminated: reported
                        outcome = f"{type(exc).__name__}: {getattr(exc, 'cause', exc)}"[:120]
                    seconds = time.perf_counter() - start
                first = run.handle.first_execution_run_id or run.handle.run_id
                histories = await history_chain(client, thread, first)
                per_turn = turn_ms(histories)
                rows.append(
                    {
                        "mode": mode,
                        "turns": turns,
                        "completed": outcome == f"whole={turns}",
                        "outcome": outcome,
                        "turns_done": len(per_turn) + 1,
                        "runs": len(histories),
                        "max_events": max(len(h.events) for h in histories),
                        "max_history_mb": max(
                            sum(e.ByteSize() for e in h.events) for h in histories
                        )
                        / 2**20,
                        "largest_payload_kb": max(
                            s for h in histories for e in h.events for s in payload_sizes(e)
                        )
                        / 1024,
                        "ms_per_turn_first10": statistics.median(per_turn[:10]),
                        "ms_per_turn_last10": statistics.median(per_turn[-10:]),
                        "seconds": seconds,
                    }
                )
                print_rows(rows[-1:], header=len(rows) == 1)
    return rows


def print_rows(rows: Sequence[dict[str, Any]], *, header: bool = True) -> None:
    if header:
        print(
            f"{'mode':<7} {'N':>5} {'done':>5} {'turns':>6} {'runs':>5} {'events':>7} "
            f"{'hist MB':>8} {'max KB':>8} {'ms/turn first10':>16} {'last10':>8}  outcome"
        )
    for row in rows:
        print(
            f"{row['mode']:<7} {row['turns']:>5} {row['completed']!s:>5} "
            f"{row['turns_done']:>6} {row['runs']:>5} {row['max_events']:>7} "
            f"{fmt(row['max_history_mb'], '8.2f')} {fmt(row['largest_payload_kb'], '8.1f')} "
            f"{fmt(row['ms_per_turn_first10'], '16.1f')} {fmt(row['ms_per_turn_last10'], '8.1f')}"
            f"  {row['outcome']}",
            flush=True,
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 100 only")
    parser.add_argument("--sizes", help="comma-separated N (default 100,400,1000)")
    parser.add_argument("--modes", help="inline,store (default: both, where available)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes.split(",")] if args.sizes else QUICK if args.quick else FULL
    modes = (
        args.modes.split(",") if args.modes else ["inline", "store"] if has_store() else ["inline"]
    )
    rows = asyncio.run(measure(sizes, modes))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
