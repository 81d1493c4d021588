"""Benchmark: the per-call cost of an MCP tool (over stdio and streamable HTTP) against a
local tool, through the same ``AgentToolNode``.

The server is this file run with ``--server stdio`` or ``--server http`` (the SDK's
``MCPServer`` with one ``echo`` tool; HTTP on 127.0.0.1 with uvicorn). Every case runs N
calls of ``echo`` in one batch:

- ``local``: a local async ``echo`` tool (the baseline);
- ``sdk``: the SDK's ``ClientSession.call_tool`` awaited N times, no reactcore (what the
  protocol and the transport cost by themselves);
- ``node-seq`` / ``node-par``: the MCP tool through ``AgentToolNode``, sequential, and
  parallel with ``max_parallel_tools=8`` (the toolset's own limit is 8 too).

The cases are timed in turns (local, sdk, node-seq, node-par, again …), so the drift of a
noisy machine weighs on all alike. Columns: median wall time of a batch, µs per call,
ratio to ``local`` (``×local``) and, for the node rows, to the SDK's bare sequential calls
(``×sdk``: what reactcore adds on top of the protocol).

    python benchmarks/bench_mcp.py [--quick] [--backend asyncio|trio|both]
                                   [--repeat R] [--json PATH]
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anyio
import attrs
from _common import backends, fmt, parse

from reactcore import AgentToolNode, AssistantMessage, OverAllState, ToolCall, UserMessage, tool
from reactcore.mcp import MCPToolset


@attrs.frozen
class Plan:
    calls: int
    repeat: int


QUICK = Plan(calls=50, repeat=3)
FULL = Plan(calls=500, repeat=5)


@attrs.frozen
class Row:
    backend: str
    transport: str
    case: str
    n: int
    median_s: float
    local_s: float
    sdk_s: float | None

    @property
    def us_per_call(self) -> float:
        return self.median_s / self.n * 1e6

    @property
    def vs_local(self) -> float:
        return self.median_s / self.local_s

    @property
    def vs_sdk(self) -> float | None:
        return None if self.sdk_s is None else self.median_s / self.sdk_s


# --- the server --------------------------------------------------------------------------


def run_server(kind: str) -> None:
    """The benchmark's MCP server: one ``echo`` tool."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", log_level="WARNING")

    @server.tool(structured_output=False)
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    serve(server, kind)


def serve(server: Any, kind: str) -> None:
    """Run ``server`` over ``kind``: stdio, or HTTP on a free port printed first."""
    if kind == "stdio":
        server.run("stdio")
        return
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    anyio.run(uvicorn.Server(config).serve, [sock])


@contextmanager
def http_server(script: str = __file__) -> Iterator[str]:
    """The server of ``script`` (run with ``--server http``) in a subprocess; its URL."""
    proc = subprocess.Popen(
        [sys.executable, script, "--server", "http"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


# --- the cases ---------------------------------------------------------------------------


def batch(n: int) -> OverAllState:
    calls = [ToolCall(f"c{i}", "echo", '{"text": "hi"}') for i in range(n)]
    return OverAllState({"messages": [UserMessage("go"), AssistantMessage("", calls)]})


async def medians(runs: Sequence[Callable[[], Awaitable[Any]]], repeat: int) -> list[float]:
    """The median time of each of ``runs``, taken in turns (a noisy machine's drift then
    weighs on every case alike), after one warm-up each."""
    for run in runs:
        await run()  # warm up: connections, caches, first-call costs
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for run, taken in zip(runs, times, strict=True):
            start = time.perf_counter()
            await run()
            taken.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def node_run(node: AgentToolNode, state: OverAllState) -> Callable[[], Awaitable[Any]]:
    async def run() -> None:
        await node(state)

    return run


async def measure(backend: str, transport: str, url: str, plan: Plan) -> list[Row]:
    n = plan.calls

    @tool
    async def echo(text: str) -> str:
        """Say the text back."""
        return text

    local_node = AgentToolNode([echo])
    if transport == "stdio":
        toolset = MCPToolset.stdio(sys.executable, [__file__, "--server", "stdio"])
    else:
        toolset = MCPToolset.streamable_http(url)
    async with toolset:
        session = toolset.session

        async def sdk() -> None:
            for _ in range(n):
                await session.call_tool("echo", {"text": "hi"})

        seq = AgentToolNode(tool_resolver=toolset.resolve)
        par = AgentToolNode(
            tool_resolver=toolset.resolve, parallel_tool_execution=True, max_parallel_tools=8
        )
        state = batch(n)
        runs = [node_run(local_node, state), sdk, node_run(seq, state), node_run(par, state)]
        local, sdk_s, seq_s, par_s = await medians(runs, plan.repeat)
    return [
        Row(backend, transport, "local", n, local, local, None),
        Row(backend, transport, "sdk", n, sdk_s, local, None),
        Row(backend, transport, "node-seq", n, seq_s, local, sdk_s),
        Row(backend, transport, "node-par", n, par_s, local, sdk_s),
    ]


def print_table(rows: Sequence[Row]) -> None:
    head = (
        f"{'transport':<9} {'backend':<8} {'case':<9} {'N':>5} {'median ms':>10} "
        f"{'µs/call':>9} {'×local':>8} {'×sdk':>6}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.transport:<9} {r.backend:<8} {r.case:<9} {r.n:>5} {r.median_s * 1e3:>10.2f} "
            f"{r.us_per_call:>9.1f} {r.vs_local:>8.1f} {fmt(r.vs_sdk, '.2f'):>6}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    rows: list[Row] = []
    with http_server() as url:
        for transport in ("stdio", "http"):
            for backend in backends(args):
                rows += anyio.run(measure, backend, transport, url, plan, backend=backend)
    print_table(rows)
    if args.json:
        data = [attrs.asdict(r) | {"us_per_call": r.us_per_call} for r in rows]
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)


if __name__ == "__main__":
    if "--server" in sys.argv:
        run_server(sys.argv[sys.argv.index("--server") + 1])
    else:
        main()
