"""Benchmark: many concurrent runs of one agent, each with one parallel batch of tools.

A service runs R = 1,000 runs of one ``ReactAgent`` at the same time (scripted model, not
streamed; each run asks for one parallel batch of C = 2 async tools sleeping L = 10 ms,
then answers).
Side by side in one run, on asyncio and trio:

- ``shared k=5``: the old behaviour, where ``max_parallel_tools`` bounded every run of the
  agent together — simulated with ``tool_limiter=anyio.CapacityLimiter(5)``;
- ``cap 50``: an explicit process-wide cap the caller chose, ``CapacityLimiter(50)``;
- ``per batch k=5``: the default now, ``max_parallel_tools=5`` bounds each batch alone.

Columns: median wall time over the repeats, the ideal makespan (``ceil(R·C/cap)·L`` with
a shared cap, ``L`` per batch), and the ratio of each variant to ``per batch``.

    python benchmarks/bench_concurrent_runs.py [--quick] [--backend asyncio|trio|both]
                                               [--repeat R] [--json PATH]
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Sequence
from typing import Any

import anyio
import attrs
from _common import backends, fmt, parse

from reactcore import (
    AssistantMessage,
    ReactAgent,
    RunnableConfig,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from reactcore.models.scripted import ScriptedChatModel

LATENCY = 0.010


@attrs.frozen
class Plan:
    runs: int
    calls: int
    repeat: int
    k: int = 5
    cap: int = 50


FULL = Plan(runs=1_000, calls=2, repeat=5)
QUICK = Plan(runs=200, calls=2, repeat=3)


@attrs.frozen
class Row:
    backend: str
    variant: str
    runs: int
    calls: int
    median_s: float
    ideal_s: float
    vs_per_batch: float | None = None


@tool
async def fetch(i: int) -> int:
    """A tool waiting on I/O for 10 ms."""
    await anyio.sleep(LATENCY)
    return i


def reply(calls: int) -> Any:
    """The scripted model: ask for ``calls`` tool calls, then answer once they are done."""

    def answer(request: Any) -> AssistantMessage:
        if isinstance(request.messages[-1], ToolResponseMessage):
            return AssistantMessage("done")
        asked = [ToolCall(f"c{i}", "fetch", f'{{"i": {i}}}') for i in range(calls)]
        return AssistantMessage("", asked)

    return answer


def agent_for(plan: Plan, variant: str) -> ReactAgent:
    limiter = {"shared k=5": plan.k, "cap 50": plan.cap}.get(variant)
    return ReactAgent(
        "bench",
        ScriptedChatModel([reply(plan.calls)] * (2 * plan.runs)),
        tools=[fetch],
        parallel_tool_execution=True,
        max_parallel_tools=plan.k,
        tool_limiter=None if limiter is None else anyio.CapacityLimiter(limiter),
    )


async def measure(plan: Plan, variant: str) -> float:
    """Wall time of ``plan.runs`` concurrent runs of a fresh agent."""
    agent = agent_for(plan, variant)
    answers: list[str] = []
    config = RunnableConfig(metadata={"_stream_": False})  # the model's cost is not measured

    async def one() -> None:
        answers.append((await agent.invoke("go", config)).text)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(plan.runs):
            tg.start_soon(one)
    elapsed = time.perf_counter() - start
    assert answers == ["done"] * plan.runs
    return elapsed


def ideal(plan: Plan, variant: str) -> float:
    cap = {"shared k=5": plan.k, "cap 50": plan.cap}.get(variant)
    if cap is None:
        return math.ceil(plan.calls / plan.k) * LATENCY
    return math.ceil(plan.runs * plan.calls / cap) * LATENCY


VARIANTS = ("shared k=5", "cap 50", "per batch k=5")


async def run_backend(backend: str, plan: Plan) -> list[Row]:
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for _ in range(plan.repeat):
        for variant in VARIANTS:  # interleaved, so drift on the machine hits all alike
            times[variant].append(await measure(plan, variant))
    medians = {v: statistics.median(t) for v, t in times.items()}
    base = medians["per batch k=5"]
    return [
        Row(backend, v, plan.runs, plan.calls, medians[v], ideal(plan, v), medians[v] / base)
        for v in VARIANTS
    ]


def print_table(rows: Sequence[Row]) -> None:
    head = (
        f"{'backend':<8} {'variant':<14} {'runs':>6} {'calls/run':>9} "
        f"{'median s':>9} {'ideal s':>8} {'×per batch':>10}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.backend:<8} {r.variant:<14} {r.runs:>6} {r.calls:>9} "
            f"{r.median_s:>9.3f} {r.ideal_s:>8.3f} {fmt(r.vs_per_batch, '.1f'):>10}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    rows: list[Row] = []
    for backend in backends(args):
        rows += anyio.run(run_backend, backend, plan, backend=backend)
    print_table(rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([attrs.asdict(r) for r in rows], f, indent=2)


if __name__ == "__main__":
    main()
