"""Keeping large tool results out of the model's context: ``LargeResultEviction``.

A tool result over the limit reaches the model as its head, its size and a handle, with a
tool to read the rest by pages. The whole text is filed, before the next model call, in
the state key ``_evicted_results_``: a list of messages, one ``ToolResponseMessage`` per
result (its one response's id is the handle). Savers keep a list of messages as an
append-only log with large texts stored once by content hash, so a result is written once,
whatever the number of checkpoints and snapshots after it (the text the conversation held
until then is the same blob). A run resumed in another process reads it as the first one
would have.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from .. import _validate as valid
from .._config import RunnableConfig
from .._interceptors import ToolCallRequest, ToolCallResponse, ToolHandler
from .._loop import unanswered
from .._messages import AssistantMessage, Message, ToolResponse, ToolResponseMessage
from .._state import MESSAGES, KeyStrategy, OverAllState, rewrite
from .._tools import SAFE_NAME, Tool, ToolContext
from ._limits import name_field

EVICTED = "_evicted_results_"
"""The state key of the stored results: one ``ToolResponseMessage`` per result, its one
response's id the handle and its text the whole result."""
HANDLES = "evicted_results"
"""The metadata key, on a ``ToolResponseMessage`` of the conversation, naming the handle of
each of its results that was stored (call id → handle)."""
_LISTED = 10  # handles named in the answer to an unknown one


def _tenth(self: Any) -> int:
    """The default ``head_chars``: a tenth of ``max_chars`` (0 while that is still to be
    refused by its own check)."""
    return self.max_chars // 10 if type(self.max_chars) is int else 0


