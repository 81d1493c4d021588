"""Shared test helpers: building tool-call states, and counting live tasks on either backend."""

from __future__ import annotations

import json
from typing import Any

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


async def streamed(model: ChatModel, request: ModelRequest = HI) -> ModelResponse:
    """``model``'s streamed answer to ``request``, assembled as the agent loop assembles it."""
    assembler = ChunkAssembler()
    async with model.stream(request) as chunks:
        async for chunk in chunks:
            assembler.add(chunk)
    return assembler.result()
