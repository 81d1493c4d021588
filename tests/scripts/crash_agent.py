"""A run for the crash test: five parallel tool calls, the last two hang on the first
try, so the process can be killed mid-batch; on resume they finish.

    python crash_agent.py BACKEND DB MARKS first|resume

Each finished tool call appends its number to MARKS; the resumed run prints its final
text as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio

from reactcore import AssistantMessage, ReactAgent, RunnableConfig, SqliteSaver, ToolCall, tool
from reactcore.testing import ScriptedChatModel

backend, db, marks, mode = sys.argv[1:5]


@tool
def work(n: int) -> str:
    """Work on item n (a sync tool: it runs in a worker thread)."""
    if mode == "first" and n >= 3:
        time.sleep(600)  # killed before this ends
    with Path(marks).open("a") as f:
        f.write(f"{n}\n")
    return f"done {n}"


calls = [ToolCall(f"w{n}", "work", json.dumps({"n": n})) for n in range(5)]
script = [AssistantMessage("", calls), "all five done"] if mode == "first" else ["all five done"]


async def main() -> None:
    async with SqliteSaver(db) as saver:
        agent = ReactAgent(
            "crash",
            ScriptedChatModel(script),
            tools=[work],
            parallel_tool_execution=True,
            saver=saver,
        )
        config = RunnableConfig(thread_id="t")
        result = await agent.invoke("go" if mode == "first" else None, config)
        print(json.dumps({"text": result.text, "model_calls": result.model_calls}))


anyio.run(main, backend=backend)
