"""Benchmark: served agents — N = 1,000 concurrent streams on one server process, reactcore
beside pydantic-ai's AG-UI adapter, on the same scripted workload.

Each stream POSTs one run and reads its server-sent events to the end. The run: the model
asks for one batch of two parallel async tools (each awaits ``asyncio.sleep(50 ms)``),
then streams its answer in K = 50 text deltas (a loop checkpoint between deltas, as a
network read would give). One agent object serves every request; the fake models keep no
state per request. Apps, side by side in one run (each in its own fresh server process
per repeat, repeats interleaved):

- ``reactcore-events``: ``reactcore.serving.events_app`` (reactcore's own JSON events);
- ``reactcore-ag-ui``: ``reactcore.ag_ui.ag_ui_app`` (skipped with a note when it does not
  import; ``--ag-ui-from PATH`` puts a checkout holding it first on the server's path);
- ``pydantic-ai``: ``pydantic_ai.ui.ag_ui.AGUIAdapter.dispatch_request`` in a Starlette
  route, over ``FunctionModel(stream_function=…)`` and two ``Tool``s (skipped with a note
  when pydantic-ai is not installed: ``pip install -e '.[peers,ag-ui]'``).

The server: one process, uvicorn on asyncio (pydantic-ai is asyncio-only), h11, no access
log, on 127.0.0.1. The client: this process, a plain asyncio HTTP/1.1 client (one
connection per stream, chunked bodies and SSE framing read by hand: httpx would spend more
CPU per event than the servers do). The machine has 2 cores: by default the server is
pinned to CPU 0 and the client to CPU 1, so neither takes the other's core (``--no-pin``).

Per app and repeat:

1. warm-up: ``--warmup`` streams (imports, caches), then the idle RSS of the server
   (``VmRSS`` of ``/proc/<pid>/status``);
2. held: N streams whose tools wait (on an event, not a clock) until all 2N tool calls of
   all N streams are running — so every stream is open, mid-run — then the server's RSS:
   memory per open stream = (held RSS − idle RSS) / N; then the tools are released and
   the streams read to their end;
3. timed: N streams at once, tools sleeping 50 ms; per stream its events (SSE events with
   data; comments such as heartbeats are not counted), time to first event from sending
   the request, and duration (request sent → body ended). Figures: median events/s per
   stream (events / duration), aggregate events/s (all events / the wall time of all N),
   median and p99 time to first event, median duration, wall time.

A stream that fails (a refused connection, a status other than 200, no terminal success
event, an error event, fewer than K text deltas) is counted in ``failed`` and left out of
the figures; any failure is printed. Medians over ``--repeat`` repeats (default 3; 1 with
``--quick``, where N = 100).

    python benchmarks/bench_serving.py [--quick] [--streams N] [--repeat R] [--json PATH]
                                       [--apps a,b] [--ag-ui-from PATH] [--no-pin]

Internally the same script is the server: ``--serve APP`` (prints ``PORT <n>`` or
``SKIP <why>``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs

APPS = ("reactcore-events", "reactcore-ag-ui", "pydantic-ai")
DELTAS = 50
DELTA = "word "
TOOL_SECONDS = 0.05
HOLD_LIMIT = 120.0  # seconds a held tool waits at most for its release
QUESTION = "What is the weather in Paris and in Rome?"
ARGUMENTS = '{"city": "Paris"}'


# --- the server side --------------------------------------------------------------------


@attrs.define(eq=False)
class Workload:
    """The tools' shared switch in the server process: sleeping 50 ms, or held (waiting
    for ``release``) while the memory of open streams is measured; ``running`` counts the
    tool calls in flight."""

    holding: bool = False
    running: int = 0
    released: asyncio.Event = attrs.field(factory=asyncio.Event)

    async def tool(self, city: str) -> str:
        self.running += 1
        try:
            if self.holding:
                await asyncio.wait_for(self.released.wait(), HOLD_LIMIT)
            else:
                await asyncio.sleep(TOOL_SECONDS)
        finally:
            self.running -= 1
        return f"sunny in {city}"


def reactcore_agent(workload: Workload) -> Any:
    """A ``ReactAgent`` over ``DeltaModel`` with the two tools, run in parallel."""
    from anyio.lowlevel import checkpoint

    from reactcore import AssistantMessage, ReactAgent, ToolCall, ToolResponseMessage, tool
    from reactcore.models.base import ModelChunk, ModelRequest, ModelResponse, ToolCallDelta

    calls = (ToolCall("call_a", "lookup_a", ARGUMENTS), ToolCall("call_b", "lookup_b", ARGUMENTS))

    def answered(request: ModelRequest) -> bool:
        return isinstance(request.messages[-1], ToolResponseMessage)

    @attrs.frozen
    class DeltaModel:
        """The scripted model: tool calls first, then K text deltas; no state per request
        (what it answers depends only on the request's last message)."""

        async def call(self, request: ModelRequest) -> ModelResponse:
            if answered(request):
                return ModelResponse(AssistantMessage(DELTA * DELTAS))
            return ModelResponse(AssistantMessage("", tool_calls=calls))

        @asynccontextmanager
        async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelChunk]]:
            yield self._chunks(answered(request))

        async def _chunks(self, answer: bool) -> AsyncIterator[ModelChunk]:
            if answer:
                for _ in range(DELTAS):
                    await checkpoint()
                    yield ModelChunk(text=DELTA)
                yield ModelChunk(finish_reason="stop")
                return
            await checkpoint()
            deltas = [ToolCallDelta(i, c.id, c.name, c.arguments) for i, c in enumerate(calls)]
            yield ModelChunk(tool_calls=deltas)
            yield ModelChunk(finish_reason="tool_calls")

    async def lookup_a(city: str) -> str:
        """The weather in a city."""
        return await workload.tool(city)

    async def lookup_b(city: str) -> str:
        """The time in a city."""
        return await workload.tool(city)

    return ReactAgent(
        "bench",
        DeltaModel(),
        tools=[tool(lookup_a), tool(lookup_b)],
        parallel_tool_execution=True,
    )


