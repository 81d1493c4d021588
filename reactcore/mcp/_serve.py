"""``serve(agent)``: a reactcore agent as an MCP server, so any MCP client can ask it.

The server has one tool, ``ask`` (``text`` in, the agent's final text out). Each call is
one run of the agent; while it runs, the run's events go to the client as progress
notifications (when the client asked for progress): "model call 1", "calling search",
"search done" … A run that fails answers the client with an error result naming the
error.

A run that pauses for approval (a ``HumanInTheLoopHook``) asks the client: each waiting
call becomes an elicitation request (``elicitation/create``, an ``Approval`` form), and
the answers resume the run. A client that cancels its ``ask`` call (``notifications/
cancelled``) cancels the run: the SDK cancels the handler, and leaving ``agent.start``
cancelled cancels the run and its tools. ``serve(agent, sampling=True)`` serves the agent
with the client's model instead of its own (``_client_model``): each model call of a run is
a ``sampling/createMessage`` request to the client whose call the run answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from .._approval import Approve, Decision, Reject, Resume
from .._config import RunnableConfig
from .._events import (
    ModelCallStarted,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
)
from ._client_model import ClientModel, answering

if TYPE_CHECKING:
    from .._agent import ReactAgent
    from .._messages import ToolCall


class Approval(BaseModel):
    """The form a client fills in for a call waiting for approval."""

    approve: bool = Field(description="Run this tool call?")
    reason: str = Field(default="", description="Why not (the agent's model is told)")


DECLINED = "The MCP client's user declined to approve this tool call."


def approval_message(agent: str, call: ToolCall) -> str:
    """What the client's user is asked about ``call``."""
    return f"Agent '{agent}' wants to call {call.name} with {call.arguments}. Approve it?"


async def ask_approval(ctx: Context, agent: str, call: ToolCall) -> Decision:
    """The client's decision on ``call``: an elicitation request, answered."""
    try:
        answer = await ctx.elicit(approval_message(agent, call), Approval)
    except Exception as exc:
        raise ToolError(
            f"the run of agent '{agent}' waits for approval of {call.name} and the client "
            f"could not be asked: {type(exc).__name__}: {exc}"
        ) from exc
    if answer.action != "accept":
        return Reject(DECLINED)
    if answer.data.approve:
        return Approve()
    return Reject(answer.data.reason or "The MCP client's user rejected this tool call.")


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
    sampling: bool = False,
) -> MCPServer:
    """An MCP server (the SDK's ``MCPServer``) whose one tool ``ask`` runs ``agent``.

    Run it as the SDK's servers run: ``serve(agent).run("stdio")``, or mount
    ``serve(agent).streamable_http_app()`` in an ASGI server. ``config`` makes the
    ``RunnableConfig`` of each run (by default, with a saver, a new thread per call, so that
    a run paused for approval can resume from its checkpoint). ``sampling=True``: the
    agent's model calls go to the calling client (``sampling/createMessage``, with the
    agent's tools) instead of its model.
    """
    if not isinstance(sampling, bool):
        raise TypeError(f"sampling must be a bool, not {type(sampling).__name__}")
    if sampling:
        agent = attrs.evolve(agent, model=ClientModel())
    server = MCPServer(name or agent.name, log_level="WARNING")

    async def ask(text: str, ctx: Context) -> str:
        if config is not None:
            run_config = config()
        elif agent.saver is not None:  # its own thread, to resume from after a pause
            run_config = RunnableConfig(thread_id=f"mcp-{uuid.uuid4().hex}")
        else:
            run_config = RunnableConfig()
        with answering(ctx):
            return await answer(text, ctx, run_config)

    async def answer(text: str, ctx: Context, run_config: RunnableConfig) -> str:
        step = 0
        async with agent.start(text, run_config) as run:
            while True:  # one leg per pause for approval
                async with run.events() as events:
                    async for event in events:
                        message = progress_message(event)
                        if message is not None:
                            step += 1
                            await ctx.report_progress(step, None, message)
                try:
                    result = await run.result()
                except Exception as exc:
                    # The SDK hides the message of an unexpected exception; this one is
                    # meant for the client.
                    raise ToolError(
                        f"the run of agent '{agent.name}' failed: {type(exc).__name__}: {exc}"
                    ) from exc
                if result.interrupt is None:
                    return result.text
                decisions = {
                    call.id: await ask_approval(ctx, agent.name, call)
                    for call in result.interrupt.calls
                }
                await run.resume(Resume(decisions))

    server.add_tool(
        ask,
        name="ask",
        description=description or f"Ask the agent '{agent.name}'; it answers with text.",
        structured_output=False,
    )
    return server
