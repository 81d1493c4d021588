"""A real MCP server (the SDK's ``MCPServer``) with resources, prompts, annotated tools and
structured output, for the tests of everything beside plain tool calls.

``python catalog_server.py stdio`` serves on stdin/stdout; ``python catalog_server.py
http`` serves streamable HTTP on 127.0.0.1 at a free port and prints ``PORT <n>`` first.

- Resources: ``notes://todo`` (text), ``images://dot.png`` (a PNG, binary),
  ``files://report.bin`` (other bytes); a template ``notes://{title}``; ``touch(uri)``
  changes a note and tells the client if it subscribed to it (``resources/subscribe``,
  which ``MCPServer`` leaves to the low-level server, is served here); ``crash`` ends
  the process.
- Prompts: ``review(code)`` (a user and an assistant message), ``look`` (an image).
- Annotated tools: ``delete_note`` (destructive), ``read_flaky`` (read-only and
  idempotent) and ``append_flaky`` (neither): both flaky ones fail the first time a tag
  is seen; ``attempts(tag)`` says how often a tag was called.
- Structured output: ``forecast(city)`` declares an output schema and fits it;
  ``bad_forecast`` (listed by hand) declares one and answers with content that does not fit.
"""

from __future__ import annotations

import os
from typing import Any

import mcp.types as mt
from _serving import run
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
REPORT = bytes(range(7))
NOTES = {"todo": "milk, eggs"}
_attempts: dict[str, int] = {}
_subscribed: set[str] = set()  # URIs a client subscribed to


class Forecast(BaseModel):
    city: str
    temp: float


BAD_FORECAST = mt.Tool(
    name="bad_forecast",
    description="Declares an output schema and answers with content that does not fit it.",
    input_schema={"type": "object", "properties": {}},
    output_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
        "required": ["city", "temp"],
    },
)


class CatalogServer(MCPServer):
    """Lists ``bad_forecast`` beside the decorated tools, and answers it without the SDK's
    checks of outgoing structured content."""

    async def list_tools(self) -> list[mt.Tool]:
        return [*await super().list_tools(), BAD_FORECAST]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        if name == "bad_forecast":
            return mt.CallToolResult(
                content=[mt.TextContent(type="text", text="warm")],
                structured_content={"city": "Oslo", "temp": "warm"},
            )
        return await super().call_tool(name, arguments, context)


server = CatalogServer("catalog", log_level="WARNING")


@server.resource("notes://todo", name="todo", description="What to buy.", mime_type="text/plain")
def todo() -> str:
    return NOTES["todo"]


@server.resource("images://dot.png", name="dot", mime_type="image/png")
def dot() -> bytes:
    return PNG


@server.resource("files://report.bin", name="report", mime_type="application/octet-stream")
def report() -> bytes:
    return REPORT


@server.resource("notes://{title}", name="note", description="A note by its title.")
def note(title: str) -> str:
    return NOTES.get(title, f"no note {title}")


async def subscribe(ctx: Any, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
    _subscribed.add(params.uri)
    return mt.EmptyResult()


async def unsubscribe(ctx: Any, params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
    _subscribed.discard(params.uri)
    return mt.EmptyResult()


server._lowlevel_server.add_request_handler(
    "resources/subscribe", mt.SubscribeRequestParams, subscribe
)
server._lowlevel_server.add_request_handler(
    "resources/unsubscribe", mt.UnsubscribeRequestParams, unsubscribe
)


@server.tool()
async def touch(uri: str, text: str, ctx: Context) -> bool:
    """Change the note at ``uri``; tell the client if it subscribed to it (the answer)."""
    NOTES[uri.removeprefix("notes://")] = text
    if uri not in _subscribed:
        return False
    await ctx.request_context.session.send_resource_updated(uri)
    return True


@server.tool()
def crash() -> str:
    """End the server's process at once, as a crash does."""
    os._exit(1)


@server.prompt(description="Ask for a code review.")
def review(code: str, language: str = "python") -> list[Any]:
    return [
        UserMessage(f"Review this {language} code:\n{code}"),
        AssistantMessage("I will look at naming first."),
    ]


@server.prompt()
def look() -> list[Any]:
    """Ask about an image."""
    import base64

    data = base64.b64encode(PNG).decode()
    return [UserMessage(mt.ImageContent(type="image", data=data, mime_type="image/png"))]


@server.tool(annotations=mt.ToolAnnotations(destructive_hint=True, read_only_hint=False))
def delete_note(title: str) -> str:
    """Delete a note."""
    NOTES.pop(title, None)
    return f"deleted {title}"


def _flaky(tag: str) -> str:
    """Fail the first call of ``tag`` with a JSON-RPC error (an exception on the client:
    what a retry interceptor sees; an ``isError`` result is an answer, not a failure)."""
    _attempts[tag] = _attempts.get(tag, 0) + 1
    if _attempts[tag] == 1:
        raise MCPError(mt.INTERNAL_ERROR, f"flaky {tag}")
    return f"ok {tag}"


@server.tool(annotations=mt.ToolAnnotations(read_only_hint=True, idempotent_hint=True))
def read_flaky(tag: str) -> str:
    """Fails the first time a tag is seen (read-only, idempotent)."""
    return _flaky(tag)


@server.tool(annotations=mt.ToolAnnotations(idempotent_hint=False, destructive_hint=False))
def append_flaky(tag: str) -> str:
    """Fails the first time a tag is seen (not idempotent)."""
    return _flaky(tag)


@server.tool()
def attempts(tag: str) -> int:
    """How many times a flaky tool was called with ``tag``."""
    return _attempts.get(tag, 0)


@server.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's weather, as structured content fitting its output schema."""
    return Forecast(city=city, temp=21.5)


if __name__ == "__main__":
    run(server)
