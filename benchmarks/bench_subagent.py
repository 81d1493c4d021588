"""Benchmark: what ``agent.as_tool()`` costs per child run, beside the same child run
without it, measured in the same run.

The child is a ``ReactAgent`` over a ``ScriptedChatModel``: in the ``answer`` workload it
answers at once (one model call), in the ``tool`` workload it makes one no-op tool call
first (two model calls). Per backend and workload, N children per measurement:

- ``direct``: ``await child.invoke(task)``, N times in a row (the child alone);
- ``hand-written tool``: a parent whose model asks for N calls at once (parallel tool
  execution), each a plain ``@tool`` that awaits ``child.invoke(task)`` and returns its
  text — the least a parent running a child does;
- ``as_tool``: the same parent with ``child.as_tool()``: the child's events passed up into
  the parent's stream, its usage added to the parent's;
- ``as_tool, events read``: the same, with a reader draining the parent's stream (every
  child event reaches it), beside the hand-written parent read the same way;
- ``as_tool, saver``: the parent with a ``MemorySaver`` and a thread (the children
  checkpoint under their own threads), beside the hand-written parent with the saver.

Columns: median wall time over the repeats (interleaved, after one warm-up of each
case), µs per child run (the parent's own two model calls included, spread over the N
children), and the ratio to the case named.

    python benchmarks/bench_subagent.py [--quick] [--backend asyncio|trio|both]
                                        [--repeat R] [--json PATH]
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import attrs
from _common import Case, Prepare, Row, Run, backends, fmt, measure, parse

from reactcore import (
    AssistantMessage,
    MemorySaver,
    ModelRequest,
    ReactAgent,
    RunnableConfig,
    Tool,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from reactcore.testing import ScriptedChatModel


@attrs.frozen
class Plan:
    children: int  # child runs per measurement
    repeat: int


FULL = Plan(children=50, repeat=5)
QUICK = Plan(children=10, repeat=3)
WORKLOADS = ("answer", "tool")


# --- the agents ---------------------------------------------------------------------------


async def noop() -> str:
    """The child's tool: does nothing, so the time measured is the machinery's."""
    return "ok"


def child_reply(workload: str) -> Callable[[ModelRequest], AssistantMessage]:
    def reply(request: ModelRequest) -> AssistantMessage:
        if workload == "tool" and not isinstance(request.messages[-1], ToolResponseMessage):
            return AssistantMessage("", [ToolCall("k1", "noop", "{}")])
        return AssistantMessage("done")

    return reply


def child_agent(workload: str, n: int) -> ReactAgent:
    calls = 2 if workload == "tool" else 1
    model = ScriptedChatModel([child_reply(workload)] * (n * calls))
    return ReactAgent("child", model, tools=[noop] if workload == "tool" else [])


def parent_reply(request: ModelRequest, n: int) -> AssistantMessage:
    if isinstance(request.messages[-1], ToolResponseMessage):
        return AssistantMessage("all done")
    calls = [ToolCall(f"c{i}", "child", json.dumps({"input": f"task {i}"})) for i in range(n)]
    return AssistantMessage("", calls)


def hand_written(child: ReactAgent) -> Tool:
    @tool(name="child")
    async def ask(input: str) -> str:
        """Ask the child."""
        return (await child.invoke(input)).text

    return ask


def parent_agent(subagent: Tool, n: int, saver: MemorySaver | None) -> ReactAgent:
    model = ScriptedChatModel([lambda r: parent_reply(r, n)] * 2)
    return ReactAgent(
        "parent",
        model,
        tools=[subagent],
        parallel_tool_execution=True,
        max_parallel_tools=n,
        saver=saver,
    )


# --- the cases ------------------------------------------------------------------------------


def direct(workload: str, n: int) -> Prepare:
    def prepare() -> Run:
        child = child_agent(workload, n)

        async def run() -> None:
            for i in range(n):
                await child.invoke(f"task {i}")

        return run

    return prepare


def through_parent(
    workload: str, n: int, *, as_tool: bool, read: bool = False, saved: bool = False
) -> Prepare:
    def prepare() -> Run:
        child = child_agent(workload, n)
        subagent = child.as_tool() if as_tool else hand_written(child)
        saver = MemorySaver() if saved else None
        parent = parent_agent(subagent, n, saver)
        config = RunnableConfig(thread_id=uuid.uuid4().hex if saved else None)

        async def run() -> None:
            if read:
                async with parent.stream("go", config) as events:
                    async for _ in events:
                        pass
            else:
                result = await parent.invoke("go", config)
                assert result.text == "all done", result.text

        return run

    return prepare


def cases(workload: str, n: int) -> list[Case]:
    def parent(**options: Any) -> Prepare:
        return through_parent(workload, n, **options)

    return [
        Case("direct", n, direct(workload, n)),
        Case("hand-written tool", n, parent(as_tool=False), "direct"),
        Case("as_tool", n, parent(as_tool=True), "hand-written tool"),
        Case("hand-written tool, events read", n, parent(as_tool=False, read=True)),
        Case(
            "as_tool, events read",
            n,
            parent(as_tool=True, read=True),
            "hand-written tool, events read",
        ),
        Case("hand-written tool, saver", n, parent(as_tool=False, saved=True)),
        Case("as_tool, saver", n, parent(as_tool=True, saved=True), "hand-written tool, saver"),
    ]


# --- measuring ------------------------------------------------------------------------------


async def run_backend(backend: str, plan: Plan) -> list[Row]:
    rows: list[Row] = []
    for workload in WORKLOADS:
        rows += await measure(workload, backend, cases(workload, plan.children), plan.repeat)
    return rows


def print_table(rows: Sequence[Row]) -> None:
    head = f"{'backend':8} {'workload':8} {'case':32} {'N':>4} {'median':>9} {'µs/child':>9}  ratio"
    print(head)
    print("-" * len(head))
    for r in rows:
        against = f"{fmt(r.ratio, '.2f')}× {r.baseline}" if r.baseline else ""
        print(
            f"{r.backend:8} {r.section:8} {r.case:32} {r.n:>4} {r.median_s * 1e3:>7.1f}ms"
            f" {r.us_per_op:>9.0f}  {against}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    rows: list[Row] = []
    for backend in backends(args):
        rows += anyio.run(run_backend, backend, plan, backend=backend)
    print(f"subagent: N = {plan.children} child runs per measurement, medians of {plan.repeat}")
    print_table(rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{**attrs.asdict(r), "us_per_child": r.us_per_op} for r in rows], f)


if __name__ == "__main__":
    main()
