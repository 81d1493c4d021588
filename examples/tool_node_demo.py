"""A batch of six tool calls through ``AgentToolNode``: sequential, then in parallel.

Run it with ``python examples/tool_node_demo.py`` (about 1.5 s; ``backend="trio"`` works too).
"""

from __future__ import annotations

import time

import anyio

from reactcore import AgentToolNode, AssistantMessage, KeyStrategy, OverAllState
from reactcore import ToolCall, ToolContext, UserMessage, tool


@tool
async def weather(city: str) -> dict[str, object]:
    """The weather in ``city`` (an async tool: 0.2 s of I/O)."""
    await anyio.sleep(0.2)
    return {"city": city, "sky": "clear", "temp_c": 21}


@tool
def population(city: str) -> int:
    """How many people live in ``city`` (a blocking tool: a worker thread when parallel)."""
    time.sleep(0.2)
    return {"Paris": 2_100_000, "Oslo": 720_000}[city]


@tool
async def remember(note: str, context: ToolContext) -> str:
    """Keep ``note`` in the agent's state, under ``notes``."""
    await anyio.sleep(0.2)
    context.update["notes"] = [note]
    return "noted"


def pending(*calls: tuple[str, str]) -> OverAllState:
    tool_calls = [ToolCall(f"call{i}", name, args) for i, (name, args) in enumerate(calls)]
    messages = [UserMessage("Plan a trip"), AssistantMessage("", tool_calls)]
    return OverAllState({"messages": messages}, {"notes": KeyStrategy.APPEND})


async def main() -> None:
    state = pending(
        *[("weather", f'{{"city": "{c}"}}') for c in ("Paris", "Oslo")],
        *[("population", f'{{"city": "{c}"}}') for c in ("Paris", "Oslo")],
        *[("remember", f'{{"note": "{n}"}}') for n in ("pack a coat", "book a train")],
    )
    updates = {}
    for mode in ("sequential", "parallel"):
        node = AgentToolNode(
            [weather, population, remember],
            parallel_tool_execution=mode == "parallel",
            max_parallel_tools=6,
        )
        start = time.perf_counter()
        updates[mode] = await node(state)
        print(f"{mode}: {time.perf_counter() - start:.2f} s")
    update = updates["parallel"]
    for response in update["messages"][0].responses:
        print(f"  {response.id} {response.name}: {response.response_data}")
    print(f"  notes: {update['notes']}")
    print(f"  same update both ways: {updates['sequential'] == update}")

if __name__ == "__main__":
    anyio.run(main)