def _principal(request: Any) -> str:
    # Each stream is its own user (as 1,000 browsers would be): no per-principal rate.
    return str(request.headers.get("x-user", "anonymous"))


def reactcore_events_app(workload: Workload) -> Any:
    from reactcore.serving import events_app

    return events_app(reactcore_agent(workload), authorize=_principal)


def reactcore_ag_ui_app(workload: Workload) -> Any:
    from reactcore.ag_ui import ag_ui_app

    return ag_ui_app(reactcore_agent(workload), authorize=_principal)


def pydantic_ai_app(workload: Workload) -> Any:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        last = messages[-1]
        if isinstance(last, ModelRequest) and any(
            isinstance(p, ToolReturnPart) for p in last.parts
        ):
            for _ in range(DELTAS):
                await asyncio.sleep(0)
                yield DELTA
            return
        await asyncio.sleep(0)
        yield {
            0: DeltaToolCall("lookup_a", ARGUMENTS, tool_call_id="call_a"),
            1: DeltaToolCall("lookup_b", ARGUMENTS, tool_call_id="call_b"),
        }

    async def lookup_a(city: str) -> str:
        """The weather in a city."""
        return await workload.tool(city)

    async def lookup_b(city: str) -> str:
        """The time in a city."""
        return await workload.tool(city)

    agent = Agent(FunctionModel(stream_function=stream), tools=[Tool(lookup_a), Tool(lookup_b)])

    async def run(request: Any) -> Any:
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    return Starlette(routes=[Route("/", run, methods=["POST"])])


BUILDERS: dict[str, Callable[[Workload], Any]] = {
    "reactcore-events": reactcore_events_app,
    "reactcore-ag-ui": reactcore_ag_ui_app,
    "pydantic-ai": pydantic_ai_app,
}


