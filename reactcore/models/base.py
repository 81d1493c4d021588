"""What a chat model receives and returns, and the ``ChatModel`` protocol.

A model answers a ``ModelRequest`` either whole (``call``) or as a stream of
``ModelChunk``s (``stream``, an async context manager so the underlying response is always
closed, even on cancellation). ``ChunkAssembler`` turns chunks back into one message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

import attrs

from .. import _validate as valid
from .._exceptions import ModelStreamError, ModelTruncatedError
from .._messages import AssistantMessage, Message, SystemMessage, ToolCall
from .._serde import clean_arguments, clean_text, store_when_set
from .._tools import Tool

RETRY_LISTENER = "_retry_listener_"
"""The key, in a request's ``context``, of the run's ``RetryListener`` (the loop sets it)."""

RetryListener = Callable[[int, float, str, "str | None"], Awaitable[None]]
"""Told ``(attempt, delay_s, reason, model)`` before a model call is tried again."""


async def report_retry(
    context: Mapping[str, Any],
    attempt: int,
    delay_s: float,
    reason: str,
    model: str | None = None,
) -> None:
    """Tell the run's retry listener, if any, that attempt ``attempt`` (from 1) failed for
    ``reason`` and the call is tried again after ``delay_s`` seconds (with ``model``, when
    a fallback switches models). Every retry path calls it before the next attempt, so a
    consumer of the events can discard what the failed attempt streamed."""
    listener: RetryListener | None = context.get(RETRY_LISTENER)
    if listener is not None:
        await listener(attempt, delay_s, reason, model)


def model_name(model: object) -> str:
    """A chat model's name for events and logs: its ``model`` attribute, else its class."""
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__


_COUNT = valid.integer()


@attrs.frozen
class Usage:
    """Token counts of one model call, or a sum of several (``a + b``).

    ``cached_tokens`` (of the prompt, read from the provider's cache) and
    ``reasoning_tokens`` (of the completion, spent thinking) are parts of the counts
    before them, as providers report them in ``prompt_tokens_details`` and
    ``completion_tokens_details``; ``cache_creation_tokens`` (of the prompt, written to
    the provider's cache: Anthropic's prompt caching) too; 0 when not reported.
    """

    # Not checked for sign: a difference of two usages (``a - b``) is a Usage too.
    prompt_tokens: int = attrs.field(default=0, validator=_COUNT)
    completion_tokens: int = attrs.field(default=0, validator=_COUNT)
    total_tokens: int = attrs.field(default=0, validator=_COUNT)
    cached_tokens: int = attrs.field(default=0, validator=_COUNT)
    reasoning_tokens: int = attrs.field(default=0, validator=_COUNT)
    cache_creation_tokens: int = attrs.field(default=0, validator=_COUNT)

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(a + b for a, b in zip(_counts(self), _counts(other), strict=True)))

    def __sub__(self, other: Usage) -> Usage:
        return Usage(*(a - b for a, b in zip(_counts(self), _counts(other), strict=True)))


def _counts(usage: Usage) -> tuple[int, ...]:
    return (
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.total_tokens,
        usage.cached_tokens,
        usage.reasoning_tokens,
        usage.cache_creation_tokens,
    )


store_when_set(Usage, "cached_tokens", "reasoning_tokens", "cache_creation_tokens")


_SAMPLING = valid.number(minimum=0, optional=True)


@attrs.frozen
class ChatOptions:
    """Sampling and format options; ``None`` leaves the provider's default.

    ``parallel_tool_calls`` says whether the model may ask for several tool calls in one
    answer; it is sent only with tools (providers reject it without).
    """

    model: str | None = attrs.field(default=None, validator=valid.text(optional=True))
    temperature: float | None = attrs.field(default=None, validator=_SAMPLING)
    top_p: float | None = attrs.field(default=None, validator=_SAMPLING)
    max_tokens: int | None = attrs.field(
        default=None, validator=valid.integer(minimum=1, optional=True)
    )
    tool_choice: str | Mapping[str, Any] | None = attrs.field(
        default=None,
        validator=valid.instance_of((str, Mapping), "a str or a mapping", optional=True),
    )
    response_format: Mapping[str, Any] | None = attrs.field(
        default=None, validator=valid.mapping(optional=True)
    )
    extra_body: Mapping[str, Any] = attrs.field(factory=dict, hash=False, validator=valid.mapping())
    parallel_tool_calls: bool | None = attrs.field(
        default=None, validator=valid.boolean(optional=True)
    )


