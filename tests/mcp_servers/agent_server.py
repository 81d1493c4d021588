"""A reactcore agent served over MCP stdio with ``reactcore.mcp.serve`` (for the tests).

Its model is scripted: asked anything, it calls its local ``shout`` tool with the text,
then answers ``The agent says: <shouted text>``. ``agent_server.py approve``: ``shout``
waits for approval, which the served agent asks of its client.
"""

from __future__ import annotations

import json
import sys

from reactcore import (
    AssistantMessage,
    HumanInTheLoopHook,
    MemorySaver,
    ModelRequest,
    ReactAgent,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from reactcore.mcp import serve
from reactcore.testing import ScriptedChatModel


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def reply(request: ModelRequest) -> AssistantMessage:
    """Shout the user's text, then report what the tool said."""
    last = request.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return AssistantMessage(f"The agent says: {last.responses[0].response_data}")
    text = getattr(last, "text", "")
    return AssistantMessage("", [ToolCall("c1", "shout", json.dumps({"text": text}))])


def make_agent(runs: int = 50, *, approve: bool = False) -> ReactAgent:
    """The agent, with a script long enough for ``runs`` questions (``approve``: ``shout``
    waits for approval)."""
    model = ScriptedChatModel([reply] * (2 * runs))
    if not approve:
        return ReactAgent("helper", model, tools=[shout])
    hook = HumanInTheLoopHook(["shout"])
    return ReactAgent("helper", model, tools=[shout], hooks=[hook], saver=MemorySaver())


if __name__ == "__main__":
    agent = make_agent(approve=sys.argv[1:] == ["approve"])
    serve(agent, description="Ask the helper agent.").run("stdio")
