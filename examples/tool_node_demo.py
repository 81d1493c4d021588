"""Six tool calls through ``AgentToolNode``, sequential then parallel (about 1 s)."""

import time

import anyio

from reactcore import (
    AgentToolNode,
    AssistantMessage,
    KeyStrategy,
    OverAllState,
    ToolCall,
    ToolContext,
    UserMessage,
    tool,
)


@tool
async def weather(city: str) -> dict[str, object]:
    """The weather in a city (an async tool: 0.2 s of I/O)."""
    await anyio.sleep(0.2)
    return {"city": city, "sky": "clear", "temp_c": 21}


@tool
def population(city: str) -> int:
    """How many people live in a city (a blocking tool: a worker thread when parallel)."""
    time.sleep(0.2)
    return {"Paris": 2_100_000, "Oslo": 720_000}[city]


@tool
async def remember(note: str, context: ToolContext) -> str:
    """Keep a note in the agent's state, under ``notes``."""
    context.update["notes"] = [note]
    return "noted"


async def main() -> None:
    cities = ['{"city": "Paris"}', '{"city": "Oslo"}']
    calls = [("weather", c) for c in cities] + [("population", c) for c in cities]
    calls += [("remember", '{"note": "pack a coat"}'), ("remember", '{"note": "book a train"}')]
    tool_calls = [ToolCall(f"call{i}", name, args) for i, (name, args) in enumerate(calls)]
    messages = [UserMessage("Plan a trip"), AssistantMessage("", tool_calls)]
    state = OverAllState({"messages": messages}, {"notes": KeyStrategy.APPEND})
    tools = [weather, population, remember]
    for parallel in (False, True):
        node = AgentToolNode(tools, parallel_tool_execution=parallel, max_parallel_tools=6)
        start = time.perf_counter()
        update = await node(state)
        print(f"{'parallel' if parallel else 'sequential'}: {time.perf_counter() - start:.2f} s")
    for response in update["messages"][0].responses:
        print(f"  {response.id} {response.name}: {response.response_data}")
    print(f"  notes: {update['notes']}")  # the same, in call order, both ways


if __name__ == "__main__":
    anyio.run(main)