@attrs.frozen
class ToolSpec:
    """What the model is told about a tool: its name, description and parameter schema."""

    name: str = attrs.field(validator=valid.text(non_empty=True))
    description: str = attrs.field(validator=valid.text())
    parameters: Mapping[str, Any] = attrs.field(hash=False, validator=valid.mapping())

    @classmethod
    def of(cls, tool: Tool) -> ToolSpec:
        return cls(tool.name, tool.description, tool.parameters)


def _to_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value)


@attrs.frozen
class ModelRequest:
    """One request to a chat model. Interceptors derive new ones with ``attrs.evolve``.

    ``tools`` names the tools the model may see (tool selection narrows it);
    ``tool_specs`` describes every tool the agent has; ``dynamic_tools`` are tools an
    interceptor added for this run (the tool node can resolve them too); ``context`` is
    the run's shared working space; ``chat_model``, when set, answers this request instead
    of the node's model (how ``ModelFallbackInterceptor`` switches models). ``purpose``
    says what the call is for: ``"agent"`` for the loop's own turns, ``"summary"`` for the
    call ``SummarizationHook`` makes; events and spans carry it.
    """

    messages: tuple[Message, ...] = attrs.field(converter=_to_tuple)
    system_message: SystemMessage | None = None
    tools: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple)
    tool_specs: tuple[ToolSpec, ...] = attrs.field(default=(), converter=_to_tuple)
    options: ChatOptions = ChatOptions()
    context: dict[str, Any] = attrs.field(factory=dict, eq=False, hash=False, repr=False)
    dynamic_tools: tuple[Tool, ...] = attrs.field(default=(), converter=_to_tuple, eq=False)
    chat_model: ChatModel | None = attrs.field(default=None, eq=False, repr=False)
    purpose: str = attrs.field(default="agent", kw_only=True)

    def visible_tool_specs(self) -> list[ToolSpec]:
        """Specs of the tools named in ``tools``, known ones and dynamic ones, in order."""
        specs = {s.name: s for s in self.tool_specs}
        specs.update((t.name, ToolSpec.of(t)) for t in self.dynamic_tools)
        return [specs[name] for name in self.tools if name in specs]


@attrs.frozen
class ModelResponse:
    """A model's whole answer: the message, its token usage if reported, the raw payload,
    and why the model stopped (``"stop"``, ``"tool_calls"``, ``"length"`` …) if it said."""

    message: AssistantMessage = attrs.field(
        validator=valid.instance_of(AssistantMessage, "an AssistantMessage")
    )
    usage: Usage | None = attrs.field(
        default=None, validator=valid.instance_of(Usage, "a Usage", optional=True)
    )
    raw: Any = attrs.field(default=None, eq=False, repr=False)
    finish_reason: str | None = attrs.field(
        default=None, kw_only=True, eq=False, validator=valid.text(optional=True)
    )


@attrs.frozen
class ToolCallDelta:
    """A fragment of the tool call at ``index``: any of id, name, and more arguments.

    ``index`` is ``None`` when the server sent none; ``ChunkAssembler.add`` gives back each
    fragment with the index of the call it was joined to.
    """

    index: int | None
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@attrs.frozen
class ModelChunk:
    """One piece of a streamed answer.

    ``provider_data`` is opaque data for the answer's ``AssistantMessage.provider_data``,
    keyed by provider; a later chunk's entries replace an earlier one's, key by key
    within each provider (a provider sends what it has gathered so far).
    """

    text: str = ""
    tool_calls: tuple[ToolCallDelta, ...] = attrs.field(default=(), converter=_to_tuple)
    usage: Usage | None = None
    finish_reason: str | None = None
    reasoning: str = ""
    provider_data: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict, hash=False)


LENGTH = "length"
"""The finish reason of an answer cut at the token limit."""


