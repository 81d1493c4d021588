"""``ScriptedChatModel``: a deterministic chat model for tests. It is not a real model.

It answers each request with the next item of its script, in order, and records every
request it received in ``requests``. Streaming splits the answer the way a provider
does, so code that assembles chunks is exercised: text in pieces of ``chunk_size``
characters, each tool call as a delta with its id and name followed by deltas with pieces
of its arguments, then a chunk with the finish reason and, when usage is reported, a last
chunk with only the usage (see ``message_chunks``).

Usage is what the test asks for: ``None`` (not reported), one fixed ``Usage`` for every
reply, or a callable computing it — ``character_usage`` counts characters (not tokens:
there is no tokenizer here).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import TypeAlias

import attrs
from anyio.lowlevel import checkpoint

from .. import _validate as valid
from .._exceptions import ScriptExhaustedError
from .._messages import AssistantMessage, Message, ToolResponseMessage
from .base import ModelChunk, ModelRequest, ModelResponse, ToolCallDelta, Usage, ensure_complete

Reply: TypeAlias = (
    AssistantMessage
    | str
    | BaseException
    | Callable[[ModelRequest], AssistantMessage | Awaitable[AssistantMessage]]
)
"""One script item: a message (a ``str`` is a text-only message), an exception to raise,
or a callable (sync or async) making the message from the request."""

UsageFn: TypeAlias = Callable[[ModelRequest, AssistantMessage], Usage]


def _message_chars(message: Message) -> int:
    if isinstance(message, ToolResponseMessage):
        return sum(len(r.response_data) for r in message.responses)
    if isinstance(message, AssistantMessage):
        return _reply_chars(message)
    return len(message.text)


def _reply_chars(message: AssistantMessage) -> int:
    return len(message.text) + sum(len(c.name) + len(c.arguments) for c in message.tool_calls)


def character_usage(request: ModelRequest, message: AssistantMessage) -> Usage:
    """Usage counted in characters, for tests that check usage is summed and reported.

    Prompt: the characters of the system message and of every message's text, tool call
    names and arguments, and tool results; completion: the same for the reply.
    """
    prompt = sum(_message_chars(m) for m in request.messages)
    if request.system_message is not None:
        prompt += len(request.system_message.text)
    completion = _reply_chars(message)
    return Usage(prompt, completion, prompt + completion)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def message_chunks(
    message: AssistantMessage, *, chunk_size: int = 4, usage: Usage | None = None
) -> list[ModelChunk]:
    """``message`` as the chunks OpenAI would stream: its reasoning, then its text, in
    pieces of ``chunk_size`` characters; per tool call, a delta with its id and name, then
    its arguments in pieces;
    a chunk with the finish reason; last, when given, a chunk with only the usage.

    ``ChunkAssembler`` turns them back into ``message`` (without its metadata).
    """
    chunks = [ModelChunk(reasoning=piece) for piece in _pieces(message.reasoning, chunk_size)]
    chunks += [ModelChunk(text=piece) for piece in _pieces(message.text, chunk_size)]
    for index, call in enumerate(message.tool_calls):
        chunks.append(ModelChunk(tool_calls=[ToolCallDelta(index, call.id, call.name)]))
        chunks.extend(
            ModelChunk(tool_calls=[ToolCallDelta(index, arguments=piece)])
            for piece in _pieces(call.arguments, chunk_size)
        )
    finish = message.finish_reason or ("tool_calls" if message.tool_calls else "stop")
    chunks.append(ModelChunk(finish_reason=finish))
    if usage is not None:
        chunks.append(ModelChunk(usage=usage))
    return chunks


@attrs.define(eq=False)
class _Chunks:
    """An async iterator over ready chunks, a checkpoint before each (so it can be cancelled)."""

    chunks: list[ModelChunk]
    position: int = 0

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> ModelChunk:
        await checkpoint()
        if self.position >= len(self.chunks):
            raise StopAsyncIteration
        self.position += 1
        return self.chunks[self.position - 1]


def _to_replies(value: Iterable[Reply]) -> tuple[Reply, ...]:
    return tuple(value) if valid.ITERABLE.accepts(value) else valid.leave(value)


_REPLIES = valid.each(
    valid.satisfies(
        "an AssistantMessage, a str, an exception or a callable",
        test=lambda v: isinstance(v, AssistantMessage | str | BaseException) or callable(v),
    )
)


@attrs.define(eq=False)
class ScriptedChatModel:
    """A chat model replying from a script, in order; for tests, not a real model.

    ``script`` items are ``AssistantMessage``s, strings (text-only messages), exceptions
    (raised, e.g. a ``ModelHTTPError`` to test retries and fallbacks) or callables
    ``(request) -> AssistantMessage``, sync or async. ``requests`` records every request
    received, in order (even one that finds the script exhausted). ``usage`` is ``None``,
    a fixed ``Usage`` per reply, or a callable such as ``character_usage``.
    """

    script: tuple[Reply, ...] = attrs.field(
        converter=_to_replies,
        validator=_REPLIES,
    )
    usage: Usage | UsageFn | None = attrs.field(
        default=None,
        kw_only=True,
        validator=valid.satisfies(
            "a Usage or a callable",
            test=lambda v: isinstance(v, Usage) or callable(v),
            optional=True,
        ),
    )
    chunk_size: int = attrs.field(default=4, kw_only=True, validator=valid.integer(minimum=1))
    requests: list[ModelRequest] = attrs.field(factory=list, init=False)

    async def call(self, request: ModelRequest) -> ModelResponse:
        """The next reply of the script, whole."""
        await checkpoint()
        message = await self._next_reply(request)
        return ensure_complete(ModelResponse(message, self._usage_of(request, message)))

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelChunk]]:
        """The next reply of the script, in small chunks (errors raise on entering)."""
        await checkpoint()
        message = await self._next_reply(request)
        usage = self._usage_of(request, message)
        yield _Chunks(message_chunks(message, chunk_size=self.chunk_size, usage=usage))

    async def _next_reply(self, request: ModelRequest) -> AssistantMessage:
        self.requests.append(request)
        index = len(self.requests) - 1
        if index >= len(self.script):
            raise ScriptExhaustedError(
                f"ScriptedChatModel has {len(self.script)} replies and got request #{index + 1}"
            )
        reply = self.script[index]
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, str):
            return AssistantMessage(reply)
        if isinstance(reply, AssistantMessage):
            return reply
        made = reply(request)
        return await made if inspect.isawaitable(made) else made

    def _usage_of(self, request: ModelRequest, message: AssistantMessage) -> Usage | None:
        if self.usage is None or isinstance(self.usage, Usage):
            return self.usage
        return self.usage(request, message)
