"""The ``reactcore`` command: ``reactcore bench`` and ``reactcore demo``.

``bench`` measures reactcore's tool scheduling against a port of the seed's design (see
``reactcore._bench``); it needs the ``bench`` extra. ``demo`` runs a small agent with two
tools in parallel and prints its events as they happen, on a scripted model or on any
OpenAI-compatible endpoint.

Errors in what was asked (a bad option, a missing model or key) are one line on stderr
and exit status 2. The command, not the library, configures structlog: warnings the
library logs (timeouts, tool errors) are dropped, errors go to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

import anyio
import structlog

from ._agent import ReactAgent
from ._events import (
    Event,
    ModelCallFinished,
    ModelCallStarted,
    ModelDelta,
    RunFailed,
    RunFinished,
    RunInterrupted,
    StateUpdated,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
)
from ._messages import AssistantMessage, ToolCall, ToolResponseMessage
from ._models.base import ChatModel, ModelRequest
from ._models.openai import OpenAIChatModel
from ._models.scripted import ScriptedChatModel
from ._tools import tool

BENCH_EXTRA = "pip install 'reactcore[bench]'"


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (``reactcore bench: error: …``), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _number(convert: Callable[[str], float], low: float, what: str) -> Callable[[str], float]:
    def check(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what}, got {text!r}") from None
        if not math.isfinite(value) or value < low:
            raise argparse.ArgumentTypeError(f"{what}, got {text!r}")
        return value

    return check


_count = _number(int, 1, "must be a whole number of at least 1")
_seconds = _number(float, 0, "must be a number of at least 0")


def _positive(text: str) -> float:
    value = _seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text!r}")
    return value


def _writable(text: str) -> Path:
    """A file path the bench can write to at the end (checked now, not after the run)."""
    path = Path(text)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory")
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: no directory {str(parent)!r}")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: permission denied")
    return path


# --- bench ------------------------------------------------------------------------------


def _add_bench(commands: argparse._SubParsersAction[_Parser]) -> None:
    from ._bench.workloads import WORKLOADS

    p = commands.add_parser(
        "bench",
        help="measure tool scheduling against the seed's thread-pool design",
        description=(
            "Run batches of N tool calls through AgentToolNode (or a whole ReactAgent turn "
            "with --agent): sequential, parallel under k and under N, and the seed's "
            "thread-pool + semaphore design; print a table, optionally JSON lines and a plot."
        ),
    )
    p.add_argument(
        "--workload",
        nargs="+",
        choices=[*WORKLOADS, "all"],
        default=["all"],
        metavar="NAME",
        help=f"one or several of {', '.join(WORKLOADS)}, or all (default)",
    )
    p.add_argument(
        "-n",
        "--calls",
        nargs="+",
        type=_count,
        metavar="N",
        help="batch sizes (default per workload: 10 100 1000 for io and overhead, 10 100 "
        "for the others)",
    )
    p.add_argument("--latency-ms", type=_seconds, metavar="MS", help="L (default 50; quick 10)")
    p.add_argument("--max-parallel", type=_count, default=5, metavar="K", help="k (default 5)")
    p.add_argument("--repeat", type=_count, metavar="R", help="median of R (default 5; quick 2)")
    p.add_argument(
        "--budget",
        type=_positive,
        metavar="SECONDS",
        help="skip a run whose ideal makespan exceeds this (default 2.5; quick 0.25)",
    )
    p.add_argument("--backend", choices=("asyncio", "trio", "both"), default="both")
    p.add_argument("--agent", action="store_true", help="run whole ReactAgent turns")
    p.add_argument("--quick", action="store_true", help="tiny N, R = 2: a few seconds")
    p.add_argument("--json", type=_writable, metavar="PATH", help="write JSON lines here")
    p.add_argument("--plot", type=_writable, metavar="PATH", help="write a PNG plot here")
    p.set_defaults(handler=_bench, subparser=p)


def _missing(modules: Sequence[str]) -> str | None:
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            return name
    return None


def _bench(args: argparse.Namespace, argv: Sequence[str]) -> int:
    missing = _missing(["rich", *(["matplotlib"] if args.plot else [])])
    if missing is not None:
        print(
            f"reactcore bench: {missing} is missing; install the bench extra: {BENCH_EXTRA}",
            file=sys.stderr,
        )
        return 2
    from ._bench.command import run
    from ._bench.measure import Plan
    from ._bench.workloads import WORKLOADS

    names = list(WORKLOADS) if "all" in args.workload else list(dict.fromkeys(args.workload))
    quick = bool(args.quick)
    latency_ms = args.latency_ms if args.latency_ms is not None else (10 if quick else 50)
    plan = Plan(
        tuple(WORKLOADS[name] for name in names),
        sizes=tuple(args.calls) if args.calls else None,
        latency=latency_ms / 1000,
        max_parallel=args.max_parallel,
        repeat=args.repeat or (2 if quick else 5),
        backends=("asyncio", "trio") if args.backend == "both" else (args.backend,),
        agent=bool(args.agent),
        budget=args.budget or (0.25 if quick else 2.5),
        quick=quick,
    )
    return run(plan, args.json, args.plot, f"reactcore {shlex.join(argv)}")


# --- demo -------------------------------------------------------------------------------

_QUESTION = "What is the weather in Paris today, and how many people live there?"


@tool
async def weather(city: str) -> str:
    """Today's weather in a city (an async tool: 0.3 s of network I/O)."""
    await anyio.sleep(0.3)
    return {"Paris": "sunny, 21 °C", "Oslo": "snow, -4 °C"}.get(city, "cloudy, 15 °C")


