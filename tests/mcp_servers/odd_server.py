"""A real MCP server whose tools are odd in the ways real servers are (for the tests).

``python odd_server.py stdio`` serves on stdin/stdout; ``python odd_server.py http`` (or
``sse``) serves on 127.0.0.1 at a free port and prints ``PORT <n>`` first.

It lists tools the SDK's decorator would not make: names providers reject (a space, a
slash, non-ASCII, empty, 70 characters, and ``a b`` beside ``a_b``), an input schema
with ``"properties": 5``, one with a dangling ``$ref``; and ``big``, whose result is
``size`` bytes of text. Every other tool answers with its own name and its arguments, so
a test sees which server tool a call reached.
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as MCPTool
from mcp_types import methods

_serialize = methods.serialize_server_result


def _as_listed(method: str, version: str, data: Any, **options: Any) -> Any:
    """The SDK's check of outgoing results, but not for ``tools/list``: its listing goes
    out as it is, as a server not built on the Python SDK sends it."""
    if method == "tools/list":
        return dict(data)
    return _serialize(method, version, data, **options)


methods.serialize_server_result = _as_listed

OBJECT: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "string"}}}
LONG = "l" * 70
SCHEMAS: dict[str, dict[str, Any]] = {
    "echo": OBJECT,
    "my tool": OBJECT,
    "files/read": OBJECT,
    "café": OBJECT,
    "": OBJECT,
    LONG: OBJECT,
    "a b": OBJECT,
    "a_b": OBJECT,
    "bad_properties": {"type": "object", "properties": 5},
    "dangling_ref": {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/missing"}},
    },
    "big": {"type": "object", "properties": {"size": {"type": "integer"}}},
}


class OddServer(MCPServer):
    """Lists ``SCHEMAS`` as they are and answers calls without the SDK's checks."""

    async def list_tools(self) -> list[MCPTool]:
        return [
            MCPTool(name=name, description=f"tool {name!r}", input_schema=schema)
            for name, schema in SCHEMAS.items()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult:
        if name == "big":
            text = "x" * int(arguments["size"])
        else:
            text = json.dumps({"tool": name, "arguments": arguments}, ensure_ascii=False)
        return CallToolResult(content=[TextContent(type="text", text=text)])


server = OddServer("odd-tools", log_level="WARNING")


async def serve_http(kind: str) -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = server.streamable_http_app() if kind == "http" else server.sse_app()
    config = uvicorn.Config(app, log_level="warning")
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1] in ("http", "sse"):
        anyio.run(serve_http, sys.argv[1])
    else:
        server.run("stdio")
