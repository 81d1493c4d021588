"""A real MCP server for the tests (the SDK's ``MCPServer``), over stdio or streamable HTTP.

``python tools_server.py stdio LOG`` serves on stdin/stdout; ``python tools_server.py http
LOG`` serves streamable HTTP (``sse``: the legacy SSE transport) on 127.0.0.1 at a free
port and prints ``PORT <n>`` first.
Every event the tests check is appended to LOG as one JSON line: the tool handlers'
starts, ends and cancellations (with the request id), and each ``notifications/cancelled``
the server received (seen by a middleware, before the SDK applies it).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent

LOG = sys.argv[2] if len(sys.argv) > 2 else os.devnull
_active: dict[str, int] = {}
_peak: dict[str, int] = {}


def record(event: str, **fields: Any) -> None:
    """Append one event to the log (one line, flushed: the test reads it while we run)."""
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": event, "pid": os.getpid(), **fields}) + "\n")


async def observe_cancellations(ctx: Any, call_next: Any) -> Any:
    """Middleware: log every ``notifications/cancelled`` with the request id it names."""
    if ctx.method == "notifications/cancelled":
        record("cancel_notification", request_id=str((ctx.params or {}).get("requestId")))
    return await call_next(ctx)


server = MCPServer("test-tools", log_level="WARNING", middleware=[observe_cancellations])


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers; the sum comes as structured content."""
    return {"sum": a + b}


@server.tool()
def lookup(kind: str, limit: int = 3, tags: list[str] | None = None) -> str:
    """Look things up (a schema with an enum-like string, a default and an array)."""
    return f"{kind}:{limit}:{','.join(tags or [])}"


@server.tool()
def fail(message: str) -> CallToolResult:
    """Answer with an error result (``isError: true``)."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


@server.tool(structured_output=False)
def picture() -> list[Any]:
    """A caption and a tiny PNG."""
    return [
        TextContent(type="text", text="a red dot"),
        ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
    ]


@server.tool()
async def work(tag: str, seconds: float, ctx: Context) -> str:
    """Work for ``seconds``; the server keeps the peak number of ``tag`` calls at once."""
    _active[tag] = _active.get(tag, 0) + 1
    _peak[tag] = max(_peak.get(tag, 0), _active[tag])
    try:
        await anyio.sleep(seconds)
    finally:
        _active[tag] -= 1
    return f"worked {tag}"


@server.tool()
def peak(tag: str) -> int:
    """The most ``work`` calls of ``tag`` that ran at once."""
    return _peak.get(tag, 0)


@server.tool()
async def block(tag: str, ctx: Context) -> str:
    """Run until cancelled, logging the start and the cancellation with the request id."""
    record("started", tag=tag, request_id=ctx.request_id)
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        record("handler_cancelled", tag=tag, request_id=ctx.request_id)
        raise
    return "never"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called ``name`` and tell the client the tool list changed."""

    def added(text: str) -> str:
        return f"{name}: {text}"

    server.add_tool(added, name=name, description=f"A tool added at run time ({name}).")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def where(variable: str, ctx: Context) -> str:
    """The server's working directory, an environment variable, and a request header."""
    request = ctx.request_context.request
    header = request.headers.get("x-test") if request is not None else None
    return f"{os.getcwd()} {os.environ.get(variable)} {header}"


async def serve_http(kind: str) -> None:
    """Serve ``kind`` ("http": streamable HTTP at /mcp, "sse": legacy SSE at /sse)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections made before uvicorn accepts wait in the backlog
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = server.streamable_http_app() if kind == "http" else server.sse_app()
    config = uvicorn.Config(app, log_level="warning")
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1] in ("http", "sse"):
        anyio.run(serve_http, sys.argv[1])
    else:
        server.run("stdio")
