"""Blocking (sync) tools in parallel mode: each call runs in a worker thread, so their
blocking work overlaps. A call past its timeout is abandoned: the run goes on at once,
and the thread stops at its next ``check_cancelled()``. It takes about a second.

    python examples/sync_tools.py [asyncio|trio]
"""

from __future__ import annotations

import sys
import threading
import time
import zlib

import anyio
import anyio.to_thread

from reactcore import (
    AssistantMessage,
    ReactAgent,
    RunFinished,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
    ToolResponseMessage,
    check_cancelled,
    tool,
)
from reactcore.testing import ScriptedChatModel

scan_stopped = threading.Event()


@tool
def checksum(path: str) -> str:
    """The checksum of a file: 0.5 s of blocking work."""
    for _ in range(10):
        time.sleep(0.05)
        check_cancelled()
    crc = zlib.crc32(path.encode())
    return f"{path}: {crc:08x} (computed in thread {threading.get_native_id()})"


@tool(timeout=1.0)
def scan_archive() -> str:
    """Scan the whole archive: 30 s of blocking work, but its timeout is 1 s."""
    try:
        for _ in range(600):
            time.sleep(0.05)
            check_cancelled()  # once the call timed out, this raises and the thread ends
        return "archive clean"
    finally:
        scan_stopped.set()


async def main() -> None:
    calls = [
        ToolCall("c1", "checksum", '{"path": "a.csv"}'),
        ToolCall("c2", "checksum", '{"path": "b.csv"}'),
        ToolCall("c3", "scan_archive"),
    ]
    model = ScriptedChatModel([AssistantMessage("", calls), "Checksums done; the scan timed out."])
    agent = ReactAgent("files", model, tools=[checksum, scan_archive], parallel_tool_execution=True)
    start = time.perf_counter()
    print(f"the event loop runs in thread {threading.get_native_id()}")

    def log(line: str) -> None:
        print(f"{time.perf_counter() - start:5.2f} s  {line}")

    async with agent.stream("Check my files") as events:
        async for event in events:
            if isinstance(event, ToolCallStarted):
                log(f"started   {event.call_id} {event.name}")
            elif isinstance(event, ToolCallFinished):
                log(f"finished  {event.call_id} {event.name} after {event.duration:.2f} s")
            elif isinstance(event, ToolCallTimedOut):
                log(f"timed out {event.call_id} {event.name} after {event.timeout:g} s")
            elif isinstance(event, RunFinished):
                log(f"answer: {event.result.text}")
                responses = event.result.messages[-2]
                assert isinstance(responses, ToolResponseMessage)
                for response in responses.responses:
                    print(f"         {response.id}: {response.response_data}")
    took = time.perf_counter() - start
    print(f"run: {took:.2f} s for 0.5 + 0.5 + 30 s of blocking work")
    # The run did not wait for the abandoned thread; it is still running, until its check.
    await anyio.to_thread.run_sync(scan_stopped.wait, 10.0)
    log("the abandoned scan thread has stopped, at its next check_cancelled()")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