@tool
def population(city: str) -> int:
    """How many people live in a city (a blocking tool: 0.2 s in a worker thread)."""
    time.sleep(0.2)
    return {"Paris": 2_102_650, "Oslo": 717_710}.get(city, 1_000_000)


def _final_answer(request: ModelRequest) -> AssistantMessage:
    answers = [m for m in request.messages if isinstance(m, ToolResponseMessage)][-1]
    found = {r.name: r.response_data for r in answers.responses}
    return AssistantMessage(
        f"In Paris it is {found['weather']} today, and {int(found['population']):,} "
        "people live there."
    )


def _scripted_model() -> ScriptedChatModel:
    calls = [
        ToolCall("call_1", "weather", '{"city": "Paris"}'),
        ToolCall("call_2", "population", '{"city": "Paris"}'),
    ]
    first = AssistantMessage("Let me look up both at once.", calls)
    return ScriptedChatModel([first, _final_answer], chunk_size=5)


def _model(args: argparse.Namespace) -> ChatModel | str:
    """The demo's model, or why a real endpoint cannot be used."""
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    name = args.model or os.environ.get("REACTCORE_MODEL")
    if args.scripted or not (base_url or name):
        return _scripted_model()
    if not name:
        return "a real endpoint needs a model name: pass --model or set REACTCORE_MODEL"
    if not os.environ.get("OPENAI_API_KEY"):
        return (
            "a real endpoint needs an API key: set OPENAI_API_KEY (any value for a local "
            "server that takes none)"
        )
    return OpenAIChatModel(name, base_url=base_url)


