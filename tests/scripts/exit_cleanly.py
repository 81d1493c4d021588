"""A process that uses reactcore's integrations and then ends, for tests/test_shutdown.py.

    python exit_cleanly.py worker-return ADDRESS   # a Temporal worker, left by its block
    python exit_cleanly.py worker-sigterm ADDRESS  # run_worker, until SIGTERM
    python exit_cleanly.py sqlite|postgres|mcp DSN DIR BACKEND  # a saver or a toolset

Each worker runs one workflow to its answer (printed), then starts another whose model
call is still running when the worker stops (the run stays in the worker's workflow
cache: the case that used to end in "Fatal Python error: PyGILState_Release" or
"Exception ignored … Token … created in a different Context"). ``worker-sigterm`` prints
``ready`` once that call runs, and waits for SIGTERM. The process must then exit with
status 0 and nothing on stderr.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from reactcore import (
    AssistantMessage,
    ModelCallStarted,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ReactAgent,
    RunnableConfig,
    SqliteSaver,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from reactcore.testing import ScriptedChatModel, message_chunks


@tool
def add(a: int, b: int) -> int:
    """Add two numbers (in a worker thread)."""
    return a + b


class Model:
    """Asks for ``add`` then answers "three"; to "hang" it takes a minute to answer
    (cancelled when its worker stops)."""

    def _answer(self, request: ModelRequest) -> AssistantMessage:
        if any(isinstance(m, ToolResponseMessage) for m in request.messages):
            return AssistantMessage("three")
        return asks(("c1", "add", '{"a": 1, "b": 2}'))

    async def call(self, request: ModelRequest) -> ModelResponse:
        if request.messages[0].text == "hang":  # type: ignore[union-attr]
            await anyio.sleep(60)
        return ModelResponse(self._answer(request))

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelChunk]]:
        if request.messages[0].text == "hang":  # type: ignore[union-attr]
            await anyio.sleep(60)
        chunks = message_chunks(self._answer(request))

        async def produce() -> AsyncIterator[ModelChunk]:
            for chunk in chunks:
                yield chunk

        yield produce()


def asks(*calls: tuple[str, str, str]) -> AssistantMessage:
    return AssistantMessage("", [ToolCall(i, name, args) for i, name, args in calls])


async def workflows(address: str, *, sigterm: bool) -> None:
    from temporalio.client import Client

    from reactcore.temporal import TemporalAgent, worker

    client = await Client.connect(address)
    queue = f"exit-{uuid.uuid4().hex[:8]}"
    durable = TemporalAgent(ReactAgent("exit", Model(), tools=[add]), task_queue=queue)

    async def use() -> None:
        result = await durable.invoke(client, "add", thread_id=f"t-{uuid.uuid4().hex}")
        print(result.text, flush=True)
        run = await durable.start(client, "hang", thread_id=f"t-{uuid.uuid4().hex}")
        async for event in run.events():
            if isinstance(event, ModelCallStarted):
                break

    if not sigterm:
        async with worker(client, [durable]):
            await use()
        return
    from reactcore.temporal import run_worker

    async with anyio.create_task_group() as tg:
        polling = anyio.Event()
        tg.start_soon(functools.partial(run_worker, client, [durable], ready=polling.set))
        await polling.wait()
        await use()
        print("ready", flush=True)  # run_worker returns on SIGTERM, and so does this


async def used(kind: str, dsn: str, folder: Path) -> None:
    """Run an agent with a ``kind`` of saver or toolset, closed as documented."""
    model = ScriptedChatModel([asks(("c1", "add", '{"a": 1, "b": 2}')), "three"])
    config = RunnableConfig(thread_id="t")
    if kind == "sqlite":
        async with SqliteSaver(str(folder / "threads.db")) as sqlite:
            agent = ReactAgent("sqlite", model, tools=[add], saver=sqlite)
            print((await agent.invoke("go", config)).text, flush=True)
    elif kind == "postgres":
        import psycopg

        from reactcore.postgres import PostgresSaver

        schema = f"rc_exit_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        try:
            async with PostgresSaver(dsn, schema=schema) as pg:
                agent = ReactAgent("pg", model, tools=[add], saver=pg)
                print((await agent.invoke("go", config)).text, flush=True)
        finally:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    else:
        from mcp_support import stdio_toolset

        mcp_model = ScriptedChatModel([asks(("m1", "echo", '{"text": "hi"}')), "three"])
        async with stdio_toolset(folder / "mcp.log") as toolset:
            agent = ReactAgent("mcp", mcp_model, tools=[toolset])
            print((await agent.invoke("go")).text, flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode in ("sqlite", "postgres", "mcp"):
        anyio.run(used, mode, sys.argv[2], Path(sys.argv[3]), backend=sys.argv[4])
    else:
        asyncio.run(workflows(sys.argv[2], sigterm=mode == "worker-sigterm"))