def _head_fits(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    _HEAD(instance, attribute, value)
    if value > instance.max_chars:
        raise ValueError(
            f"{type(instance).__name__}.{attribute.alias} must be at most max_chars "
            f"({instance.max_chars}), got {value!r}"
        )


_HEAD = valid.integer(minimum=0)
_TOOL_NAME = valid.satisfies(
    "a tool name",
    str,
    limits=[(SAFE_NAME.fullmatch, "must be 1 to 64 letters, digits, '_' or '-'")],
)


def _error(text: str) -> ToolCallResponse:
    return ToolCallResponse(f"Error: {text}", is_error=True)


def _stored(state: Mapping[str, Any]) -> Iterator[ToolResponse]:
    for message in state.get(EVICTED) or ():
        if isinstance(message, ToolResponseMessage):
            yield from message.responses


def _latest_answers(messages: Sequence[Message]) -> Iterator[int]:
    """The positions of the tool answers after the last assistant message, in order."""
    start = len(messages)
    while start > 0 and not isinstance(messages[start - 1], AssistantMessage):
        start -= 1
    for i in range(start, len(messages)):
        if isinstance(messages[i], ToolResponseMessage):
            yield i


@attrs.frozen
class LargeResultEviction:
    """A hook that keeps tool results longer than ``max_chars`` characters out of the
    model's context: the model gets the first ``head_chars`` (by default a tenth of
    ``max_chars``), the size and a handle, and a
    ``read_result(handle, offset, length)`` tool (``tool_name``) that reads any part of
    the stored text, at most ``max_chars`` characters at a time.

    The hook files the results of the last batch before the next model call
    (``before_model``): each whole text goes to the state key ``_evicted_results_``, a
    list of ``ToolResponseMessage`` (read them with ``stored_results(state)``), and the
    conversation's answer is cut to its head, its message's metadata naming the handle
    (``metadata["evicted_results"]``: call id → handle). Savers store a list of messages
    once, as a log, and its large texts once by content hash: a stored result costs its
    size once, however many checkpoints follow, and a run resumed from a saver reads it as
    the first one would have. Results stay for the conversation's life (a summary of the
    conversation leaves them). A handle is ``<call id>#<n>``, ``n`` the number of results
    stored before the call's batch: unique in the conversation, and the same if the batch
    is run again after a crash. A bad handle or offset is an error result for the model to
    correct, never an exception.

    An error result over the limit is cut to its head by the hook's tool interceptor
    instead, at once. The hook runs early (``order=-200``): hooks of a higher ``order``
    (``SummarizationHook``'s count of the next request included) see the conversation
    with the results cut; its interceptor is outermost. What it stores is the text the
    model would have seen, after the other interceptors (``PIIRedactionHook``'s included).
    """

    max_chars: int = attrs.field(default=20_000, validator=valid.integer(minimum=1))
    head_chars: int = attrs.field(
        default=attrs.Factory(_tenth, takes_self=True),
        validator=_head_fits,
    )
    tool_name: str = attrs.field(default="read_result", validator=_TOOL_NAME)
    name: str = name_field("large_result_eviction")
    order: int = attrs.field(default=-200, validator=valid.integer())
    _reader: Tool = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        description = (
            "Read part of a tool result that was too large to show whole: up to "
            f"{self.max_chars} characters of the result stored under `handle`, from "
            "character `offset` (0 is the start). The answer starts with a line saying "
            "which characters it holds and where to read on."
        )
        reader = Tool.from_function(self._read, name=self.tool_name, description=description)
        object.__setattr__(self, "_reader", reader)

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The tool the hook brings: ``read_result``."""
        return (self._reader,)

    @property
    def interceptors(self) -> tuple[Any, ...]:
        """The tool interceptor that cuts large error results."""
        return (_ErrorCutter(self),)

    @property
    def key_strategies(self) -> Mapping[str, KeyStrategy]:
        """``_evicted_results_`` appends: each filing adds its results."""
        return {EVICTED: KeyStrategy.APPEND}

    @staticmethod
    def stored_results(state: Mapping[str, Any]) -> dict[str, str]:
        """The results stored in ``state`` (a run's, a checkpoint's): handle → whole text,
        in the order they were stored."""
        return {r.id: r.response_data for r in _stored(state)}

    async def before_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        """Files the over-long results of the last batch (see the class docstring)."""
        messages: Sequence[Message] = state.get(MESSAGES) or ()
        if not messages or unanswered(state):
            return None
        n = len(state.get(EVICTED) or ())  # one result a message
        edits, filed = {}, []
        for i in _latest_answers(messages):
            message = messages[i]
            assert isinstance(message, ToolResponseMessage)
            edits[i], stored = self._file(message, n)
            filed += stored
        if not filed:
            return None
        edited = [edits.get(i, m) for i, m in enumerate(messages)]
        return {MESSAGES: rewrite(messages, edited), EVICTED: filed}

    def _file(
        self, message: ToolResponseMessage, n: int
    ) -> tuple[ToolResponseMessage, list[ToolResponseMessage]]:
        """``message`` with its over-long results cut (the same message if none is), and
        the results to store, each as handle ``<call id>#<n>``."""
        before: Mapping[str, str] = message.metadata.get(HANDLES) or {}
        handles, responses, stored = dict(before), [], []
        for response in message.responses:
            if not self._fits(response) and response.id not in handles:
                handle = handles[response.id] = f"{response.id}#{n}"
                whole = ToolResponse(handle, response.name, response.response_data)
                stored.append(ToolResponseMessage([whole]))
                response = attrs.evolve(response, response_data=self._shown(response, handle))
            responses.append(response)
        if not stored:
            return message, []
        return ToolResponseMessage(responses, {**message.metadata, HANDLES: handles}), stored

    def _fits(self, response: ToolResponse) -> bool:
        return (
            len(response.response_data) <= self.max_chars
            or response.is_error
            or response.name == self.tool_name
        )

    def _shown(self, response: ToolResponse, handle: str) -> str:
        """What the model gets of an over-long result stored as ``handle``."""
        text = response.response_data
        size, head = len(text), text[: self.head_chars]
        call = f'{self.tool_name}(handle="{handle}", offset={len(head)})'
        then = (
            f"The first {len(head)} follow; read on with {call}" if head else f"Read it with {call}"
        )
        note = (
            f"[Result too large to show whole: {size} characters (the limit is "
            f'{self.max_chars}), stored as "{handle}". {then}.]'
        )
        return f"{note}\n{head}" if head else note

    def cut_error(self, response: ToolCallResponse) -> ToolCallResponse:
        """An error ``response`` over ``max_chars`` as the model gets it: its head."""
        text = response.text
        size, head = len(text), text[: self.head_chars]
        cut = f"[error cut: {size} characters, the first {len(head)} shown]"
        return attrs.evolve(response, text=f"{cut}\n{head}" if head else cut)

    async def _read(
        self, handle: str, context: ToolContext, offset: int = 0, length: int | None = None
    ) -> str | ToolCallResponse:
        """Read part of a stored tool result.

        Args:
            handle: The handle the result was stored under.
            offset: The first character to read (0 is the start).
            length: How many characters to read (at most the limit; all that fit when left out).
        """
        found = next((r for r in _stored(context.state) if r.id == handle), None)
        if found is None:
            known = [r.id for r in _stored(context.state)][-_LISTED:]
            listed = ", ".join(f'"{h}"' for h in known) if known else "none"
            return _error(f'no stored result has the handle "{handle}" (stored: {listed})')
        text = found.response_data
        size = len(text)
        if offset < 0 or offset >= size:
            return _error(
                f"offset {offset} is outside the result: it has {size} characters "
                f"(offsets 0 to {size - 1})"
            )
        if length is not None and length < 1:
            return _error(f"length must be at least 1, got {length}")
        end = min(size, offset + min(length or self.max_chars, self.max_chars))
        after = f"next offset: {end}" if end < size else "the end"
        return f"[{handle}: characters {offset} to {end} of {size}; {after}]\n{text[offset:end]}"


@attrs.frozen
class _ErrorCutter:
    """The hook's tool interceptor: error results over the limit cut to their head (they
    are not stored: the model is to correct the call, not to page through its error)."""

    hook: LargeResultEviction

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolCallResponse:
        response = await handler(request)
        if not response.is_error or len(response.text) <= self.hook.max_chars:
            return response
        return self.hook.cut_error(response)