class _Printer:
    """Prints a run's events as they come: one line each, model text streamed inline."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.streaming = False
        self.exit_code = 1

    def _line(self, kind: str, text: str, *, end: str = "\n") -> None:
        elapsed = time.perf_counter() - self.start
        print(f"{elapsed:6.3f}s  {kind:<6} {text}", end=end, flush=True)

    def _stop_streaming(self) -> None:
        if self.streaming:
            print(flush=True)
            self.streaming = False

    def show(self, event: Event) -> None:
        if isinstance(event, ModelDelta):
            if event.text:
                if not self.streaming:
                    self._line("model", "", end="")
                    self.streaming = True
                print(event.text, end="", flush=True)
            return
        self._stop_streaming()
        if isinstance(event, ModelCallStarted):
            self._line("model", f"asked (call {event.iteration + 1})")
        elif isinstance(event, ModelCallFinished):
            names = ", ".join(c.name for c in event.message.tool_calls)
            self._line("model", f"answered: tool calls {names}" if names else "answered")
        elif isinstance(event, ToolCallStarted):
            self._line("tool", f"started  {event.call_id} {event.name}({event.arguments})")
        elif isinstance(event, ToolCallFinished):
            outcome = "failed" if event.is_error else "finished"
            self._line("tool", f"{outcome} {event.call_id} {event.name} in {event.duration:.3f} s")
        elif isinstance(event, ToolCallTimedOut):
            self._line("tool", f"timed out {event.call_id} {event.name} after {event.timeout:g} s")
        elif isinstance(event, ToolCallCancelled):
            self._line("tool", f"cancelled {event.call_id} {event.name}")
        elif isinstance(event, StateUpdated):
            self._line("state", f"{event.node}: {', '.join(event.keys)}")
        elif isinstance(event, RunFinished):
            self._line("done", event.result.text)
            self.exit_code = 0
        elif isinstance(event, RunFailed):
            self._line("failed", f"{type(event.error).__name__}: {event.error}")
        elif isinstance(event, RunInterrupted):
            self._line("paused", f"waiting for approval of {len(event.calls)} calls")


async def _run_demo(model: ChatModel, question: str) -> int:
    agent = ReactAgent(
        "demo",
        model,
        tools=[weather, population],
        system_prompt="You answer questions about cities. Call the tools you need at once.",
        parallel_tool_execution=True,
    )
    printer = _Printer(time.perf_counter())
    try:
        async with agent.stream(question) as events:
            async for event in events:
                printer.show(event)
    finally:
        if isinstance(model, OpenAIChatModel):
            await model.aclose()
    return printer.exit_code


def _demo(args: argparse.Namespace, argv: Sequence[str]) -> int:
    model = _model(args)
    if isinstance(model, str):
        demo: argparse.ArgumentParser = args.subparser
        demo.error(model)
    where = model.base_url if isinstance(model, OpenAIChatModel) else "a scripted model"
    print(f"demo agent on {where}, {args.backend}: {args.question}", flush=True)
    code: int = anyio.run(_run_demo, model, args.question, backend=args.backend)
    return code


def _add_demo(commands: argparse._SubParsersAction[_Parser]) -> None:
    p = commands.add_parser(
        "demo",
        help="run a small agent with two tools in parallel, printing its events",
        description=(
            "Run an agent with two tools (weather: async, population: blocking) executed in "
            "parallel, printing each event as it happens. Without a model or base URL it "
            "runs on a scripted model, with no set-up; otherwise on an OpenAI-compatible "
            "endpoint (OPENAI_BASE_URL, OPENAI_API_KEY, REACTCORE_MODEL)."
        ),
    )
    p.add_argument("question", nargs="?", default=_QUESTION, help="what to ask the agent")
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint (or OPENAI_BASE_URL)")
    p.add_argument("--model", help="the model name (or REACTCORE_MODEL)")
    p.add_argument("--scripted", action="store_true", help="use the scripted model anyway")
    p.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    p.set_defaults(handler=_demo, subparser=p)


# --- the command ------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    """The ``reactcore`` argument parser."""
    top = _Parser(prog="reactcore", description="reactcore: ReAct agents on anyio.")
    commands = top.add_subparsers(title="commands", required=True, metavar="COMMAND")
    _add_bench(commands)
    _add_demo(commands)
    return top


def _quiet_logs() -> None:
    """Library warnings (timeouts, tool errors) are expected here: errors only, to stderr."""
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``reactcore`` with ``argv`` (default: the process's); the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    _quiet_logs()
    try:
        code: int = args.handler(args, argv)
    except KeyboardInterrupt:
        print(f"reactcore {argv[0]}: interrupted", file=sys.stderr)
        return 130
    return code
