"""Benchmark: what OpenTelemetry tracing costs per agent-loop iteration and per tool call,
with every variant measured side by side in the same run.

- ``today``: the library as it was before the tracing seam (``--today REF``, default the
  parent of the commit that added ``reactcore/_tracing.py``), extracted from git and
  imported as a second package; the baseline of every ratio.
- ``off``: this code with no tracer: tracing off must cost nothing measurable.
- ``on, no-op provider``: tracing on with OpenTelemetry's ``NoOpTracerProvider``: the
  seam's own work and the API calls, no span recorded.
- ``on, SDK``: tracing on with the SDK's ``TracerProvider``, every span recorded and
  exported to an ``InMemorySpanExporter`` (through a ``SimpleSpanProcessor``).

Sections: ``loop`` — a ``ReactAgent`` over a ``ScriptedChatModel`` asking for one no-op
async tool call per turn for T turns (streaming on), µs per iteration (one model call and
one tool call: a chat and an execute_tool span); ``tools`` — an ``AgentToolNode`` running
a parallel batch of N no-op async calls, µs per call (one execute_tool span each).

Columns: median wall time over the repeats (interleaved, after one warm-up run of each
case), µs per operation, operations per second, and the ratio to ``today``.

    python benchmarks/bench_otel.py [--quick] [--backend asyncio|trio|both]
                                    [--repeat R] [--json PATH] [--today REF]
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import attrs
from _common import backends, parse
from bench_agent import Case, Prepare, Row, Run, measure, print_table, script
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider

import reactcore
import reactcore.testing
from reactcore import _tracing
from reactcore.otel import OpenTelemetryTracer

ROOT = Path(__file__).resolve().parent.parent
TODAY = "reactcore_today"


@attrs.frozen
class Plan:
    turns: int  # loop: iterations per run
    calls: int  # tools: calls in the batch
    repeat: int


FULL = Plan(turns=200, calls=200, repeat=7)
QUICK = Plan(turns=50, calls=50, repeat=3)


# --- today's library, beside this one ------------------------------------------------------


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def default_today() -> str:
    """The parent of the commit that added the tracing seam."""
    added = _git("log", "--diff-filter=A", "--format=%H", "--", "reactcore/_tracing.py")
    return added.splitlines()[-1] + "^"


@contextmanager
def today_package(ref: str) -> Iterator[ModuleType]:
    """``reactcore`` as of ``ref``, importable as ``reactcore_today`` (its imports are all
    relative) while the block runs."""
    archive = subprocess.run(
        ["git", "archive", ref, "reactcore"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tempfile.TemporaryDirectory() as folder:
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        Path(folder, "reactcore").rename(Path(folder, TODAY))
        sys.path.insert(0, folder)
        try:
            importlib.import_module(f"{TODAY}.testing")
            yield importlib.import_module(TODAY)
        finally:
            sys.path.remove(folder)


# --- the variants ----------------------------------------------------------------------------


async def noop() -> None:
    """The tool: does nothing, so the time measured is the library's."""


@attrs.frozen
class Variant:
    """One way to run: which library, and which tracer (``None``: tracing off)."""

    name: str
    lib: Any
    tracer: Any = None
    exporter: InMemorySpanExporter | None = None

    def reset(self) -> None:
        if self.exporter is not None:
            self.exporter.clear()  # spans of earlier runs would only grow the heap


def sdk_variant() -> Variant:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Variant("on, SDK", reactcore, OpenTelemetryTracer(provider), exporter)


def variants(today: ModuleType) -> list[Variant]:
    return [
        Variant("today", today),
        Variant("off", reactcore),
        Variant("on, no-op provider", reactcore, OpenTelemetryTracer(NoOpTracerProvider())),
        sdk_variant(),
    ]


def loop_case(variant: Variant, turns: int) -> Prepare:
    """An agent run of ``turns`` iterations (one model call, one no-op tool call each)."""
    lib = variant.lib
    replies = [
        lib.AssistantMessage(m.text, [lib.ToolCall(c.id, c.name) for c in m.tool_calls])
        for m in script(turns)
    ]
    kwargs = {} if variant.tracer is None else {"tracer_provider": variant.tracer}

    def prepare() -> Run:
        variant.reset()
        model = lib.testing.ScriptedChatModel(replies)
        agent = lib.ReactAgent("bench", model, tools=[noop], max_iterations=None, **kwargs)

        async def run() -> None:
            result = await agent.invoke("go")
            assert result.model_calls == turns + 1, result.model_calls

        return run

    return prepare


def tools_case(variant: Variant, calls: int) -> Prepare:
    """One parallel batch of ``calls`` no-op calls through an ``AgentToolNode``, inside a
    traced context when the variant traces (as in a traced run)."""
    lib = variant.lib
    asks = lib.AssistantMessage("", [lib.ToolCall(f"c{i}", "noop") for i in range(calls)])
    state = lib.OverAllState({"messages": [lib.UserMessage("go"), asks]})
    node = lib.AgentToolNode([noop], parallel_tool_execution=True, max_parallel_tools=calls)

    def prepare() -> Run:
        variant.reset()

        async def run() -> None:
            token = _tracing.current.set(variant.tracer) if variant.tracer else None
            try:
                update = await node(state)
            finally:
                if token is not None:
                    _tracing.current.reset(token)
            assert len(update["messages"][-1].responses) == calls

        return run

    return prepare


def cases(plan: Plan, today: ModuleType) -> tuple[list[Case], list[Case]]:
    loop, tools = [], []
    for variant in variants(today):
        base = None if variant.name == "today" else "today"
        loop.append(Case(variant.name, plan.turns, loop_case(variant, plan.turns), base))
        tools.append(Case(variant.name, plan.calls, tools_case(variant, plan.calls), base))
    return loop, tools


async def run_backend(backend: str, plan: Plan, today: ModuleType) -> list[Row]:
    loop, tools = cases(plan, today)
    rows = await measure("loop", backend, loop, plan.repeat)
    rows += await measure("tools", backend, tools, plan.repeat)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    ref = None
    if "--today" in argv:
        at = argv.index("--today")
        ref = argv[at + 1]
        del argv[at : at + 2]
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    ref = ref or default_today()
    rows: list[Row] = []
    with today_package(ref) as today:
        for backend in backends(args):
            rows += anyio.run(run_backend, backend, plan, today, backend=backend)
    rows.sort(key=lambda r: r.section != "loop")
    print(
        f"today = reactcore at {_git('rev-parse', '--short', ref)} ({ref}); loop: "
        f"{plan.turns} iterations, tools: a batch of {plan.calls}; median of {plan.repeat}\n"
    )
    print_table(rows)
    if args.json:
        data = [
            attrs.asdict(r) | {"us_per_op": r.us_per_op, "ops_per_s": r.ops_per_s} for r in rows
        ]
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"plan": attrs.asdict(plan), "today": ref, "rows": data}, f, indent=2)


if __name__ == "__main__":
    main()
