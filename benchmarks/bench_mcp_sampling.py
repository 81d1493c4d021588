"""Benchmark: what a server's sampling request costs, against a direct model call.

The server is this file run with ``--server stdio`` or ``--server http`` (the SDK's
``MCPServer``): ``plain(text)`` answers at once; ``summarise(text)`` first asks the
client's model (``sampling/createMessage``). The model answers at once (no network), so
what is timed is the machinery. Each case is one agent run whose first turn asks for N
sequential calls:

- ``plain``: N calls of ``plain`` (the baseline: a tool call and the agent around it);
- ``refused``: N calls of ``summarise`` on a toolset without sampling (the server's
  request goes to the client and back, refused: the protocol's round trip);
- ``sampled``: N calls of ``summarise`` with ``sampling=True`` (the request handed to the
  call, counted, through the agent's interceptors, with its events, answered by the model);
- ``direct``: N direct ``model.call`` of the same request, no MCP (the model call alone).

The cases are timed in turns (medians of R). Printed per call: the sampling round trip
(``sampled - plain``), its reactcore part (``sampled - refused``), and the direct model call.

    python benchmarks/bench_mcp_sampling.py [--quick] [--backend asyncio|trio|both]
                                            [--repeat R] [--json PATH]
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import attrs
import mcp.types as mt
from _common import backends, parse
from bench_mcp import http_server, medians, serve
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from reactcore import AssistantMessage, ReactAgent, RunnableConfig, ToolCall, UserMessage
from reactcore.mcp import MCPToolset
from reactcore.models.base import ModelRequest, ModelResponse


@attrs.frozen
class Plan:
    calls: int
    repeat: int


WHOLE = RunnableConfig(metadata={"_stream_": False})  # the model answers whole
QUICK = Plan(calls=20, repeat=3)
FULL = Plan(calls=200, repeat=5)


def run_server(kind: str) -> None:
    """The benchmark's MCP server: ``plain`` and ``summarise``."""
    server = MCPServer("bench-sampling", log_level="WARNING")

    @server.tool(structured_output=False)
    def plain(text: str) -> str:
        """Say the text back."""
        return text

    @server.tool(structured_output=False)
    async def summarise(text: str, ctx: Context) -> str:
        """Ask the client's model."""
        message = mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=text))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = await ctx.request_context.session.create_message(
                    [message], max_tokens=20, related_request_id=ctx.request_id
                )
        except MCPError as exc:
            return exc.error.message
        return str(result.content.text)  # type: ignore[union-attr]

    serve(server, kind)


@attrs.define
class InstantModel:
    """Answers at once: N sequential calls of ``tool`` first, ``ok`` to a sampling
    request, ``done`` once the tools answered."""

    tool: str
    n: int

    def _reply(self, request: ModelRequest) -> AssistantMessage:
        if request.purpose == "mcp_sampling":
            return AssistantMessage("ok")
        if isinstance(request.messages[-1], UserMessage):
            args = '{"text": "a text"}'
            calls = [ToolCall(f"c{i}", self.tool, args) for i in range(self.n)]
            return AssistantMessage("", calls)
        return AssistantMessage("done")

    async def call(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(self._reply(request))

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        raise NotImplementedError("the benchmark asks for whole answers")
        yield


def toolset(transport: str, url: str, **options: Any) -> MCPToolset:
    if transport == "stdio":
        return MCPToolset.stdio(sys.executable, [__file__, "--server", "stdio"], **options)
    return MCPToolset.streamable_http(url, **options)


async def measure(backend: str, transport: str, url: str, plan: Plan) -> dict[str, Any]:
    n = plan.calls
    off, on = toolset(transport, url), toolset(transport, url, sampling=True)
    async with off, on:

        def agent_run(tools: MCPToolset, tool: str) -> Callable[[], Awaitable[None]]:
            model = InstantModel(tool, n)

            async def run() -> None:
                agent = ReactAgent("bench", model, tools=[tools])
                result = await agent.invoke("go", WHOLE)
                assert result.text == "done"

            return run

        model = InstantModel("summarise", n)
        request = ModelRequest([UserMessage("a text")], purpose="mcp_sampling")

        async def direct() -> None:
            for _ in range(n):
                await model.call(request)

        runs = [
            agent_run(off, "plain"),
            agent_run(off, "summarise"),
            agent_run(on, "summarise"),
            direct,
        ]
        plain, refused, sampled, direct_s = await medians(runs, plan.repeat)
    per = 1e6 / n
    return {
        "backend": backend,
        "transport": transport,
        "n": n,
        "plain_us": plain * per,
        "refused_us": refused * per,
        "sampled_us": sampled * per,
        "direct_us": direct_s * per,
        "round_trip_us": (sampled - plain) * per,
        "reactcore_us": (sampled - refused) * per,
    }


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    rows: list[dict[str, Any]] = []
    with http_server(__file__) as url:
        for backend in backends(args):
            for transport in ("stdio", "http"):
                rows.append(anyio.run(measure, backend, transport, url, plan, backend=backend))
    head = (
        f"{'transport':<9} {'backend':<8} {'N':>4} {'plain µs':>9} {'refused':>9} "
        f"{'sampled':>9} {'round trip':>11} {'reactcore':>10} {'direct':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['transport']:<9} {r['backend']:<8} {r['n']:>4} {r['plain_us']:>9.0f} "
            f"{r['refused_us']:>9.0f} {r['sampled_us']:>9.0f} {r['round_trip_us']:>11.0f} "
            f"{r['reactcore_us']:>10.0f} {r['direct_us']:>7.1f}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--server":
        run_server(sys.argv[2])
    else:
        main()