def with_controls(app: Any, workload: Workload) -> Any:
    """``app``, plus ``/_bench/{hold,release,running}`` for the client to hold the tools,
    release them and count the calls in flight (the same for every app)."""

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith("/_bench/"):
            await app(scope, receive, send)
            return
        if path == "/_bench/hold":
            workload.holding, workload.released = True, asyncio.Event()
        elif path == "/_bench/release":
            workload.holding = False
            workload.released.set()
        body = json.dumps({"running": workload.running}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return asgi


def serve(app_name: str) -> None:
    """Serve ``app_name`` on a free loopback port until killed; first prints ``PORT <n>``
    (or ``SKIP <why>`` when the app's library does not import)."""
    import uvicorn

    workload = Workload()
    try:
        app = BUILDERS[app_name](workload)
    except ImportError as exc:
        print(f"SKIP {app_name}: {exc}", flush=True)
        return
    logging.getLogger("reactcore").setLevel(logging.ERROR)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    config = uvicorn.Config(
        with_controls(app, workload),
        loop="asyncio",
        http="h11",
        lifespan="off",
        access_log=False,
        log_level="warning",
        backlog=4096,
        timeout_keep_alive=30,
    )
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


# --- the client side --------------------------------------------------------------------


@attrs.frozen
class Marks:
    """How a stream of one protocol shows a text delta, its successful end and an error."""

    delta: bytes
    end: bytes
    error: bytes


EVENTS_MARKS = Marks(
    b'event: model_delta\ndata: {"type":"model_delta","text":"word ',
    b"event: end\n",
    b"event: error\n",
)
AG_UI_MARKS = Marks(b'"TEXT_MESSAGE_CONTENT"', b'"RUN_FINISHED"', b'"RUN_ERROR"')
MARKS = {
    "reactcore-events": EVENTS_MARKS,
    "reactcore-ag-ui": AG_UI_MARKS,
    "pydantic-ai": AG_UI_MARKS,
}


def request_body(app_name: str, index: int) -> bytes:
    if app_name == "reactcore-events":
        return json.dumps({"input": QUESTION}).encode()
    return json.dumps(
        {
            "threadId": f"thread-{index}",
            "runId": f"run-{index}",
            "state": {},
            "messages": [{"id": f"m-{index}", "role": "user", "content": QUESTION}],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    ).encode()


@attrs.frozen
class Stream:
    """One stream as the client saw it (seconds from sending the request)."""

    ok: bool
    events: int = 0
    first_s: float | None = None
    duration_s: float = 0.0
    error: str = ""


async def _body(reader: asyncio.StreamReader, chunked: bool) -> AsyncIterator[bytes]:
    if not chunked:
        while piece := await reader.read(65536):
            yield piece
        return
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return
        yield (await reader.readexactly(size + 2))[:-2]


async def open_stream(port: int, app_name: str, index: int) -> Stream:
    """POST one run and read its events to the end of the body."""
    marks = MARKS[app_name]
    body = request_body(app_name, index)
    head = (
        f"POST / HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
        f"accept: text/event-stream\r\nx-user: user-{index}\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    start = time.perf_counter()
    events = deltas = 0
    first: float | None = None
    ended = errored = False
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    except OSError as exc:
        return Stream(False, error=f"connect: {type(exc).__name__}")
    try:
        writer.write(head + body)
        response = await reader.readuntil(b"\r\n\r\n")
        status = int(response.split(b" ", 2)[1])
        if status != 200:
            return Stream(False, error=f"status {status}")
        buffer = b""
        async for piece in _body(reader, b"transfer-encoding: chunked" in response.lower()):
            buffer += piece.replace(b"\r\n", b"\n") if b"\r" in piece else piece
            *complete, buffer = buffer.split(b"\n\n")
            for event in complete:
                if not event or all(line.startswith(b":") for line in event.split(b"\n")):
                    continue  # a comment (a heartbeat): no event
                events += 1
                if first is None:
                    first = time.perf_counter() - start
                event += b"\n"
                deltas += marks.delta in event
                ended = ended or marks.end in event
                errored = errored or marks.error in event
    except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
        return Stream(False, events, first, time.perf_counter() - start, type(exc).__name__)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    duration = time.perf_counter() - start
    problem = (
        "error event"
        if errored
        else "no end event"
        if not ended
        else f"{deltas} text deltas"
        if deltas < DELTAS
        else ""
    )
    return Stream(not problem, events, first, duration, problem)


async def control(port: int, what: str) -> int:
    """POST ``/_bench/<what>``; the tool calls running."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            f"POST /_bench/{what} HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n"
            "connection: close\r\n\r\n".encode()
        )
        answer = await reader.read()
    finally:
        writer.close()
    running: int = json.loads(answer.split(b"\r\n\r\n", 1)[1])["running"]
    return running


def rss_kib(pid: int) -> int:
    """The resident memory of process ``pid``, in KiB (``VmRSS``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


async def streams(port: int, app_name: str, n: int) -> tuple[list[Stream], float]:
    """``n`` streams at once; them and the wall time of all."""
    start = time.perf_counter()
    found = await asyncio.gather(*(open_stream(port, app_name, i) for i in range(n)))
    return list(found), time.perf_counter() - start


async def held(port: int, pid: int, app_name: str, n: int) -> tuple[int | None, list[Stream]]:
    """The server's RSS while ``n`` streams are open with all their tool calls running
    (``None`` if they did not all get there within the hold limit), and the streams."""
    await control(port, "hold")
    tasks = [asyncio.ensure_future(open_stream(port, app_name, i)) for i in range(n)]
    rss: int | None = None
    deadline = time.perf_counter() + HOLD_LIMIT / 2
    while time.perf_counter() < deadline and not all(t.done() for t in tasks):
        if await control(port, "running") >= 2 * n:
            await asyncio.sleep(0.5)  # the writes of the tool-call events settle
            rss = rss_kib(pid)
            break
        await asyncio.sleep(0.05)
    await control(port, "release")
    return rss, list(await asyncio.gather(*tasks))


@attrs.frozen
class Sample:
    """One repeat of one app."""

    idle_kib: int
    held_kib: int | None
    held_failed: int
    timed: list[Stream]
    wall_s: float

    @property
    def ok(self) -> list[Stream]:
        return [s for s in self.timed if s.ok]


@asynccontextmanager
async def server(app_name: str, pin: bool, ag_ui_from: str | None) -> AsyncIterator[Any]:
    """A fresh server process of ``app_name``: ``(pid, port)``, or a ``str`` saying why
    it was skipped."""
    env = dict(os.environ)
    if ag_ui_from and app_name == "reactcore-ag-ui":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [ag_ui_from, env.get("PYTHONPATH")]))
    process = subprocess.Popen(  # noqa: ASYNC220 (started once per sample, not timed)
        [sys.executable, __file__, "--serve", app_name],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        if pin:
            os.sched_setaffinity(process.pid, {0})
        assert process.stdout is not None
        line = await asyncio.to_thread(process.stdout.readline)
        if not line.startswith("PORT "):
            yield line.strip() or f"SKIP {app_name}: the server exited ({process.wait()})"
            return
        yield process.pid, int(line.split()[1])
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def sample(
    app_name: str, n: int, warmup: int, pin: bool, ag_ui_from: str | None
) -> Sample | str:
    async with server(app_name, pin, ag_ui_from) as found:
        if isinstance(found, str):
            return found
        pid, port = found
        for _ in range(2):
            warm, _ = await streams(port, app_name, warmup)
        bad = [s.error for s in warm if not s.ok]
        if bad:
            return f"FAIL {app_name}: warm-up streams failed: {sorted(set(bad))}"
        await asyncio.sleep(0.5)
        idle = rss_kib(pid)
        held_kib, kept = await held(port, pid, app_name, n)
        timed, wall = await streams(port, app_name, n)
        return Sample(idle, held_kib, sum(not s.ok for s in kept), timed, wall)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _p99(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def row(app_name: str, n: int, samples: Sequence[Sample]) -> dict[str, Any]:
    """One app's figures: the median over repeats of each repeat's figure."""

    def over(figure: Callable[[Sample], float | None]) -> float | None:
        return _median([v for v in map(figure, samples) if v is not None])

    def per_stream(s: Sample, f: Callable[[Stream], float | None]) -> float | None:
        return _median([v for v in map(f, s.ok) if v is not None])

    return {
        "app": app_name,
        "streams": n,
        "repeats": len(samples),
        "failed": sum(len(s.timed) - len(s.ok) + s.held_failed for s in samples),
        "failures": sorted({x.error for s in samples for x in s.timed if not x.ok}),
        "events_per_stream": over(lambda s: per_stream(s, lambda x: x.events)),
        "events_per_s_per_stream": over(lambda s: per_stream(s, lambda x: x.events / x.duration_s)),
        "aggregate_events_per_s": over(lambda s: sum(x.events for x in s.ok) / s.wall_s),
        "first_event_ms": over(
            lambda s: (per_stream(s, lambda x: x.first_s) or 0) * 1000 if s.ok else None
        ),
        "first_event_p99_ms": over(
            lambda s: (_p99([x.first_s for x in s.ok if x.first_s]) or 0) * 1000 if s.ok else None
        ),
        "duration_ms": over(
            lambda s: (per_stream(s, lambda x: x.duration_s) or 0) * 1000 if s.ok else None
        ),
        "wall_s": over(lambda s: s.wall_s),
        "idle_rss_mib": over(lambda s: s.idle_kib / 1024),
        "held_rss_mib": over(lambda s: None if s.held_kib is None else s.held_kib / 1024),
        "kib_per_open_stream": over(
            lambda s: None if s.held_kib is None else (s.held_kib - s.idle_kib) / n
        ),
    }


def fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    print(
        f"{'app':<17} {'N':>5} {'failed':>6} {'ev/stream':>9} {'ev/s/stream':>11}"
        f" {'agg ev/s':>9} {'1st ev ms':>9} {'p99 1st':>8} {'dur ms':>7} {'wall s':>7}"
        f" {'idle MiB':>8} {'KiB/open':>8}"
    )
    for r in rows:
        print(
            f"{r['app']:<17} {r['streams']:>5} {r['failed']:>6}"
            f" {fmt(r['events_per_stream'], '.0f'):>9}"
            f" {fmt(r['events_per_s_per_stream'], '.0f'):>11}"
            f" {fmt(r['aggregate_events_per_s'], '.0f'):>9}"
            f" {fmt(r['first_event_ms'], '.0f'):>9} {fmt(r['first_event_p99_ms'], '.0f'):>8}"
            f" {fmt(r['duration_ms'], '.0f'):>7} {fmt(r['wall_s'], '.2f'):>7}"
            f" {fmt(r['idle_rss_mib'], '.1f'):>8} {fmt(r['kib_per_open_stream'], '.1f'):>8}"
        )
        if r["failures"]:
            print(f"  {r['app']}: failures: {', '.join(r['failures'])}")


async def bench(args: argparse.Namespace) -> list[dict[str, Any]]:
    n = args.streams or (100 if args.quick else 1000)
    repeat = args.repeat or (1 if args.quick else 3)
    warmup = min(20, n)
    apps = [a for a in args.apps.split(",") if a]
    if args.pin:
        os.sched_setaffinity(0, {1})
    samples: dict[str, list[Sample]] = {a: [] for a in apps}
    notes: dict[str, str] = {}
    for _ in range(repeat):
        for app_name in apps:
            if app_name in notes:
                continue
            found = await sample(app_name, n, warmup, args.pin, args.ag_ui_from)
            if isinstance(found, str):
                notes[app_name] = found
                print(found, flush=True)
                continue
            samples[app_name].append(found)
    return [row(a, n, samples[a]) for a in apps if samples[a]]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 100, 1 repeat")
    parser.add_argument("--streams", type=int, help="N (default 1000; 100 quick)")
    parser.add_argument("--repeat", type=int, help="repeats (default 3; 1 quick)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument(
        "--apps", default=",".join(APPS), help="comma-separated: " + ", ".join(APPS)
    )
    parser.add_argument("--ag-ui-from", metavar="PATH", help="where reactcore.ag_ui comes from")
    parser.add_argument("--no-pin", dest="pin", action="store_false", help="no CPU pinning")
    parser.add_argument("--serve", choices=APPS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return
    unknown = set(args.apps.split(",")) - set(APPS) - {""}
    if unknown:
        parser.error(f"--apps: unknown {sorted(unknown)}")
    if args.pin and (os.cpu_count() or 1) < 2:
        args.pin = False
    rows = asyncio.run(bench(args))
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
