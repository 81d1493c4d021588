"""Tools from an MCP server beside a local tool, called in one parallel batch.

The server is this same file run with ``--server``: a real MCP server over stdio, written
with the ``mcp`` SDK's ``MCPServer``. ``MCPToolset.stdio`` starts it as a subprocess, lists
its tools (with the prefix ``notes_``) and stops it when the ``async with`` ends. The model
is scripted, so the example runs offline, in a couple of seconds.

    pip install 'reactcore[mcp]'
    python examples/mcp_tools.py [asyncio|trio]
"""

from __future__ import annotations

import sys

import anyio

from reactcore import (
    AssistantMessage,
    ReactAgent,
    RunFinished,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolResponseMessage,
    tool,
)
from reactcore.mcp import MCPToolset
from reactcore.testing import ScriptedChatModel

NOTES = {
    "groceries": "milk, eggs, coffee",
    "trip": "train at 9:40, platform 4",
}


def run_server() -> None:
    """The MCP server: a small notes store."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("notes", log_level="WARNING")

    @server.tool()
    def search(query: str) -> str:
        """Find the notes whose title contains the query."""
        found = [f"{title}: {text}" for title, text in NOTES.items() if query in title]
        return "\n".join(found) or "no note found"

    @server.tool()
    def count_words(title: str) -> int:
        """How many words a note has."""
        return len(NOTES.get(title, "").split())

    server.run("stdio")


@tool
def today() -> str:
    """Today's date (a local tool)."""
    return "2026-12-03"


async def main() -> None:
    calls = [
        ToolCall("c1", "notes_search", '{"query": "trip"}'),
        ToolCall("c2", "today"),
        ToolCall("c3", "notes_count_words", '{"title": "groceries"}'),
    ]
    model = ScriptedChatModel(
        [AssistantMessage("", calls), "Your train leaves at 9:40 today, from platform 4."]
    )
    toolset = MCPToolset.stdio(sys.executable, [__file__, "--server"], prefix="notes_")
    async with toolset:
        print(f"MCP server {toolset.server_name!r}: {[t.name for t in toolset.tools]}")
        agent = ReactAgent("assistant", model, tools=[toolset, today], parallel_tool_execution=True)
        async with agent.stream("When is my train?") as events:
            async for event in events:
                if isinstance(event, ToolCallStarted):
                    print(f"started   {event.call_id} {event.name}")
                elif isinstance(event, ToolCallFinished):
                    print(f"finished  {event.call_id} {event.name}")
                elif isinstance(event, RunFinished):
                    answers = event.result.messages[-2]
                    assert isinstance(answers, ToolResponseMessage)
                    for response in answers.responses:
                        print(f"answer    {response.id}: {response.response_data!r}")
                    print(f"final: {event.result.text}")
    print("the MCP server has stopped")


if __name__ == "__main__":
    if "--server" in sys.argv:
        run_server()
    else:
        anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
