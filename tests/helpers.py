"""Shared test helpers: building tool-call states, counting live tasks on either backend,
scripted answers, starting a child process to kill at a chosen moment, reading a model's
stream whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import sniffio

from reactcore import (
    AssistantMessage,
    ChatModel,
    ChunkAssembler,
    ModelRequest,
    ModelResponse,
    OverAllState,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)

ROOT = Path(__file__).resolve().parent.parent
HI = ModelRequest([UserMessage("hi")])


def call(call_id: str, name: str, /, **arguments: Any) -> ToolCall:
    """A tool call as the model would send it (arguments as a JSON string)."""
    return ToolCall(call_id, name, json.dumps(arguments))


def calls_state(*calls: ToolCall, **extra: Any) -> OverAllState:
    """A state whose last message asks for ``calls``."""
    strategies = extra.pop("key_strategies", {})
    messages = [UserMessage("go"), AssistantMessage("", calls)]
    return OverAllState({"messages": messages, **extra}, strategies)


def live_tasks() -> int:
    """How many tasks exist right now in this event loop (the current one included)."""
    if sniffio.current_async_library() == "trio":
        import trio

        def count(task: Any) -> int:
            return 1 + sum(count(t) for n in task.child_nurseries for t in n.child_tasks)

        return count(trio.lowlevel.current_root_task())
    import asyncio

    return len([t for t in asyncio.all_tasks() if not t.done()])


def asks(*calls: tuple[str, str, dict[str, Any]]) -> AssistantMessage:
    """A model answer asking for tool calls given as (id, name, arguments)."""
    return AssistantMessage("", [ToolCall(i, n, json.dumps(a)) for i, n, a in calls])


def response_texts(update: dict[str, Any]) -> list[str]:
    """The response texts of a tool node's ``ToolResponseMessage``, in call order."""
    message = update["messages"][-1]
    assert isinstance(message, ToolResponseMessage)
    return [r.response_data for r in message.responses]


async def cancel_after_first_chunk(
    model: ChatModel, request: ModelRequest, client_left: threading.Event
) -> None:
    """Cancel ``model``'s stream of ``request`` once its first chunk came (the server's
    reply hangs after it); the server must see the client go (``client_left``)."""
    got_first = False
    with anyio.CancelScope() as scope:
        async with model.stream(request) as chunks:
            async for _ in chunks:
                got_first = True
                scope.cancel()
    assert got_first and scope.cancelled_caught
    assert await anyio.to_thread.run_sync(client_left.wait, 5)


def answers(request: ModelRequest) -> AssistantMessage:
    """A scripted model's reply: the tool answers the model saw, joined with `` | ``."""
    texts = [
        r.response_data
        for m in request.messages
        if isinstance(m, ToolResponseMessage)
        for r in m.responses
    ]
    return AssistantMessage(" | ".join(texts))


async def streamed(model: ChatModel, request: ModelRequest = HI) -> ModelResponse:
    """``model``'s streamed answer to ``request``, assembled as the agent loop assembles it."""
    assembler = ChunkAssembler()
    async with model.stream(request) as chunks:
        async for chunk in chunks:
            assembler.add(chunk)
    return assembler.result()


def start_script(script: Path, *args: str) -> subprocess.Popen[str]:
    """``python script args…`` in a child process that imports this checkout's reactcore."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def kill_when(
    process: subprocess.Popen[str], ready: Callable[[], bool], what: str, timeout: float = 30
) -> None:
    """SIGKILL ``process`` as soon as ``ready()`` (polled) is true; fail, saying ``what``
    never happened, if the process ends first or ``timeout`` seconds pass."""
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, f"the process never {what}"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait(10)
    assert process.returncode == -signal.SIGKILL
