"""A real MCP server over streamable HTTP that wants a bearer token (for the auth tests).

``python bearer_server.py http <log>`` serves on 127.0.0.1 at a free port and prints
``PORT <n>`` first. Every request must carry ``Authorization: Bearer fresh-<n>``; any
other token (``expired-<n>``, say) or none is answered 401 with a ``WWW-Authenticate``
header, as a resource server answers an expired token. Each request logs the token it
carried and whether it was let in (a JSON line in ``<log>``), so the tests see what was
sent. Its tools: ``echo(text)`` answers ``text``; ``revoke(token)`` makes ``token``
expired from the next request on (a token expiring mid-session).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from _serving import serve_http
from mcp.server.mcpserver import MCPServer

server = MCPServer("test-bearer", log_level="WARNING")
_revoked: set[str] = set()


@server.tool()
def echo(text: str) -> str:
    """Answer the text."""
    return text


@server.tool()
def revoke(token: str) -> str:
    """Refuse ``token`` from now on."""
    _revoked.add(token)
    return "revoked"


def guarded(app: Any, log: str) -> Any:
    """``app`` behind a bearer check: only tokens starting ``fresh-`` get through."""

    async def guard(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        value = headers.get(b"authorization", b"").decode()
        token = value.removeprefix("Bearer ") if value.startswith("Bearer ") else None
        allowed = token is not None and token.startswith("fresh-") and token not in _revoked
        with open(log, "a", encoding="utf-8") as file:  # noqa: ASYNC230 (a test log line)
            file.write(json.dumps({"event": "request", "token": token, "allowed": allowed}))
            file.write("\n")
        if allowed:
            await app(scope, receive, send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"text/plain"),
                    (b"www-authenticate", b'Bearer error="invalid_token"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b"invalid token"})

    return guard


if __name__ == "__main__":
    anyio.run(serve_http, guarded(server.streamable_http_app(), sys.argv[2]))
