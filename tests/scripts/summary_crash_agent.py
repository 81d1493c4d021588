"""A run for the summary crash test: three tool turns with long results, summarised as the
conversation passes the trigger, then a tool that hangs on the first try, so the process
can be killed with the summary checkpointed; on resume the tool answers and the run ends.

    python summary_crash_agent.py BACKEND DB MARKS first|resume

``hang`` appends ``hanging`` to MARKS when it starts. The resumed run prints, as JSON,
the messages of every request its model got, the summariser's request count, the final
text and the final messages (each message as ``[type, text]``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from reactcore import (
    AssistantMessage,
    ReactAgent,
    RunnableConfig,
    SqliteSaver,
    SummarizationHook,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from reactcore.testing import ScriptedChatModel

backend, db, marks, mode = sys.argv[1:5]


@tool
def work(n: int) -> str:
    """Work on item n; the report is long."""
    return f"report {n}: " + "figures " * 150


@tool
def hang() -> str:
    """Wait for something slow (a sync tool: it runs in a worker thread)."""
    with Path(marks).open("a") as f:
        f.write("hanging\n")
    if mode == "first":
        time.sleep(600)  # killed before this ends
    return "waited"


def asks(call_id: str, name: str, **arguments: Any) -> AssistantMessage:
    return AssistantMessage("", [ToolCall(call_id, name, json.dumps(arguments))])


def shown(message: Any) -> list[str]:
    if isinstance(message, ToolResponseMessage):
        return ["tool", ",".join(r.id for r in message.responses)]
    if isinstance(message, AssistantMessage):
        return ["assistant", message.text or ",".join(c.id for c in message.tool_calls)]
    return [type(message).__name__, message.text]


if mode == "first":
    script: list[Any] = [asks(f"w{n}", "work", n=n) for n in range(3)] + [asks("h", "hang")]
    summaries = ["SUMMARY-1", "SUMMARY-2"]
else:
    script, summaries = ["finished"], []


async def main() -> None:
    model, summariser = ScriptedChatModel(script), ScriptedChatModel(summaries)
    async with SqliteSaver(db) as saver:
        agent = ReactAgent(
            "summary-crash",
            model,
            tools=[work, hang],
            system_prompt="You work through items.",
            hooks=[SummarizationHook(trigger_tokens=500, keep_last=2, model=summariser)],
            saver=saver,
        )
        config = RunnableConfig(thread_id="t")
        result = await agent.invoke("go" if mode == "first" else None, config)
        report = {
            "requests": [[shown(m) for m in r.messages] for r in model.requests],
            "summary_calls": len(summariser.requests),
            "text": result.text,
            "messages": [shown(m) for m in result.messages],
        }
        print(json.dumps(report))


anyio.run(main, backend=backend)
