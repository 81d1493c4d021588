"""Resuming a run after its process was killed mid-batch, from SQLite checkpoints.

The parent starts the run in a child process: the model asks for five tool calls at
once; three finish quickly, two hang. Each finished call is checkpointed in the SQLite
file. Once the parent reads three finished calls there, it kills the child with
SIGKILL (no cleanup, no goodbye) and resumes the thread itself with
``agent.invoke(None, config)``: the three finished calls are not run again, the two
missing ones run in the parent, and the run ends. It prints which call ran in which
process. POSIX only (SIGKILL); it takes a second or two.

    python examples/resume_after_crash.py [asyncio|trio]
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

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

THREAD = RunnableConfig(thread_id="batch")
CALLS = [ToolCall(f"w{n}", "work", json.dumps({"n": n})) for n in range(5)]
ROLE = "parent"
MARKS = Path()


@tool
def work(n: int) -> str:
    """Work on item n (a sync tool: it runs in a worker thread); in the child, items 3
    and 4 hang (the child is killed first)."""
    time.sleep(600 if ROLE == "child" and n >= 3 else 0.05 * n)
    with MARKS.open("a") as marks:  # which process ran the call
        marks.write(f"w{n} {ROLE} {os.getpid()}\n")
    return f"item {n} done"


def summary(request: ModelRequest) -> AssistantMessage:
    """The stand-in model's final answer: what the calls answered."""
    last = request.messages[-1]
    assert isinstance(last, ToolResponseMessage)
    return AssistantMessage(f"{len(last.responses)} items done")


def agent(saver: SqliteSaver, script: list[Any]) -> ReactAgent:
    model = ScriptedChatModel(script)
    return ReactAgent("batch", model, tools=[work], parallel_tool_execution=True, saver=saver)


async def child(db: str) -> None:
    """Start the run; it is killed before it ends."""
    async with SqliteSaver(db) as saver:
        await agent(saver, [AssistantMessage("", CALLS), summary]).invoke("go", THREAD)


async def checkpointed(saver: SqliteSaver) -> list[str]:
    """The ids of the calls the thread's latest checkpoint records as answered."""
    latest = await saver.get("batch")
    last = latest.state["messages"][-1] if latest is not None else None
    return [r.id for r in last.responses] if isinstance(last, ToolResponseMessage) else []


async def parent(db: str, backend: str) -> None:
    print(f"parent (pid {os.getpid()}): starting the run in a child process")
    command = [sys.executable, __file__, backend, "child", db, str(MARKS)]
    async with SqliteSaver(db) as saver:
        process = await anyio.open_process(command, stdout=None, stderr=None)
        try:
            with anyio.fail_after(30):
                # Another process writes the file: there is no event to wait on, so poll.
                while len(done := await checkpointed(saver)) < 3:  # noqa: ASYNC110
                    await anyio.sleep(0.02)
            print(f"checkpointed in the child: {', '.join(sorted(done))}")
            process.send_signal(signal.SIGKILL)
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.kill()  # on any failure above: never leave the child behind
                code = await process.wait()
        print(f"child (pid {process.pid}) killed with SIGKILL: exit status {code}")
        print(f"parent (pid {os.getpid()}): resuming thread {THREAD.thread_id!r}")
        result = await agent(saver, [summary]).invoke(None, THREAD)
    ran = [line.split() for line in (await anyio.Path(MARKS).read_text()).splitlines()]
    for call_id, role, pid in sorted(ran):
        print(f"{call_id} ran in the {role} (pid {pid})")
    counts = Counter(call_id for call_id, _, _ in ran)
    print("each call ran once" if set(counts.values()) == {1} else f"ran twice: {counts}")
    print(f"answer: {result.text} ({result.model_calls} model calls)")


def main() -> None:
    global ROLE, MARKS
    backend = sys.argv[1] if len(sys.argv) > 1 else "asyncio"
    if sys.argv[2:3] == ["child"]:
        ROLE, db, MARKS = "child", sys.argv[3], Path(sys.argv[4])
        anyio.run(child, db, backend=backend)
        return
    with tempfile.TemporaryDirectory() as tmp:
        MARKS = Path(tmp, "marks.txt")
        anyio.run(parent, str(Path(tmp, "runs.db")), backend, backend=backend)


if __name__ == "__main__":
    main()
