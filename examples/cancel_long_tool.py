"""Cancelling one tool call from the caller, by its call id, while the run goes on.

The model asks for two calls at once: a quick lookup (0.2 s) and a slow report (30 s).
The caller reads the run's events; once the lookup has finished, it cancels the report
by its call id. The report's cleanup runs, the model is told the call was cancelled, and
the run ends with an answer, in well under a second. Every event is printed as its JSON
form (``reactcore.to_json``), the model's streamed deltas counted instead.

    python examples/cancel_long_tool.py [asyncio|trio]
"""

from __future__ import annotations

import json
import sys
import time

import anyio

from reactcore import (
    AssistantMessage,
    ModelDelta,
    ModelRequest,
    ReactAgent,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolResponseMessage,
    to_json,
    tool,
)
from reactcore.testing import ScriptedChatModel


@tool
async def lookup(city: str) -> str:
    """Where a city is: a quick lookup."""
    await anyio.sleep(0.2)
    return f"{city} is in Portugal"


@tool
async def yearly_report(city: str) -> str:
    """A year of statistics on a city: a slow report (30 s)."""
    try:
        await anyio.sleep(30)
        return f"the {city} report"
    finally:
        print(f"  (yearly_report's cleanup ran: the call for {city} stopped)")


def reply(request: ModelRequest) -> AssistantMessage:
    """The stand-in model's second answer: it says what each call gave."""
    last = request.messages[-1]
    assert isinstance(last, ToolResponseMessage)
    return AssistantMessage(" | ".join(f"{r.name}: {r.response_data}" for r in last.responses))


async def main() -> None:
    calls = [
        ToolCall("call_lookup", "lookup", '{"city": "Lisbon"}'),
        ToolCall("call_report", "yearly_report", '{"city": "Lisbon"}'),
    ]
    model = ScriptedChatModel([AssistantMessage("", calls), reply])
    agent = ReactAgent("cities", model, tools=[lookup, yearly_report], parallel_tool_execution=True)
    start = time.perf_counter()
    deltas = 0
    slow_call: str | None = None
    async with agent.start("Tell me about Lisbon.") as run, run.events() as events:
        async for event in events:
            if isinstance(event, ModelDelta):
                deltas += 1
                continue
            print(json.dumps(to_json(event), ensure_ascii=False))
            if isinstance(event, ToolCallStarted) and event.name == "yearly_report":
                slow_call = event.call_id
            elif isinstance(event, ToolCallFinished) and slow_call is not None:
                # The quick call is done: stop waiting for the slow one, by its call id.
                cancelled = await run.cancel_tool(slow_call, "the report is not needed")
                print(f"  (cancel_tool({slow_call!r}) -> {cancelled})")
        result = await run.result()
    print(f"answer: {result.text}")
    print(f"{deltas} model deltas; the run took {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
