"""Benchmark: long conversations — what a thread of N turns costs each saver to store, to
extend by one more turn, and to read back, as N grows.

A scripted agent runs N turns on one thread. Each turn: a user message, the model asks
for tool calls, each returns 10 KB of text, the model answers. ``sequential``: one call
per turn; ``parallel``: a batch of 5 calls per turn (a checkpoint after each finished
call). Columns, per saver (``MemorySaver``, ``SqliteSaver`` on a temporary file,
``PostgresSaver`` on a fresh schema at ``REACTCORE_PG_DSN``, skipped with a note when no
server answers):

- ``stored``: what the saver holds for the thread after N turns (its own count:
  ``statistics().stored_bytes``; a saver without ``statistics()`` is measured from its
  rows, or, for ``MemorySaver``, as the ``dump_checkpoint`` text of what it holds);
- ``first 10`` / ``last 10``: the median wall time of a turn among the first ten and the
  last ten turns (model and tools are instant: this is the checkpoints' cost);
- ``get``: reading the latest checkpoint back, as a run resuming the thread does (a new
  saver on the same file or schema; the median of 3);
- ``exponent``: the growth of ``stored`` with N, fitted over the sizes (1: linear; 2: the
  whole history written again at every checkpoint).

    python benchmarks/bench_long_runs.py [--quick] [--backend asyncio|trio|both]
                                         [--sizes 25,100,400] [--parallel-sizes 25,100,400]
                                         [--savers memory,sqlite,postgres] [--json PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs
from _common import backends, fmt, parse
from bench_savers import DSN, postgres_available

from reactcore import (
    AssistantMessage,
    MemorySaver,
    ModelRequest,
    ReactAgent,
    RunnableConfig,
    SqliteSaver,
    ToolCall,
    UserMessage,
    dump_checkpoint,
    tool,
)
from reactcore.testing import ScriptedChatModel

RESULT_BYTES = 10 * 1024
BATCH = 5


@attrs.frozen
class Plan:
    sizes: tuple[int, ...]
    parallel_sizes: tuple[int, ...]
    repeat: int = 1


QUICK = Plan(sizes=(10, 25), parallel_sizes=(10,))
FULL = Plan(sizes=(25, 100, 400), parallel_sizes=(25, 100, 400))


@attrs.frozen
class Row:
    backend: str
    saver: str
    shape: str
    turns: int
    stored_bytes: int
    first_ms: float
    last_ms: float
    get_ms: float
    exponent: float | None = None


# --- the agent --------------------------------------------------------------------------


def result_text(key: str) -> str:
    """10 KB of text that differs for every call (nothing to deduplicate by accident)."""
    block = hashlib.sha256(key.encode()).hexdigest()
    return (block * (RESULT_BYTES // len(block) + 1))[:RESULT_BYTES]


@tool
async def fetch(key: str) -> str:
    """Fetch 10 KB for ``key``."""
    return result_text(key)


def script(calls: int) -> Callable[[ModelRequest], AssistantMessage]:
    def reply(request: ModelRequest) -> AssistantMessage:
        last = request.messages[-1]
        if isinstance(last, UserMessage):
            asks = [
                ToolCall(f"{last.text}-c{n}", "fetch", json.dumps({"key": f"{last.text}-{n}"}))
                for n in range(calls)
            ]
            return AssistantMessage("", asks)
        return AssistantMessage(f"Done with {len(request.messages)} messages.")

    return reply


# --- savers -----------------------------------------------------------------------------


@attrs.frozen
class Store:
    """Where a saver of ``kind`` keeps its data, and how to open one more saver on it."""

    kind: str
    where: str

    @asynccontextmanager
    async def open(self, shared: Any = None) -> AsyncIterator[Any]:
        if self.kind == "memory":
            yield shared
        elif self.kind == "sqlite":
            async with SqliteSaver(self.where) as saver:
                yield saver
        else:
            from reactcore.postgres import PostgresSaver

            async with PostgresSaver(DSN, schema=self.where) as saver:
                yield saver


@asynccontextmanager
async def fresh_store(kind: str) -> AsyncIterator[Store]:
    if kind == "memory":
        yield Store(kind, "")
    elif kind == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield Store(kind, str(Path(folder) / "long.db"))
    else:
        import psycopg

        schema = f"rc_bench_{uuid.uuid4().hex[:8]}"
        try:
            yield Store(kind, schema)
        finally:
            with psycopg.connect(DSN, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def stored_bytes(store: Store, saver: Any, thread_id: str) -> int:
    """What ``saver`` holds for ``thread_id``: its own count when it keeps one, else
    measured from the rows (or the checkpoints) of the layout before incremental ones."""
    count = getattr(saver, "statistics", None)
    if count is not None:
        return int((await count(thread_id)).stored_bytes)
    if store.kind == "memory":
        return sum(len(dump_checkpoint(c)) for c in await saver.list(thread_id))
    if store.kind == "sqlite":
        import sqlite3

        with sqlite3.connect(store.where) as conn:
            query = "SELECT sum(length(body)) FROM checkpoints WHERE thread_id = ?"
            return int(conn.execute(query, (thread_id,)).fetchone()[0])
    import psycopg

    with psycopg.connect(DSN) as pconn:
        table = f'"{store.where}".checkpoints'
        query = f"SELECT sum(octet_length(body)) FROM {table} WHERE thread_id = %s"
        row = pconn.execute(query, (thread_id,)).fetchone()
        assert row is not None
        return int(row[0])


# --- running ----------------------------------------------------------------------------


async def one_thread(backend: str, kind: str, shape: str, turns: int) -> Row:
    calls = 1 if shape == "sequential" else BATCH
    async with fresh_store(kind) as store:
        memory = MemorySaver() if kind == "memory" else None
        async with store.open(memory) as saver:
            agent = ReactAgent(
                "long",
                ScriptedChatModel([script(calls)] * (2 * turns)),
                tools=[fetch],
                parallel_tool_execution=calls > 1,
                saver=saver,
            )
            config = RunnableConfig(thread_id="long")
            times = []
            for turn in range(turns):
                started = time.perf_counter()
                await agent.invoke(f"t{turn}", config)
                times.append(time.perf_counter() - started)
            size = await stored_bytes(store, saver, "long")
        gets = []
        for _ in range(3):
            async with store.open(memory) as reader:
                started = time.perf_counter()
                latest = await reader.get("long")
                gets.append(time.perf_counter() - started)
            assert latest is not None and len(latest.state["messages"]) == turns * 4
    return Row(
        backend,
        kind,
        shape,
        turns,
        size,
        statistics.median(times[:10]) * 1e3,
        statistics.median(times[-10:]) * 1e3,
        statistics.median(gets) * 1e3,
    )


def exponent(points: Sequence[tuple[int, int]]) -> float | None:
    """The least-squares slope of log(bytes) over log(turns)."""
    if len(points) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(b) for _, b in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


async def measure(backend: str, plan: Plan, kinds: Sequence[str]) -> list[Row]:
    rows: list[Row] = []
    for kind in kinds:
        for shape, sizes in (("sequential", plan.sizes), ("parallel", plan.parallel_sizes)):
            these = []
            for turns in sizes:
                row = await one_thread(backend, kind, shape, turns)
                these.append(row)
                print(f"  {backend} {kind} {shape} N={turns}: {row.stored_bytes:,} B", flush=True)
            fitted = exponent([(r.turns, r.stored_bytes) for r in these])
            rows += [attrs.evolve(r, exponent=fitted) for r in these]
    return rows


def print_table(rows: Sequence[Row]) -> None:
    head = (
        f"{'backend':<8} {'saver':<9} {'shape':<10} {'N':>4} {'stored':>15} "
        f"{'first 10 ms':>11} {'last 10 ms':>10} {'get ms':>8} {'exponent':>8}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.backend:<8} {r.saver:<9} {r.shape:<10} {r.turns:>4} {r.stored_bytes:>15,} "
            f"{r.first_ms:>11.2f} {r.last_ms:>10.2f} {r.get_ms:>8.2f} "
            f"{fmt(r.exponent, '.2f'):>8}"
        )


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split(",") if n)


def main(argv: Sequence[str] | None = None) -> None:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--sizes", type=_sizes)
    extra.add_argument("--parallel-sizes", type=_sizes)
    extra.add_argument("--savers", default="memory,sqlite,postgres")
    known, rest = extra.parse_known_args(sys.argv[1:] if argv is None else argv)
    args, plan = parse(__doc__ or "", QUICK, FULL, rest)
    if known.sizes is not None:
        plan = attrs.evolve(plan, sizes=known.sizes)
    if known.parallel_sizes is not None:
        plan = attrs.evolve(plan, parallel_sizes=known.parallel_sizes)
    kinds = known.savers.split(",")
    if "postgres" in kinds and (missing := postgres_available()) is not None:
        print(f"PostgreSQL skipped: {missing}\n")
        kinds.remove("postgres")
    rows: list[Row] = []
    for backend in backends(args):
        rows += anyio.run(measure, backend, plan, kinds, backend=backend)
    print(f"\n{RESULT_BYTES // 1024} KB per tool result; parallel: {BATCH} calls per turn\n")
    print_table(rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"plan": attrs.asdict(plan), "rows": [attrs.asdict(r) for r in rows]}, f)


if __name__ == "__main__":
    main()
