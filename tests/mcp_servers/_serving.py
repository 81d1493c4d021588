"""Running a test server (an SDK ``MCPServer``) as its script's arguments say."""

from __future__ import annotations

import socket
import sys
from typing import Any

import anyio


async def serve_http(app: Any) -> None:
    """Serve the ASGI ``app`` on 127.0.0.1 at a free port, printing ``PORT <n>`` first
    (once the socket listens: connections made before uvicorn accepts wait in the
    backlog)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    await uvicorn.Server(config).serve(sockets=[sock])


def run(server: Any) -> None:
    """``python <script> http``: streamable HTTP (see ``serve_http``); else stdio."""
    if sys.argv[1] == "http":
        anyio.run(serve_http, server.streamable_http_app())
    else:
        server.run("stdio")
