"""The ``reactcore`` command: ``bench``, ``demo``, ``timeline`` and ``view``.

``bench`` measures reactcore's tool scheduling against a port of the seed's design (see
``reactcore._bench``); it needs the ``bench`` extra. ``demo`` runs a small agent with two
tools in parallel and prints its events as they happen, on a scripted model or on any
OpenAI-compatible endpoint. ``timeline`` draws a run's event log (``reactcore.viewer``) as
one self-contained HTML page (or a thread's checkpoints in a SQLite saver, timed step by
step); ``view`` serves, on 127.0.0.1 only, the event logs of a folder and the threads of a
SQLite saver drawn the same way (local development; needs the ``view`` extra).

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
import sqlite3
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import anyio
import structlog

from ._demo import QUESTION, demo_model, run_demo
from .models.openai import OpenAIChatModel

if TYPE_CHECKING:
    from .viewer import Timeline

BENCH_EXTRA = "pip install 'reactcore[bench]'"
VIEW_EXTRA = "pip install 'reactcore[view]'"


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
        help="skip a run whose ideal makespan exceeds this (default 2.5; quick 0.6)",
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
        budget=args.budget or (0.6 if quick else 2.5),
        quick=quick,
    )
    return run(plan, args.json, args.plot, f"reactcore {shlex.join(argv)}")


# --- demo -------------------------------------------------------------------------------


def _demo(args: argparse.Namespace, argv: Sequence[str]) -> int:
    model = demo_model(args)
    if isinstance(model, str):
        demo: argparse.ArgumentParser = args.subparser
        demo.error(model)
    where = model.base_url if isinstance(model, OpenAIChatModel) else "a scripted model"
    print(f"demo agent on {where}, {args.backend}: {args.question}", flush=True)
    code: int = anyio.run(run_demo, model, args.question, backend=args.backend)
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
    p.add_argument("question", nargs="?", default=QUESTION, help="what to ask the agent")
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint (or OPENAI_BASE_URL)")
    p.add_argument("--model", help="the model name (or REACTCORE_MODEL)")
    p.add_argument("--scripted", action="store_true", help="use the scripted model anyway")
    p.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    p.set_defaults(handler=_demo, subparser=p)


# --- timeline ---------------------------------------------------------------------------


def _readable(text: str) -> Path:
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"cannot read {text!r}: permission denied")
    return path


def _thread_timeline(path: Path, thread_id: str) -> Timeline:
    """The timeline of ``thread_id`` from the checkpoints of the SQLite saver at ``path``
    (``ThreadNotFound`` when it has none)."""
    from .savers import SqliteSaver
    from .viewer import timeline_of_thread

    async def read() -> Timeline:
        async with SqliteSaver(path) as saver:
            return await timeline_of_thread(saver, thread_id)

    return anyio.run(read)


def _timeline(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from .viewer import EventLogError, ThreadNotFound, timeline_html, timeline_of_file

    if (args.events is None) == (args.sqlite is None):
        args.subparser.error("give either EVENTS.jsonl or --sqlite PATH --thread ID")
    if (args.sqlite is None) != (args.thread is None):
        args.subparser.error("--sqlite PATH and --thread ID go together")
    if args.events is not None:
        source: Path = args.events
        target: Path = args.output or source.with_suffix(".html")
        name = source.name
        try:
            timeline = timeline_of_file(source)
        except EventLogError as exc:
            print(f"reactcore timeline: {source}: {exc}", file=sys.stderr)
            return 2
    else:
        target = args.output or Path("thread.html")
        name = f"thread {args.thread}"
        try:
            timeline = _thread_timeline(args.sqlite, args.thread)
        except (ThreadNotFound, ValueError, sqlite3.Error) as exc:
            print(f"reactcore timeline: {args.sqlite}: {exc}", file=sys.stderr)
            return 2
    for warning in timeline.warnings:
        print(f"reactcore timeline: warning: {warning}", file=sys.stderr)
    page = timeline_html(timeline, title=args.title or f"reactcore run: {name}")
    target.write_text(page, encoding="utf-8")
    tools, lanes = len(timeline.tools), len(timeline.lanes)
    print(f"wrote {target}: {tools} tool calls, {len(timeline.models)} model calls, {lanes} lanes")
    return 0


def _add_timeline(commands: argparse._SubParsersAction[_Parser]) -> None:
    p = commands.add_parser(
        "timeline",
        help="draw a run's event log, or a thread's checkpoints, as one HTML page",
        description=(
            'Read an event log (JSON lines: {"t": <seconds>, "event": <event JSON>}, '
            "as reactcore.viewer.open_event_log writes it; bare event objects are drawn "
            "evenly spaced), or a thread's checkpoints in a SQLite saver (--sqlite PATH "
            "--thread ID: timed step by step), and write the run's timeline as one HTML "
            "file that needs no network: tool calls in lanes, model calls, queueing, "
            "timeouts, cancellations, errors, retries, pauses for approval, subagents."
        ),
    )
    p.add_argument(
        "events", type=_readable, nargs="?", metavar="EVENTS.jsonl", help="the event log"
    )
    p.add_argument(
        "--sqlite", type=_readable, metavar="PATH", help="a SqliteSaver's file (with --thread)"
    )
    p.add_argument("--thread", metavar="ID", help="the thread to draw from its checkpoints")
    p.add_argument(
        "-o",
        "--output",
        type=_writable,
        metavar="PATH",
        help="the HTML file to write (default: EVENTS with the suffix .html; thread.html)",
    )
    p.add_argument("--title", help="the page's title (default: the event log's name)")
    p.set_defaults(handler=_timeline, subparser=p)


# --- view -------------------------------------------------------------------------------


def _folder(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"no such folder: {text!r}")
    return path


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535, got {text!r}")
    return int(text)


def _view(args: argparse.Namespace, argv: Sequence[str]) -> int:
    import socket

    missing = _missing(["starlette", "uvicorn"])
    if missing is not None:
        print(f"reactcore view: {missing} is not installed: {VIEW_EXTRA}", file=sys.stderr)
        return 2
    import uvicorn

    from .viewer._logs import logs_app

    if args.events is None and args.sqlite is None:
        args.events = Path(".")
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", args.port))
    except OSError as exc:
        sock.close()
        print(f"reactcore view: cannot listen on 127.0.0.1:{args.port}: {exc}", file=sys.stderr)
        return 2
    sock.listen(64)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    what = " and ".join(
        f"the {kind} of {where}"
        for kind, where in (("event logs", args.events), ("threads", args.sqlite))
        if where is not None
    )
    print(f"serving {what} at {url} (Ctrl-C stops)", flush=True)
    app = logs_app(args.events, sqlite=args.sqlite)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    with sock:
        uvicorn.Server(config).run(sockets=[sock])
    return 0


def _add_view(commands: argparse._SubParsersAction[_Parser]) -> None:
    p = commands.add_parser(
        "view",
        help="serve event logs or a saver's threads as timeline pages on 127.0.0.1",
        description=(
            "Serve, on 127.0.0.1 only, a page listing the event logs (*.jsonl, as "
            "reactcore.viewer.open_event_log writes them) of a folder; each opens drawn as "
            "its run's timeline, read again on every reload; with --sqlite PATH, the threads "
            "of a SqliteSaver, each drawn from its checkpoints. For local development: there "
            f"is no login. Needs Starlette and uvicorn: {VIEW_EXTRA}."
        ),
    )
    p.add_argument(
        "--events", type=_folder, metavar="DIR", help="the folder (default: ., without --sqlite)"
    )
    p.add_argument(
        "--sqlite", type=_readable, metavar="PATH", help="a SqliteSaver's file: list its threads"
    )
    p.add_argument(
        "--port", type=_port, default=8765, help="the port (default: 8765; 0: any free one)"
    )
    p.set_defaults(handler=_view, subparser=p)


# --- the command ------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    """The ``reactcore`` argument parser."""
    top = _Parser(prog="reactcore", description="reactcore: ReAct agents on anyio.")
    commands = top.add_subparsers(title="commands", required=True, metavar="COMMAND")
    _add_bench(commands)
    _add_demo(commands)
    _add_timeline(commands)
    _add_view(commands)
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
