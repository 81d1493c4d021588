"""``reactcore.mcp.serve``: a reactcore agent as an MCP server, called by real MCP clients."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import call
from mcp import Client
from mcp_servers.agent_server import make_agent
from test_mcp import run_calls

from reactcore import AgentToolNode
from reactcore.mcp import MCPToolset, serve

pytestmark = pytest.mark.anyio

AGENT_SERVER = Path(__file__).parent / "mcp_servers" / "agent_server.py"


async def test_ask_runs_the_agent_and_reports_progress() -> None:
    """The server has one tool, ``ask`` (text in, the final text out); a call runs the
    agent once and the client is told of the run's steps as progress."""
    server = serve(make_agent(runs=1))
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with Client(server) as client:
        listed = await client.list_tools()
        result = await client.call_tool("ask", {"text": "hello"}, progress_callback=on_progress)
    (ask,) = listed.tools
    assert ask.name == "ask"
    assert ask.description == "Ask the agent 'helper'; it answers with text."
    assert ask.input_schema["required"] == ["text"]
    assert not result.is_error
    assert [b.text for b in result.content] == ["The agent says: HELLO"]  # type: ignore[union-attr]
    assert sorted(progress) == [
        (1.0, "model call 1"),
        (2.0, "calling shout"),
        (3.0, "shout done"),
        (4.0, "model call 2"),
    ]


async def test_a_failed_run_is_an_error_result() -> None:
    """When the run fails (here the scripted model has no reply left), the client gets an
    error result, not a broken connection."""
    server = serve(make_agent(runs=0))
    async with Client(server) as client:
        result = await client.call_tool("ask", {"text": "hello"})
    assert result.is_error
    assert result.content[0].text == (  # type: ignore[union-attr]
        "Error executing tool ask: the run of agent 'helper' failed: ScriptExhaustedError: "
        "ScriptedChatModel has 0 replies and got request #1"
    )


async def test_an_agent_calls_a_served_agent_over_stdio() -> None:
    """A served agent in a subprocess, reached with ``MCPToolset.stdio``: a reactcore agent
    can use another one as a tool."""
    toolset = MCPToolset.stdio(sys.executable, [str(AGENT_SERVER)], prefix="helper_")
    async with toolset:
        (ask,) = toolset.tools
        assert (ask.name, ask.description) == ("helper_ask", "Ask the helper agent.")
        node = AgentToolNode(tool_resolver=toolset.resolve)
        (answer,) = await run_calls(node, call("1", "helper_ask", text="psst"))
    assert answer.response_data == "The agent says: PSST"
