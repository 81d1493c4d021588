"""Benchmark: the savers — checkpoint ``put`` latency and agent runs per second, with 1,
10 and 100 concurrent writers or runs; SQLite and PostgreSQL, beside ``MemorySaver`` (the
baseline, measured in the same run).

- ``put``: C writers, each on its own thread, put checkpoints in turn (a state of 12
  messages, about 2 kB of JSON) until P puts are done. Columns: latency per put (median
  and 95th percentile over every put), puts per second over the whole section.
- ``runs``: R agent runs, C at a time, each on its own thread: a ``ScriptedChatModel``
  asks for two parallel no-op tool calls, then answers (4 model/tool steps, 5
  checkpoints, a thread claimed and released). Runs per second; ×base is the time
  relative to ``MemorySaver``.

SQLite: a file in a temporary folder (WAL). PostgreSQL: the server at
``REACTCORE_PG_DSN`` (default ``postgresql://postgres@127.0.0.1:5432/test``), a fresh
schema dropped afterwards, a pool of 10 connections; skipped with a note when no server
answers. Each figure is the median over the repeats.

    python benchmarks/bench_savers.py [--quick] [--backend asyncio|trio|both]
                                      [--repeat R] [--json PATH]
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs
from _common import backends, fmt, parse

from reactcore import (
    AssistantMessage,
    Checkpoint,
    MemorySaver,
    ModelRequest,
    OverAllState,
    ReactAgent,
    RunnableConfig,
    SqliteSaver,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from reactcore.testing import ScriptedChatModel

DSN = os.environ.get("REACTCORE_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
CONCURRENCY = (1, 10, 100)


@attrs.frozen
class Plan:
    puts: int
    runs: int
    repeat: int


QUICK = Plan(puts=200, runs=50, repeat=1)
FULL = Plan(puts=1000, runs=200, repeat=3)


@attrs.frozen
class Row:
    section: str
    backend: str
    saver: str
    concurrency: int
    n: int
    seconds: float
    p50_ms: float | None = None
    p95_ms: float | None = None
    ratio: float | None = None

    @property
    def per_s(self) -> float:
        return self.n / self.seconds


# --- savers -----------------------------------------------------------------------------


def postgres_available() -> str | None:
    """``None`` when a server answers at ``DSN``, else why not."""
    try:
        import psycopg

        with psycopg.connect(DSN, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


@asynccontextmanager
async def open_saver(kind: str) -> AsyncIterator[Any]:
    """A fresh saver of ``kind`` (its file or schema removed afterwards)."""
    if kind == "memory":
        yield MemorySaver()
    elif kind == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            async with SqliteSaver(Path(folder) / "bench.db") as saver:
                yield saver
    else:
        import psycopg

        from reactcore.postgres import PostgresSaver

        schema = f"rc_bench_{uuid.uuid4().hex[:8]}"
        try:
            async with PostgresSaver(DSN, schema=schema, max_connections=10) as saver:
                yield saver
        finally:
            with psycopg.connect(DSN, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# --- put --------------------------------------------------------------------------------


def sample_checkpoint(thread_id: str, step: int) -> Checkpoint:
    messages: list[Any] = [UserMessage("Plan a weekend in Lisbon, with two museums.")]
    for i in range(5):
        call = ToolCall(f"c{i}", "search", json.dumps({"query": f"Lisbon museum {i}"}))
        messages.append(AssistantMessage("", [call]))
        messages.append(ToolResponseMessage([ToolResponse(f"c{i}", "search", "x" * 200)]))
    messages.append(AssistantMessage("Here is a plan: " + "y" * 300))
    state = OverAllState({"messages": messages})
    return Checkpoint(thread_id, state, "model", step, "bench", created_at=time.time())


async def put_section(saver: Any, concurrency: int, total: int) -> tuple[float, list[float]]:
    """Wall time and each put's latency, ``concurrency`` writers sharing ``total`` puts."""
    latencies: list[float] = []
    each = max(1, total // concurrency)

    async def writer(w: int) -> None:
        thread_id = f"w{w}-{uuid.uuid4().hex[:6]}"
        for step in range(each):
            checkpoint = sample_checkpoint(thread_id, step)
            started = time.perf_counter()
            await saver.put(thread_id, checkpoint)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for w in range(concurrency):
            tg.start_soon(writer, w)
    return time.perf_counter() - started, latencies


# --- runs -------------------------------------------------------------------------------


@tool
async def noop(n: int) -> str:
    """Do nothing."""
    return f"ok {n}"


def reply(request: ModelRequest) -> AssistantMessage:
    if isinstance(request.messages[-1], UserMessage):
        calls = [ToolCall(f"c{n}", "noop", json.dumps({"n": n})) for n in range(2)]
        return AssistantMessage("", calls)
    return AssistantMessage("done")


async def runs_section(saver: Any, concurrency: int, total: int) -> float:
    """Wall time of ``total`` runs, ``concurrency`` at a time, each on its own thread."""
    agent = ReactAgent(
        "bench",
        ScriptedChatModel([reply] * (2 * total + 2)),
        tools=[noop],
        parallel_tool_execution=True,
        max_parallel_tools=max(5, 2 * concurrency),
        saver=saver,
    )
    limiter = anyio.CapacityLimiter(concurrency)
    prefix = uuid.uuid4().hex[:6]

    async def one(i: int) -> None:
        async with limiter:
            await agent.invoke("go", RunnableConfig(thread_id=f"{prefix}-{i}"))

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(total):
            tg.start_soon(one, i)
    return time.perf_counter() - started


# --- running ----------------------------------------------------------------------------


async def measure(backend: str, plan: Plan, kinds: Sequence[str]) -> list[Row]:
    rows: list[Row] = []
    for concurrency in CONCURRENCY:
        for kind in kinds:
            times, latencies = [], []
            async with open_saver(kind) as saver:
                await put_section(saver, 1, 5)  # warm up: connections, schema
                for _ in range(plan.repeat):
                    seconds, each = await put_section(saver, concurrency, plan.puts)
                    times.append(seconds)
                    latencies += each
            cuts = statistics.quantiles(latencies, n=20)
            n = len(latencies) // plan.repeat
            rows.append(
                Row(
                    "put",
                    backend,
                    kind,
                    concurrency,
                    n,
                    statistics.median(times),
                    statistics.median(latencies) * 1e3,
                    cuts[18] * 1e3,
                )
            )
        base: float | None = None
        for kind in kinds:
            async with open_saver(kind) as saver:
                await runs_section(saver, 1, 2)
                seconds = statistics.median(
                    [await runs_section(saver, concurrency, plan.runs) for _ in range(plan.repeat)]
                )
            base = seconds if kind == "memory" else base
            ratio = None if kind == "memory" or base is None else seconds / base
            rows.append(Row("runs", backend, kind, concurrency, plan.runs, seconds, ratio=ratio))
    return rows


def print_table(rows: Sequence[Row]) -> None:
    head = (
        f"{'section':<7} {'backend':<8} {'saver':<9} {'C':>4} {'N':>6} {'p50 ms':>8} "
        f"{'p95 ms':>8} {'per s':>9} {'×base':>6}"
    )
    print(head)
    print("-" * len(head))
    for r in sorted(rows, key=_order):
        print(
            f"{r.section:<7} {r.backend:<8} {r.saver:<9} {r.concurrency:>4} {r.n:>6} "
            f"{fmt(r.p50_ms, '.2f'):>8} {fmt(r.p95_ms, '.2f'):>8} {r.per_s:>9,.0f} "
            f"{fmt(r.ratio, '.2f'):>6}"
        )


def _order(row: Row) -> tuple[Any, ...]:
    return (row.section != "put", row.backend, row.concurrency, row.saver)


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    kinds = ["memory", "sqlite"]
    missing = postgres_available()
    if missing is None:
        kinds.append("postgres")
    else:
        print(f"PostgreSQL skipped: {missing}\n")
    rows: list[Row] = []
    for backend in backends(args):
        rows += anyio.run(measure, backend, plan, kinds, backend=backend)
    print(f"put: {plan.puts} puts, runs: {plan.runs} runs; median of {plan.repeat}\n")
    print_table(rows)
    if args.json:
        data = [attrs.asdict(r) | {"per_s": r.per_s} for r in rows]
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"plan": attrs.asdict(plan), "rows": data}, f, indent=2)


if __name__ == "__main__":
    main()
