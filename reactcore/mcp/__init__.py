"""reactcore.mcp: tools from Model Context Protocol servers, and an agent as an MCP server.

Needs the ``mcp`` extra (``pip install 'reactcore[mcp]'``); ``import reactcore`` never
imports the SDK.
"""

from __future__ import annotations

from .._exceptions import MCPError as MCPError
from ._serve import serve as serve
from ._toolset import MCPToolset as MCPToolset
from ._transports import SSE as SSE
from ._transports import Stdio as Stdio
from ._transports import StreamableHTTP as StreamableHTTP

__all__ = [
    "MCPError",
    "MCPToolset",
    "SSE",
    "Stdio",
    "StreamableHTTP",
    "serve",
]
