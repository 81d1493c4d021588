"""Benchmark: the speed of ``PIIRedactionHook``'s detectors (MB/s, every built-in one on),
on harmless text and on the worst cases, at growing sizes; and the longest pause of the
event loop while the hook redacts a large tool result.

Speed rows: ``hook.redact(text)`` over each text (medians of the repeats, interleaved,
after a warm-up), in MB/s of text (1 MB = 10⁶ characters), and the ratio to harmless text
of the same size. The worst cases are the texts that made the old phone detector
backtrack or rescan: at 200 KB it took 543 s on the national-number one. Constant MB/s
across sizes is linear time.

Stall rows, on each backend: a task ticks (``anyio.lowlevel.checkpoint()`` in a loop,
recording the longest gap between two ticks) while the hook's tool interceptor redacts a
result; the longest gap is how long the loop was held. Baseline: the same redaction
called on the loop (``hook.tool_response``), where every size was scanned before.

    python benchmarks/bench_pii.py [--quick] [--backend B] [--repeat R] [--json PATH]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import attrs
from _common import backends, parse

from reactcore import (
    OverAllState,
    PIIRedactionHook,
    RunnableConfig,
    ToolCall,
    ToolCallRequest,
    ToolCallResponse,
    tool,
)


@attrs.frozen
class Plan:
    repeat: int
    sizes: tuple[int, ...]
    stall_size: int


QUICK = Plan(repeat=3, sizes=(50_000, 100_000), stall_size=500_000)
FULL = Plan(repeat=5, sizes=(100_000, 200_000, 400_000, 800_000), stall_size=2_000_000)

_PROSE = (
    "The deployment of version 2.4.1 finished at 10:30 on 2024-03-15; 1,234 requests were "
    "served by build 10.0.19041.1 with a p99 of 120 ms. See docs/runbook.md, section 3, and "
    'the ticket OPS-4521 {"status": "ok", "retries": 0, "region": "eu-west-1"}.\n'
)
_PERSONAL = (
    "Customer jane.doe@example.com called from +44 20 7946 0958 about card "
    "4111 1111 1111 1111, from 192.168.1.20; the key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t leaked.\n"
)
TEXTS: dict[str, str] = {
    "harmless (logs, prose, JSON)": _PROSE,
    "personal data on every line": _PERSONAL,
    "worst: national numbers '01 01 …'": "01 ",
    "worst: one-digit groups '1 1 …'": "1 ",
    "worst: '+1' and 30 digits": "+1" + "9" * 30 + "a ",
    "worst: card-like groups '1-1-…'": "1-1-",
}
BASELINE = "harmless (logs, prose, JSON)"


def sized(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def seconds(function: Callable[[], Any]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def speed_rows(plan: Plan) -> list[dict[str, Any]]:
    """MB/s of ``hook.redact`` over each text at each size, with the ratio to harmless text."""
    hook = PIIRedactionHook()
    rows = []
    for size in plan.sizes:
        texts = {name: sized(unit, size) for name, unit in TEXTS.items()}
        for text in texts.values():
            hook.redact(text)  # warm-up
        times: dict[str, list[float]] = {name: [] for name in texts}
        for _ in range(plan.repeat):  # interleaved: the machine's load hits every text alike
            for name, text in texts.items():
                times[name].append(seconds(lambda text=text: hook.redact(text)))  # type: ignore[misc]
        base = size / statistics.median(times[BASELINE]) / 1e6
        for name, found in times.items():
            rate = size / statistics.median(found) / 1e6
            rows.append({"text": name, "chars": size, "mb_per_s": rate, "vs_harmless": rate / base})
    return rows


@tool
def lookup(who: str) -> str:
    """Look someone up."""
    return who


async def longest_stall(scan: Callable[[], Any]) -> tuple[float, float]:
    """The longest gap (s) between two ticks of another task while ``await scan()`` runs
    (up to the first tick after it), and the time the scan took."""
    longest = 0.0
    ticks = 0
    ticking = anyio.Event()

    async def tick() -> None:
        nonlocal longest, ticks
        last = time.perf_counter()
        while True:
            await anyio.lowlevel.checkpoint()
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now
            ticks += 1
            ticking.set()

    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        await ticking.wait()
        longest = 0.0
        started = time.perf_counter()
        await scan()
        took = time.perf_counter() - started
        seen = ticks
        while ticks == seen:  # the gap that spans the end of the scan counts too
            await anyio.lowlevel.checkpoint()
        group.cancel_scope.cancel()
    return longest, took


async def stall_rows(backend: str, plan: Plan) -> list[dict[str, Any]]:
    """The loop's longest pause while a result of ``plan.stall_size`` characters is
    redacted: through the hook's interceptor, and (baseline) called on the loop."""
    hook = PIIRedactionHook()
    interceptor = hook.interceptors[0]
    call = ToolCall("c1", "lookup", "{}")
    request = ToolCallRequest(call, OverAllState({}), RunnableConfig(), lookup)
    rows = []
    for name in (BASELINE, "personal data on every line", "worst: national numbers '01 01 …'"):
        response = ToolCallResponse(sized(TEXTS[name], plan.stall_size))

        async def handler(request: ToolCallRequest, response: Any = response) -> Any:
            return response

        async def through_hook(handler: Any = handler) -> None:
            await interceptor.wrap_tool_call(request, handler)

        async def on_the_loop(response: Any = response) -> None:
            hook.tool_response(response, call)

        for how, scan in (("called on the loop", on_the_loop), ("the hook", through_hook)):
            stalls, took = [], []
            for _ in range(plan.repeat):
                stall, seconds_ = await longest_stall(scan)
                stalls.append(stall)
                took.append(seconds_)
            rows.append(
                {
                    "backend": backend,
                    "text": name,
                    "chars": plan.stall_size,
                    "how": how,
                    "longest_stall_ms": statistics.median(stalls) * 1000,
                    "redaction_ms": statistics.median(took) * 1000,
                }
            )
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    speed = speed_rows(plan)
    print(f"{'text':36} {'chars':>9} {'MB/s':>7} {'× harmless':>11}")
    for row in speed:
        rate, ratio = row["mb_per_s"], row["vs_harmless"]
        print(f"{row['text']:36} {row['chars']:>9,} {rate:7.2f} {ratio:10.2f}×")
    stalls: list[dict[str, Any]] = []
    for backend in backends(args):
        stalls += anyio.run(stall_rows, backend, plan, backend=backend)
    print()
    print(f"{'backend':8} {'text':36} {'chars':>9} {'redacted':22} {'stall ms':>9} {'took ms':>8}")
    for row in stalls:
        print(
            f"{row['backend']:8} {row['text']:36} {row['chars']:>9,} {row['how']:22}"
            f" {row['longest_stall_ms']:9.1f} {row['redaction_ms']:8.0f}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"speed": speed, "stalls": stalls}, out, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
