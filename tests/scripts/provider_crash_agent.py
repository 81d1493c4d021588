"""The child of the SIGKILL test over every provider (``test_agent_providers.py``): a
run on the loopback server the test runs, its model named by a provider string and the
environment (the provider's base-URL and key variables). The model asks for five
weather calls at once; Paris, Rome and Oslo answer, Lima and Kyiv hang until the process
is killed. Prints ``checkpointed`` once the three are in the SQLite checkpoint (a
``ToolCallFinished`` is sent after its call's checkpoint).

    python provider_crash_agent.py MODEL_STRING BACKEND DB MARKS

Each finished call appends ``<city> child`` to MARKS.
"""

from __future__ import annotations

import sys

import anyio

from reactcore import ReactAgent, RunnableConfig, SqliteSaver, ToolCallFinished, tool

model, backend, db, marks = sys.argv[1:5]


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    if city in ("Lima", "Kyiv"):
        await anyio.sleep_forever()  # killed before this ends
    async with await anyio.open_file(marks, "a") as f:
        await f.write(f"{city} child\n")
    return f"sunny in {city}"


async def main() -> None:
    async with SqliteSaver(db) as saver:
        agent = ReactAgent("w", model, tools=[weather], parallel_tool_execution=True, saver=saver)
        finished = 0
        async with agent.start("weather?", RunnableConfig(thread_id="t")) as run:
            async with run.events() as events:
                async for event in events:
                    if isinstance(event, ToolCallFinished):
                        finished += 1
                        if finished == 3:
                            print("checkpointed", flush=True)
            await run.result()


anyio.run(main, backend=backend)