def ensure_complete(response: ModelResponse) -> ModelResponse:
    """``response``, unless it was cut at the token limit while it carried tool calls:
    their arguments may be cut too, so it is a ``ModelTruncatedError`` (never run)."""
    message = response.message
    if message.finish_reason == LENGTH and message.tool_calls:
        names = ", ".join(c.name for c in message.tool_calls)
        raise ModelTruncatedError(
            f"the model's answer was cut at its token limit (finish_reason 'length') while "
            f"it asked for tool calls ({names}); their arguments may be incomplete, so none "
            "is run (raise max_tokens, or ask for less)",
            answer=message,
        )
    return response


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: whole answers and streamed answers to a ``ModelRequest``."""

    async def call(self, request: ModelRequest) -> ModelResponse: ...

    def stream(
        self, request: ModelRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[ModelChunk]]: ...


@attrs.define
class _PartialCall:
    id: str | None = None
    name: list[str] = attrs.field(factory=list)
    arguments: list[str] = attrs.field(factory=list)

    def add(self, delta: ToolCallDelta) -> None:
        """Join ``delta`` in: names and arguments concatenate (servers split both); the id
        is the first one sent (one repeated in every fragment is kept once)."""
        if delta.id and not self.id:
            self.id = delta.id
        if delta.name:
            self.name.append(delta.name)
        if delta.arguments:
            self.arguments.append(delta.arguments)


@attrs.define
class ChunkAssembler:
    """Gathers streamed chunks into one ``ModelResponse``.

    Tool-call fragments are joined by index, whatever order ids, names and argument pieces
    arrive in: names and arguments are concatenated (servers split both), an id repeated
    in every fragment is kept once. Parallel calls sent at one index (some servers send
    every call at index 0) or without an index stay apart: a fragment with a new id at an
    index that holds a call with another id starts a new call; a fragment without an index
    continues the call with its id, or else the last call. ``result()`` raises
    ``ModelStreamError`` for a call left without name, and ``ModelTruncatedError`` for
    tool calls cut at the token limit (see ``ensure_complete``); the message keeps the
    finish reason. A call left without id keeps an empty one, as the same call answered
    whole does: the LLM node gives it ``call_<index>`` (``unique_call_ids``), one rule
    for both.

    ``calls`` holds the calls by their own index: the server's, or, for a call the server
    sent at a taken index or without one, the next free one; the answer lists them in
    that order.
    """

    text: list[str] = attrs.field(factory=list)
    reasoning: list[str] = attrs.field(factory=list)
    calls: dict[int, _PartialCall] = attrs.field(factory=dict)
    usage: Usage | None = None
    finish_reason: str | None = None
    _at: dict[int, int] = attrs.field(factory=dict, init=False, repr=False)
    _last: int | None = attrs.field(default=None, init=False, repr=False)
    provider_data: dict[str, dict[str, Any]] = attrs.field(factory=dict)

    def add(self, chunk: ModelChunk) -> ModelChunk:
        """Join ``chunk`` in; it is given back with each tool-call fragment at the index of
        the call it joined (what a listener should see), unchanged when that is the same."""
        if chunk.text:
            self.text.append(chunk.text)
        if chunk.reasoning:
            self.reasoning.append(chunk.reasoning)
        if chunk.tool_calls:
            placed = tuple(self._join(delta) for delta in chunk.tool_calls)
            if placed != chunk.tool_calls:
                chunk = attrs.evolve(chunk, tool_calls=placed)
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.finish_reason is not None:
            self.finish_reason = chunk.finish_reason
        for provider, data in chunk.provider_data.items():
            self.provider_data.setdefault(provider, {}).update(data)
        return chunk

    def _join(self, delta: ToolCallDelta) -> ToolCallDelta:
        index = self._index_for(delta)
        self.calls[index].add(delta)
        self._last = index
        return delta if delta.index == index else attrs.evolve(delta, index=index)

    def _index_for(self, delta: ToolCallDelta) -> int:
        """The index of the call ``delta`` belongs to, a new call's if it starts one."""
        if delta.index is None:
            if delta.id:
                for index, call in reversed(self.calls.items()):
                    if call.id == delta.id:
                        return index
            elif self._last is not None:
                return self._last
            return self._start(None)
        held = self._at.get(delta.index)
        if held is None:
            return self._start(delta.index)
        known = self.calls[held].id
        if delta.id and known and delta.id != known:
            return self._start(delta.index)
        return held

    def _start(self, wire_index: int | None) -> int:
        """A new call: at ``wire_index`` if it is free, else at the next free index."""
        if wire_index is not None and wire_index not in self.calls:
            index = wire_index
        else:
            index = max(self.calls, default=-1) + 1
        self.calls[index] = _PartialCall()
        if wire_index is not None:
            self._at[wire_index] = index
        return index

    def result(self) -> ModelResponse:
        calls = []
        for index in sorted(self.calls):
            partial = self.calls[index]
            name = "".join(partial.name)
            if not name:
                raise ModelStreamError(f"the stream ended with tool call #{index} missing its name")
            arguments = clean_arguments("".join(partial.arguments) or "{}")
            calls.append(ToolCall(clean_text(partial.id or ""), clean_text(name), arguments))
        text = clean_text("".join(self.text))
        message = AssistantMessage(
            text,
            calls,
            finish_reason=self.finish_reason,
            reasoning=clean_text("".join(self.reasoning)),
            provider_data=self.provider_data,
        )
        return ensure_complete(ModelResponse(message, self.usage, finish_reason=self.finish_reason))
