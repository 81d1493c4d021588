"""A real MCP server (the SDK's ``MCPServer``) whose tools ask the client things during a
call: its model (``sampling/createMessage``) and its user (``elicitation/create``).

``python asking_server.py stdio`` serves on stdin/stdout; ``python asking_server.py http``
serves streamable HTTP on 127.0.0.1 at a free port and prints ``PORT <n>`` first.

- ``summarise(text)`` asks the client's model to summarise ``text`` (system prompt
  ``Be brief.``, at most 50 tokens) and answers ``summary: <its text>``, or
  ``refused: <the client's error>``.
- ``book(tag)`` asks the user for a ``Booking`` (``date``, ``seats``) and answers
  ``<action> <date> <seats>``; ``runs(tag)`` says how many times ``book`` ran for a tag
  (a call re-run after a pause runs again).
- ``trip()`` asks twice (``From where?``, ``To where?``, a ``Place`` each) and answers
  ``from <a> to <b>``; ``seconds(tag)`` says how often it went on to the second.
- ``idle()`` waits until cancelled (a second call in flight); ``summarise(text,
  after_idle=True)`` waits for it to run before asking.
"""

from __future__ import annotations

import warnings

import anyio
import mcp.types as mt
from _serving import run
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

server = MCPServer("test-asking", log_level="WARNING")
_runs: dict[str, int] = {}
_seconds: dict[str, int] = {}
_idle = anyio.Event()  # set once ``idle`` runs (made in the server's one event loop)


class Booking(BaseModel):
    date: str
    seats: int


@server.tool()
async def summarise(text: str, ctx: Context, after_idle: bool = False) -> str:
    """Summarise the text with the client's model (``after_idle``: once ``idle`` runs)."""
    if after_idle:
        await _idle.wait()
    message = mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=text))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sampling is deprecated in the newest protocol
            result = await ctx.request_context.session.create_message(
                [message],
                max_tokens=50,
                system_prompt="Be brief.",
                related_request_id=ctx.request_id,
            )
    except MCPError as exc:
        return f"refused: {exc.error.message}"
    content = result.content
    return f"summary: {content.text if isinstance(content, mt.TextContent) else content}"


@server.tool()
async def book(tag: str, ctx: Context) -> str:
    """Book seats: asks the user for the date and the number of seats."""
    _runs[tag] = _runs.get(tag, 0) + 1
    answer = await ctx.elicit("Which date, and how many seats?", Booking)
    if answer.action == "accept":
        return f"accept {answer.data.date} {answer.data.seats}"
    return answer.action


class Place(BaseModel):
    name: str


@server.tool()
async def trip(ctx: Context, tag: str = "") -> str:
    """Plan a trip: asks the user twice, where from and where to."""
    start = await ctx.elicit("From where?", Place)
    _seconds[tag] = _seconds.get(tag, 0) + 1
    end = await ctx.elicit("To where?", Place)
    if start.action == end.action == "accept":
        return f"from {start.data.name} to {end.data.name}"
    return f"{start.action} {end.action}"


@server.tool()
def seconds(tag: str) -> int:
    """How many times ``trip`` went on to its second question for ``tag``."""
    return _seconds.get(tag, 0)


@server.tool()
def runs(tag: str) -> int:
    """How many times ``book`` ran for ``tag``."""
    return _runs.get(tag, 0)


@server.tool()
async def idle() -> str:
    """Wait until cancelled."""
    _idle.set()
    await anyio.sleep_forever()
    return "never"


if __name__ == "__main__":
    run(server)
