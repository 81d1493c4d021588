"""``serve(agent)``: a reactcore agent as an MCP server, so any MCP client can ask it.

The server has one tool, ``ask`` (``text`` in, the agent's final text out). Each call is
one run of the agent; while it runs, the run's events go to the client as progress
notifications (when the client asked for progress): "model call 1", "calling search",
"search done" … A run that fails answers the client with an error result naming the
error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from .._config import RunnableConfig
from .._events import (
    ModelCallStarted,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
)

if TYPE_CHECKING:
    from .._agent import ReactAgent


def progress_message(event: Any) -> str | None:
    """What a client is told of a run's event (``None``: nothing, e.g. for text chunks)."""
    match event:
        case ModelCallStarted(iteration=iteration, purpose="agent"):
            return f"model call {iteration + 1}"
        case ModelCallStarted(purpose=purpose):
            return f"model call ({purpose})"
        case ToolCallStarted(name=name):
            return f"calling {name}"
        case ToolCallFinished(name=name, is_error=is_error):
            return f"{name} failed" if is_error else f"{name} done"
        case ToolCallTimedOut(name=name):
            return f"{name} timed out"
        case ToolCallCancelled(name=name):
            return f"{name} cancelled"
    return None


def serve(
    agent: ReactAgent,
    *,
    name: str | None = None,
    description: str | None = None,
    config: Callable[[], RunnableConfig] | None = None,
) -> MCPServer:
    """An MCP server (the SDK's ``MCPServer``) whose one tool ``ask`` runs ``agent``.

    Run it as the SDK's servers run: ``serve(agent).run("stdio")``, or mount
    ``serve(agent).streamable_http_app()`` in an ASGI server. ``config`` makes the
    ``RunnableConfig`` of each run (a new thread per call by default).
    """
    server = MCPServer(name or agent.name, log_level="WARNING")

    async def ask(text: str, ctx: Context) -> str:
        step = 0
        run_config = config() if config is not None else None
        async with agent.start(text, run_config) as run, run.events() as events:
            async for event in events:
                message = progress_message(event)
                if message is not None:
                    step += 1
                    await ctx.report_progress(step, None, message)
            try:
                result = await run.result()
            except Exception as exc:
                # The SDK hides the message of an unexpected exception; this one is meant
                # for the client.
                raise ToolError(
                    f"the run of agent '{agent.name}' failed: {type(exc).__name__}: {exc}"
                ) from exc
        return result.text

    server.add_tool(
        ask,
        name="ask",
        description=description or f"Ask the agent '{agent.name}'; it answers with text.",
        structured_output=False,
    )
    return server
