"""Benchmark: what checking constructor arguments costs per construction, with the
validators on and off (``attrs.validators.disabled()``) side by side in the same run.

Rows: a ``ReactAgent`` with one tool (which builds its two nodes, also checked), a
``RunnableConfig`` (made for every run), a ``ToolCallResponse`` (made for every tool
call), a ``UserMessage`` and an ``AssistantMessage`` with one tool call (made for every
turn and every checkpoint read back). Columns: the median over the repeats (interleaved,
after a warm-up) of µs per construction, validators off, on, and the ratio.

    python benchmarks/bench_validation.py [--quick] [--repeat R] [--json PATH]
"""

from __future__ import annotations

import json
import statistics
import sys
import timeit
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from _common import parse

from reactcore import (
    AssistantMessage,
    ReactAgent,
    RunnableConfig,
    ToolCall,
    ToolCallResponse,
    UserMessage,
    tool,
)
from reactcore.testing import ScriptedChatModel


@attrs.frozen
class Plan:
    repeat: int
    scale: int


QUICK = Plan(repeat=3, scale=1)
FULL = Plan(repeat=7, scale=4)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def cases() -> dict[str, tuple[Callable[[], Any], int]]:
    """Each row: what it builds, and how many times per timing (about 10-20 ms)."""
    model = ScriptedChatModel([])
    call = ToolCall("c1", "add", '{"a": 1, "b": 2}')
    return {
        "ReactAgent(name, model, tools=[add], …)": (
            lambda: ReactAgent("a", model, tools=[add], parallel_tool_execution=True),
            200,
        ),
        "RunnableConfig(thread_id='t')": (lambda: RunnableConfig(thread_id="t"), 10_000),
        "ToolCallResponse('3')": (lambda: ToolCallResponse("3"), 10_000),
        "UserMessage('hi')": (lambda: UserMessage("hi"), 10_000),
        "AssistantMessage('', [call])": (lambda: AssistantMessage("", [call]), 5_000),
    }


def per_call(make: Callable[[], Any], number: int, checked: bool) -> float:
    """µs per construction, validators on (``checked``) or off."""
    if checked:
        return timeit.timeit(make, number=number) / number * 1e6
    with attrs.validators.disabled():
        return timeit.timeit(make, number=number) / number * 1e6


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    rows = []
    print(f"{'construction':42} {'off µs':>8} {'on µs':>8} {'on/off':>7}")
    for name, (make, number) in cases().items():
        number *= plan.scale
        per_call(make, number // 10, True)  # warm-up
        off: list[float] = []
        on: list[float] = []
        for _ in range(plan.repeat):  # interleaved, so load on the machine hits both alike
            off.append(per_call(make, number, False))
            on.append(per_call(make, number, True))
        row = {"case": name, "off_us": statistics.median(off), "on_us": statistics.median(on)}
        row["ratio"] = row["on_us"] / row["off_us"]
        rows.append(row)
        print(f"{name:42} {row['off_us']:8.2f} {row['on_us']:8.2f} {row['ratio']:6.2f}×")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
