"""The model of an agent served with ``serve(agent, sampling=True)``: the MCP client's.

``ClientModel`` is a thin ``ChatModel``: each request becomes a ``sampling/createMessage``
request to the client whose ``ask`` call runs the agent (found through the call's request
context, which ``serve`` sets for the run), and the client's answer is the model's. The
agent's tools go with the request (sampling with tools); the client's ``toolUse`` blocks
are the model's tool calls. A model call made outside an ``ask`` call is a ``ModelError``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any

import anyio.lowlevel
import attrs
import mcp.types as mt
from mcp.server.mcpserver import Context

from .._exceptions import ModelError
from .._messages import AssistantMessage, Message, ToolCall, ToolResponseMessage, UserMessage
from ..models.base import ModelChunk, ModelRequest, ModelResponse, ToolCallDelta

_asking: ContextVar[Context | None] = ContextVar("reactcore_mcp_asking", default=None)
DEFAULT_MAX_TOKENS = 4096
"""``maxTokens`` of a request whose options set none (the protocol requires one)."""


@contextmanager
def answering(ctx: Context) -> Iterator[None]:
    """Model calls made in this block (and the tasks it starts) go to ``ctx``'s client."""
    token = _asking.set(ctx)
    try:
        yield
    finally:
        _asking.reset(token)


def _text(text: str) -> mt.TextContent:
    return mt.TextContent(type="text", text=text)


def _sampling(message: Message) -> list[mt.SamplingMessage]:
    """``message`` as sampling messages (a system message goes in ``systemPrompt``)."""
    match message:
        case UserMessage(text=text):
            return [mt.SamplingMessage(role="user", content=_text(text))]
        case AssistantMessage(text=text, tool_calls=calls):
            blocks: list[Any] = [_text(text)] if text else []
            blocks += [
                mt.ToolUseContent(
                    type="tool_use", id=c.id, name=c.name, input=json.loads(c.arguments)
                )
                for c in calls
            ]
            return [mt.SamplingMessage(role="assistant", content=blocks or _text(""))]
        case ToolResponseMessage(responses=responses):
            results = [
                mt.ToolResultContent(
                    type="tool_result",
                    tool_use_id=r.id,
                    content=[_text(r.response_data)],
                    is_error=r.is_error,
                )
                for r in responses
            ]
            return [mt.SamplingMessage(role="user", content=results)]  # type: ignore[arg-type]
    return []


def _answer(result: mt.CreateMessageResult | mt.CreateMessageResultWithTools) -> ModelResponse:
    blocks = result.content if isinstance(result.content, list) else [result.content]
    text = "".join(b.text for b in blocks if isinstance(b, mt.TextContent))
    calls = tuple(
        ToolCall(b.id, b.name, json.dumps(b.input))
        for b in blocks
        if isinstance(b, mt.ToolUseContent)
    )
    reason = {"maxTokens": "length", "toolUse": "tool_calls"}.get(result.stop_reason or "", "stop")
    return ModelResponse(AssistantMessage(text, calls), finish_reason=reason)


@attrs.frozen
class ClientModel:
    """A ``ChatModel`` answered by the MCP client of the ``ask`` call it runs in."""

    async def call(self, request: ModelRequest) -> ModelResponse:
        ctx = _asking.get()
        if ctx is None:
            raise ModelError(
                "the model of an agent served with sampling=True is the MCP client's: "
                "it answers only during an ask call"
            )
        messages = [m for message in request.messages for m in _sampling(message)]
        specs = request.visible_tool_specs()
        tools = [
            mt.Tool(name=s.name, description=s.description, input_schema=dict(s.parameters))
            for s in specs
        ]
        system = request.system_message.text if request.system_message is not None else None
        options = request.options
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # sampling is deprecated in the newest protocol
                result = await ctx.request_context.session.create_message(
                    messages,
                    max_tokens=options.max_tokens or DEFAULT_MAX_TOKENS,
                    system_prompt=system,
                    temperature=options.temperature,
                    tools=tools or None,
                    related_request_id=ctx.request_id,
                )
        except Exception as exc:
            raise ModelError(
                f"the MCP client did not answer the sampling request: {type(exc).__name__}: {exc}"
            ) from exc
        return _answer(result)

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelChunk]]:
        """The whole answer as one chunk (sampling does not stream)."""
        response = await self.call(request)

        async def chunks() -> AsyncIterator[ModelChunk]:
            await anyio.lowlevel.checkpoint()
            message = response.message
            deltas = tuple(
                ToolCallDelta(i, c.id, c.name, c.arguments)
                for i, c in enumerate(message.tool_calls)
            )
            yield ModelChunk(message.text, deltas, finish_reason=response.finish_reason)

        yield chunks()
