"""A run for the subagent crash test: the parent's one call runs a child agent (with no
saver of its own: it checkpoints with the parent's) whose three parallel tool calls
finish, finish, and hang on the first try, so the process can be killed mid-child; on
resume the parent resumes the child, and the hanging call finishes.

    python crash_subagent.py BACKEND DB MARKS first|resume

Each finished child tool call appends its number to MARKS; the resumed run prints the
parent's final text and model calls as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio

from reactcore import (
    AssistantMessage,
    ModelRequest,
    ReactAgent,
    RunnableConfig,
    SqliteSaver,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from reactcore.testing import ScriptedChatModel

backend, db, marks, mode = sys.argv[1:5]


@tool
def work(n: int) -> str:
    """Work on item n (a sync tool: it runs in a worker thread)."""
    if mode == "first" and n == 2:
        time.sleep(600)  # killed before this ends
    with Path(marks).open("a") as f:
        f.write(f"{n}\n")
    return f"done {n}"


def child_reply(request: ModelRequest) -> AssistantMessage:
    """The three calls, then (once answered) the final text: a child started over would
    ask for them again, and its finished calls would run twice."""
    if isinstance(request.messages[-1], ToolResponseMessage):
        return AssistantMessage("all three done")
    return AssistantMessage("", [ToolCall(f"k{n}", "work", json.dumps({"n": n})) for n in range(3)])


def parent_reply(request: ModelRequest) -> AssistantMessage:
    last = request.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return AssistantMessage(f"the child says: {last.responses[0].response_data}")
    return AssistantMessage("", [ToolCall("c1", "worker", json.dumps({"input": "do the three"}))])


async def main() -> None:
    async with SqliteSaver(db) as saver:
        child = ReactAgent(
            "worker",
            ScriptedChatModel([child_reply] * 2),
            tools=[work],
            parallel_tool_execution=True,
        )
        parent = ReactAgent(
            "boss", ScriptedChatModel([parent_reply] * 2), tools=[child.as_tool()], saver=saver
        )
        config = RunnableConfig(thread_id="t")
        result = await parent.invoke("go" if mode == "first" else None, config)
        print(json.dumps({"text": result.text, "model_calls": result.model_calls}))


anyio.run(main, backend=backend)
