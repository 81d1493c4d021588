"""A replica for the multi-process tests: it resumes unfinished threads from a shared
saver, as a service replica does at start-up, with a parallel batch of tool calls each.

    python replica_worker.py BACKEND SAVER MARKS serve CONCURRENCY
    python replica_worker.py BACKEND SAVER MARKS race GO_FILE THREAD

SAVER is ``sqlite:PATH`` or ``postgres:SCHEMA`` (the server from ``REACTCORE_PG_DSN``).
Every line this replica appends to MARKS is ``<what> <thread> <detail> <pid>``:
``run`` (a run of this replica owns the thread; detail: the run id), ``ask`` (the model
was asked; detail: how many messages it got), ``start`` / ``end`` (a tool call; detail:
its id), ``finished`` (the run ended; detail: its text).

``serve``: resume every unfinished thread (``saver.threads()``), CONCURRENCY at a time,
skipping the ones another replica owns (``ThreadBusy``), until none is left.
``race``: wait for GO_FILE, then resume THREAD once; print ``ran``, ``busy <message>``,
``lost <message>`` (another owner took the thread over: ``LeaseLost``) or ``cancelled
<ids of the calls kept>``. ``REPLICA_TOOL_SECONDS`` sets how long a call takes; the
calls numbered in ``REPLICA_SLOW_CALLS`` take a minute; ``REPLICA_WAIT`` is how long a
resume waits for a busy thread (``wait_for_thread``, default 0).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from reactcore import (
    AssistantMessage,
    LeaseLost,
    ModelRequest,
    ReactAgent,
    RunCancelled,
    RunnableConfig,
    SqliteSaver,
    ThreadBusy,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from reactcore.testing import ScriptedChatModel

BATCH = 4
TOOL_SECONDS = float(os.environ.get("REPLICA_TOOL_SECONDS", "0.02"))
SLOW_CALLS = {int(n) for n in os.environ.get("REPLICA_SLOW_CALLS", "").split(",") if n}
WAIT = float(os.environ.get("REPLICA_WAIT", "0"))
DSN = os.environ.get("REACTCORE_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")

backend, saver_spec, marks_path, mode, *rest = sys.argv[1:]
marks = os.open(marks_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def mark(what: str, thread: str, detail: str) -> None:
    os.write(marks, f"{what} {thread} {detail} {os.getpid()}\n".encode())  # one atomic append


@tool
async def work(thread: str, n: int) -> str:
    """One item of a thread's batch (a few milliseconds)."""
    mark("start", thread, f"{thread}-c{n}")
    await anyio.sleep(60 if n in SLOW_CALLS else TOOL_SECONDS)
    mark("end", thread, f"{thread}-c{n}")
    return f"{thread} item {n} done"


def reply(request: ModelRequest) -> AssistantMessage:
    """The model: a batch of calls for the thread's request, then its answer."""
    first = request.messages[0]
    assert isinstance(first, UserMessage)
    thread = first.text.split()[1]
    mark("ask", thread, str(len(request.messages)))
    if isinstance(request.messages[-1], UserMessage):
        calls = [
            ToolCall(f"{thread}-c{n}", "work", json.dumps({"thread": thread, "n": n}))
            for n in range(BATCH)
        ]
        return AssistantMessage("", calls)
    return AssistantMessage(f"done {thread}")


@asynccontextmanager
async def open_saver() -> AsyncIterator[Any]:
    kind, _, where = saver_spec.partition(":")
    if kind == "sqlite":
        async with SqliteSaver(where, cancel_poll=0.05) as sqlite_saver:
            yield sqlite_saver
    else:
        from reactcore.postgres import PostgresSaver

        async with PostgresSaver(
            DSN, schema=where, lease_ttl=1.5, heartbeat=0.2, max_connections=4
        ) as pg_saver:
            yield pg_saver


async def resume(agent: ReactAgent, thread: str) -> str:
    """Resume ``thread`` once: ``"ran"``, or why not."""
    try:
        config = RunnableConfig(thread_id=thread, wait_for_thread=WAIT)
        async with agent.start(None, config) as run:
            mark("run", thread, run.run_id)
            result = await run.result()
    except LeaseLost as exc:  # stalled past its lease: another replica took the thread over
        return f"lost {exc}"
    except ThreadBusy as exc:
        return f"busy {exc}"
    except ValueError as exc:  # another replica finished it since we listed it
        return f"gone {exc}"
    except RunCancelled as exc:  # cancel_thread, from another replica
        last = exc.messages[-1]
        kept = [r.id for r in last.responses] if isinstance(last, ToolResponseMessage) else []
        return f"cancelled {','.join(kept)}"
    mark("finished", thread, result.text.replace(" ", "_"))
    return "ran"


async def unfinished(saver: Any) -> list[str]:
    found: list[str] = []
    while page := await saver.threads(after=found[-1] if found else None, limit=100):
        found += [info.thread_id for info in page]
    return found


async def serve(agent: ReactAgent, saver: Any, concurrency: int) -> None:
    limiter = anyio.CapacityLimiter(concurrency)
    deadline = time.monotonic() + 120

    async def one(thread: str) -> None:
        async with limiter:
            await resume(agent, thread)

    while threads := await unfinished(saver):
        assert time.monotonic() < deadline, "threads left unfinished"
        random.shuffle(threads)  # replicas listing together spread over the threads
        async with anyio.create_task_group() as tg:
            for thread in threads:
                tg.start_soon(one, thread)
        await anyio.sleep(0.05)  # threads owned elsewhere: look again soon


async def main() -> None:
    async with open_saver() as saver:
        model = ScriptedChatModel([reply] * 100_000)
        agent = ReactAgent(
            "replica", model, tools=[work], parallel_tool_execution=True, saver=saver
        )
        if mode == "serve":
            print("ready", flush=True)
            await serve(agent, saver, int(rest[0]))
            print("served", flush=True)
        else:
            go_file, thread = rest
            print("ready", flush=True)
            while not await anyio.Path(go_file).exists():  # noqa: ASYNC110 (another process's signal)
                await anyio.sleep(0.001)
            print(await resume(agent, thread), flush=True)


anyio.run(main, backend=backend)
