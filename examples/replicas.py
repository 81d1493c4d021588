"""Service replicas sharing one checkpoint database: at start-up, a replica finds the
runs a dead replica left unfinished and resumes them; a run another live replica owns is
left to it.

    python examples/replicas.py                     # an SQLite file in a temporary folder
    python examples/replicas.py --postgres [DSN]    # PostgreSQL (pip install '.[postgres]')

The demo plays both sides in one process, on a fresh database: "replica A" starts three
runs and stops in the middle of their tool calls (cancelled, as a crash would leave
them: the calls that had finished are checkpointed); a fourth run stays alive, owned by
A. Then "replica B" starts up and calls ``recover``: it resumes the three orphaned runs
(only their missing calls run) and skips the live one (``ThreadBusy``).

With ``PostgresSaver``, a run's lease lapses ``lease_ttl`` seconds after its replica
died; with ``SqliteSaver`` (replicas on one machine), at once. Until then ``recover``
reports the thread as busy, and the next sweep gets it.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import attrs

from reactcore import (
    AssistantMessage,
    LeasingSaver,
    ModelRequest,
    ReactAgent,
    RunCancelled,
    RunnableConfig,
    SqliteSaver,
    ThreadBusy,
    ToolCall,
    ToolCallFinished,
    UserMessage,
    tool,
)
from reactcore.testing import ScriptedChatModel

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"


@attrs.frozen
class Recovery:
    """What a sweep did: threads resumed to their end, busy elsewhere, failed again."""

    resumed: tuple[str, ...] = ()
    busy: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


async def recover(agent: ReactAgent, saver: LeasingSaver, *, concurrency: int = 10) -> Recovery:
    """Resume every unfinished thread of ``saver`` (``concurrency`` at a time).

    A thread whose run is alive elsewhere raises ``ThreadBusy`` at once: it is skipped.
    A thread that finished meanwhile (another replica swept it) is a ``ValueError``:
    skipped too. A resumed run that fails is reported, not retried here.
    """
    resumed: list[str] = []
    busy: list[str] = []
    failed: list[str] = []
    limiter = anyio.CapacityLimiter(concurrency)

    async def resume(thread_id: str) -> None:
        async with limiter:
            try:
                await agent.invoke(None, RunnableConfig(thread_id=thread_id))
            except ThreadBusy:
                busy.append(thread_id)
            except ValueError:
                pass  # finished by another replica since we listed it
            except Exception:
                failed.append(thread_id)
            else:
                resumed.append(thread_id)

    after: str | None = None
    while page := await saver.threads(status="unfinished", after=after, limit=100):
        async with anyio.create_task_group() as tg:
            for info in page:
                tg.start_soon(resume, info.thread_id)
        after = page[-1].thread_id
    return Recovery(tuple(sorted(resumed)), tuple(sorted(busy)), tuple(sorted(failed)))


# --- the agent: each thread asks for two lookups in parallel, then answers --------------


def make_agent(saver: LeasingSaver, slow: anyio.Event | None = None) -> ReactAgent:
    """The replicas' agent; ``slow`` (when given) holds every ``lookup`` of item 1."""

    @tool
    async def lookup(thread: str, item: int) -> str:
        """Look one item up."""
        if slow is not None and item == 1:
            await slow.wait()
        return f"{thread}: item {item} found"

    def reply(request: ModelRequest) -> AssistantMessage:
        first = request.messages[0]
        assert isinstance(first, UserMessage)
        thread = first.text
        if isinstance(request.messages[-1], UserMessage):
            calls = [
                ToolCall(f"{thread}-{i}", "lookup", json.dumps({"thread": thread, "item": i}))
                for i in range(2)
            ]
            return AssistantMessage("", calls)
        return AssistantMessage(f"{thread}: both items found")

    return ReactAgent(
        "replica",
        ScriptedChatModel([reply] * 1000),
        tools=[lookup],
        parallel_tool_execution=True,
        saver=saver,
    )


async def crash_midway(agent: ReactAgent, thread_id: str) -> None:
    """Start a run and stop it once its first call finished (what a crash leaves)."""
    async with agent.start(thread_id, RunnableConfig(thread_id=thread_id)) as run:
        async with run.events() as events:
            async for event in events:
                if isinstance(event, ToolCallFinished):
                    break
        await run.cancel()
        with suppress(RunCancelled):
            await run.result()


async def demo(saver: LeasingSaver) -> Recovery:
    """Replica A leaves three runs unfinished and one alive; replica B recovers."""
    never = anyio.Event()
    replica_a = make_agent(saver, slow=never)
    for thread_id in ("order-1", "order-2", "order-3"):
        await crash_midway(replica_a, thread_id)
    replica_b = make_agent(saver)
    async with replica_a.start("order-4", RunnableConfig(thread_id="order-4")) as live:
        async with live.events() as events:
            async for event in events:
                if isinstance(event, ToolCallFinished):
                    break  # order-4 is alive, waiting for its slow call
        recovery = await recover(replica_b, saver)
        await live.cancel()
    return recovery


@asynccontextmanager
async def open_saver(argv: Sequence[str]) -> AsyncIterator[Any]:
    """The saver the command line asks for, on a fresh database."""
    if argv[:1] == ["--postgres"]:
        from reactcore.postgres import PostgresSaver

        dsn = argv[1] if len(argv) > 1 else DEFAULT_DSN
        async with PostgresSaver(dsn, schema="replicas_demo") as pg_saver:
            for info in await pg_saver.threads(status=None, limit=1000):
                await pg_saver.delete(info.thread_id)
            yield pg_saver
    else:
        # A fresh file in a temporary folder, removed with everything beside it at the end.
        with tempfile.TemporaryDirectory(prefix="replicas-") as folder:
            async with SqliteSaver(Path(folder) / "replicas.db") as sqlite_saver:
                yield sqlite_saver


async def main(argv: Sequence[str]) -> None:
    async with open_saver(argv) as saver:
        recovery = await demo(saver)
        print(f"resumed: {', '.join(recovery.resumed)}")
        print(f"busy (alive elsewhere): {', '.join(recovery.busy)}")
        for thread_id in recovery.resumed:
            latest = await saver.get(thread_id)
            print(f"  {latest.state['messages'][-1].text}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
