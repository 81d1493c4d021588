"""Benchmark: ``reactcore.AgentToolNode`` against LangGraph's prebuilt ``ToolNode``.

One batch of N tool calls (one assistant message) runs through each executor, on asyncio
only (LangGraph is asyncio-only; ``--backend`` is accepted and ignored):

- ``reactcore-par``: ``AgentToolNode(parallel_tool_execution=True, max_parallel_tools=N)``;
- ``reactcore-seq``: ``AgentToolNode()``, sequential (sync tools inline);
- ``langgraph``: ``ToolNode([...]).ainvoke({"messages": [AIMessage(tool_calls=...)]})``,
  which gathers the calls of the message; sync tools go to the loop's default executor
  (``min(32, cpus + 4)`` threads);
- ``langgraph-graph``: the same ``ToolNode`` as the one node of a compiled ``StateGraph``
  (``MessagesState``), as an application would run it;
- ``gather``: ``asyncio.gather`` of the bare coroutines (the floor); sync tools each in a
  thread of a dedicated ``ThreadPoolExecutor(N)``.

Workloads: ``io`` (async tools awaiting ``asyncio.sleep(50 ms)``), ``overhead`` (async
no-ops: µs per call is the executor's own cost), ``blocking`` (sync tools
``time.sleep(50 ms)``). Each tool is defined once per framework, in its own way
(``reactcore.tool``, ``langchain_core.tools.tool``), around the same body.

Every run counts the answers (non-error responses); a run that lost any is reported as
such, not timed. Columns: median wall time over the repeats, µs per call, ratio to
``gather`` (``×gather``) and, for ``reactcore-par``, ratio to ``langgraph`` (``rc/lg``).
A run whose ideal makespan exceeds the budget is skipped and listed as such.

    python benchmarks/peers/bench_peers.py [--quick] [--repeat R] [--json PATH]
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import attrs
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool as lc_tool
from langgraph._internal._constants import CONFIG_KEY_RUNTIME
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

import reactcore
from reactcore import AgentToolNode, AssistantMessage, OverAllState, ToolCall, UserMessage

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import fmt, parse  # benchmarks/_common.py, shared with the other scripts

LATENCY = 0.05
Run = Callable[[], Awaitable[int]]  # one timed run; returns how many calls were answered


# --- the tool bodies, one per workload ---------------------------------------------------


async def io(i: int) -> str:
    """Wait 50 ms on the event loop."""
    await asyncio.sleep(LATENCY)
    return "ok"


async def overhead(i: int) -> str:
    """Do nothing."""
    return "ok"


def blocking(i: int) -> str:
    """Block its thread for 50 ms."""
    time.sleep(LATENCY)
    return "ok"


@attrs.frozen
class Workload:
    body: Callable[[int], Any]
    latency: float  # seconds one call takes alone
    sizes: tuple[int, ...]

    @property
    def name(self) -> str:
        return self.body.__name__

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.body)


@attrs.frozen
class Plan:
    io_sizes: tuple[int, ...]
    overhead_sizes: tuple[int, ...]
    blocking_sizes: tuple[int, ...]
    repeat: int
    budget: float  # seconds: a run whose ideal makespan exceeds this is skipped

    def workloads(self) -> list[Workload]:
        return [
            Workload(io, LATENCY, self.io_sizes),
            Workload(overhead, 0.0, self.overhead_sizes),
            Workload(blocking, LATENCY, self.blocking_sizes),
        ]


FULL = Plan((10, 100, 1_000), (10, 100, 1_000), (10, 100), repeat=5, budget=10)
QUICK = Plan((10, 100), (10, 100), (10,), repeat=3, budget=1)


# --- executors: each prepares (outside the timing) a run of N calls ----------------------


def reactcore_run(parallel: bool) -> Callable[[Workload, int], Run]:
    """A real ``AgentToolNode``: parallel with ``max_parallel_tools=N``, or sequential."""

    def prepare(w: Workload, n: int) -> Run:
        node = AgentToolNode(
            [reactcore.tool(w.body)], parallel_tool_execution=parallel, max_parallel_tools=n
        )
        calls = [ToolCall(f"c{i}", w.name, json.dumps({"i": i})) for i in range(n)]
        state = OverAllState({"messages": [UserMessage("go"), AssistantMessage("", calls)]})

        async def run() -> int:
            out = await node(state)
            return sum(not r.is_error for m in out["messages"] for r in m.responses)

        return run

    return prepare


def langgraph_run(in_graph: bool) -> Callable[[Workload, int], Run]:
    """The prebuilt ``ToolNode``: alone, or as the one node of a compiled ``StateGraph``.

    Alone, ``ainvoke`` needs the runtime a graph would give it (langgraph 1.2 raises
    "Missing required config key 'N/A' for 'tools'" without one): a default ``Runtime``.
    """

    def prepare(w: Workload, n: int) -> Run:
        node = ToolNode([lc_tool(w.body)])
        calls = [
            {"name": w.name, "args": {"i": i}, "id": f"c{i}", "type": "tool_call"} for i in range(n)
        ]
        state = {"messages": [AIMessage(content="", tool_calls=calls)]}
        if in_graph:
            builder = StateGraph(MessagesState)
            builder.add_node("tools", node)
            builder.add_edge(START, "tools")
            runnable: Any = builder.compile()
            config: dict[str, Any] = {}
        else:
            runnable, config = node, {"configurable": {CONFIG_KEY_RUNTIME: Runtime()}}

        async def run() -> int:
            out = await runnable.ainvoke(state, config)
            answers = [m for m in out["messages"] if isinstance(m, ToolMessage)]
            return sum(m.status != "error" for m in answers)

        return run

    return prepare


def gather_run(w: Workload, n: int) -> Run:
    """The floor: the bare coroutines gathered; sync bodies on a fresh pool of N threads."""

    async def run() -> int:
        if w.is_async:
            results = await asyncio.gather(*(w.body(i) for i in range(n)))
        else:
            loop = asyncio.get_running_loop()
            with ThreadPoolExecutor(n) as pool:
                results = await asyncio.gather(
                    *(loop.run_in_executor(pool, w.body, i) for i in range(n))
                )
        return sum(r == "ok" for r in results)

    return run


@attrs.frozen
class Executor:
    name: str
    prepare: Callable[[Workload, int], Run]
    sequential: bool = False

    def ideal(self, w: Workload, n: int) -> float:
        return (n if self.sequential else 1) * w.latency


EXECUTORS = (
    Executor("gather", gather_run),
    Executor("langgraph", langgraph_run(in_graph=False)),
    Executor("langgraph-graph", langgraph_run(in_graph=True)),
    Executor("reactcore-par", reactcore_run(parallel=True)),
    Executor("reactcore-seq", reactcore_run(parallel=False), sequential=True),
)


# --- measuring ---------------------------------------------------------------------------


@attrs.frozen
class Row:
    workload: str
    n: int
    executor: str
    median_s: float | None  # None: skipped or lost answers (see note)
    vs_gather: float | None = None
    rc_vs_lg: float | None = None
    note: str = ""

    @property
    def median_ms(self) -> float | None:
        return None if self.median_s is None else self.median_s * 1e3

    @property
    def us_per_call(self) -> float | None:
        return None if self.median_s is None else self.median_s / self.n * 1e6


async def _time(run: Run) -> tuple[float, int]:
    gc.collect()
    start = time.perf_counter()
    answered = await run()
    return time.perf_counter() - start, answered


async def measure_case(w: Workload, n: int, plan: Plan) -> list[Row]:
    """All executors on one (workload, N), repeats interleaved so drift hits them alike."""
    runnable = [ex for ex in EXECUTORS if ex.ideal(w, n) <= plan.budget]
    samples: dict[str, list[float]] = {ex.name: [] for ex in runnable}
    fewest: dict[str, int] = {ex.name: n for ex in runnable}
    for _ in range(plan.repeat):
        for ex in runnable:
            elapsed, answered = await _time(ex.prepare(w, n))
            samples[ex.name].append(elapsed)
            fewest[ex.name] = min(fewest[ex.name], answered)
    medians = {name: statistics.median(s) for name, s in samples.items() if fewest[name] == n}
    rows = []
    for ex in EXECUTORS:
        m = medians.get(ex.name)
        if ex.name not in samples:
            note = f"skipped: ideal {ex.ideal(w, n):g} s > budget {plan.budget:g} s"
        elif m is None:
            note = f"LOST ANSWERS: {fewest[ex.name]}/{n} answered in the worst repeat"
        else:
            note = ""
        lg = medians.get("langgraph")
        rows.append(
            Row(
                w.name,
                n,
                ex.name,
                m,
                vs_gather=_ratio(m, medians.get("gather")),
                rc_vs_lg=_ratio(m, lg) if ex.name == "reactcore-par" else None,
                note=note,
            )
        )
    return rows


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


async def run_all(plan: Plan) -> list[Row]:
    rows = []
    for w in plan.workloads():
        for n in w.sizes:
            rows += await measure_case(w, n, plan)
    return rows


# --- reporting ---------------------------------------------------------------------------


def print_table(rows: Sequence[Row]) -> None:
    head = (
        f"{'workload':<9} {'N':>5} {'executor':<15} {'median ms':>10} {'µs/call':>9} "
        f"{'×gather':>8} {'rc/lg':>6}  note"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.workload:<9} {r.n:>5} {r.executor:<15} {fmt(r.median_ms, '.2f'):>10} "
            f"{fmt(r.us_per_call, '.2f'):>9} {fmt(r.vs_gather, '.2f'):>8} "
            f"{fmt(r.rc_vs_lg, '.2f'):>6}  {r.note}".rstrip()
        )


def versions() -> str:
    from importlib.metadata import version

    names = ("reactcore", "langgraph", "langgraph-prebuilt", "langchain-core", "anyio")
    found = ", ".join(f"{name} {version(name)}" for name in names)
    return f"python {sys.version.split()[0]}, {found}; asyncio"


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    print(versions())
    print(f"median of {plan.repeat}; latency {LATENCY * 1e3:g} ms; budget {plan.budget:g} s")
    print()
    rows = anyio.run(run_all, plan, backend="asyncio")
    print_table(rows)
    if args.json:
        data = [attrs.asdict(r) | {"us_per_call": r.us_per_call} for r in rows]
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)


if __name__ == "__main__":
    main()
