"""Keeping large tool results out of the model's context: ``LargeResultEviction``.

A result over the limit is stored in the run's state — under ``_evicted_results_``, a
handle → text map merged key by key, so the results of parallel calls all land — and
the model gets its head, its size and the handle, with a tool to read the rest by pages.
Being state, a stored result is in every checkpoint from then on: a run resumed in
another process reads it as the first one would have.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .. import _validate as valid
from .._interceptors import ToolCallRequest, ToolCallResponse, ToolHandler
from .._state import KeyStrategy
from .._tools import SAFE_NAME, Tool, ToolContext
from ._limits import name_field

EVICTED = "_evicted_results_"
"""The state key of the stored results: handle → the whole text."""
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


@attrs.frozen
class LargeResultEviction:
    """A hook that keeps tool results longer than ``max_chars`` characters out of the
    conversation: the model gets the first ``head_chars`` (by default a tenth of
    ``max_chars``), the size and a handle, and a
    ``read_result(handle, offset, length)`` tool (``tool_name``) that reads any part of
    the stored text, at most ``max_chars`` characters at a time.

    Results are stored in the state (key ``_evicted_results_``, merged by key, so every
    call of a parallel batch keeps its own) and so in every checkpoint: a run resumed
    from a saver reads them back as the first one would have. They stay for the
    conversation's life. A handle is ``<call id>#<n>``, ``n`` the number of results stored
    before the call's batch: unique in the conversation, and the same if the batch is
    run again after a crash. A bad handle or offset is an error result for the model to
    correct, never an exception.

    An error result over the limit is cut to its head instead (a failed call's state
    updates are dropped, so it could not be read back). The hook's interceptor is
    outermost by default (``order=-200``): what it stores is the text the model would
    have seen, after the other interceptors (``PIIRedactionHook``'s included).
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
        """The tool interceptor that stores large results."""
        return (_Evictor(self),)

    @property
    def key_strategies(self) -> Mapping[str, KeyStrategy]:
        """``_evicted_results_`` merges: each call adds its handles."""
        return {EVICTED: KeyStrategy.MERGE}

    def evict(self, response: ToolCallResponse, request: ToolCallRequest) -> ToolCallResponse:
        """``response`` as the model gets it when its text is over ``max_chars``: stored
        under a new handle (in the response's state update), its head shown."""
        text = response.text
        size, head = len(text), text[: self.head_chars]
        if response.is_error:
            cut = f"[error cut: {size} characters, the first {len(head)} shown]"
            return attrs.evolve(response, text=f"{cut}\n{head}" if head else cut)
        stored = request.state.get(EVICTED) or {}
        handle = f"{request.call.id}#{len(stored)}"
        call = f'{self.tool_name}(handle="{handle}", offset={len(head)})'
        then = (
            f"The first {len(head)} follow; read on with {call}" if head else f"Read it with {call}"
        )
        note = (
            f"[Result too large to show whole: {size} characters (the limit is "
            f'{self.max_chars}), stored as "{handle}". {then}.]'
        )
        update = {**response.update, EVICTED: {handle: text}}
        return attrs.evolve(response, text=f"{note}\n{head}" if head else note, update=update)

    async def _read(
        self, handle: str, context: ToolContext, offset: int = 0, length: int | None = None
    ) -> str | ToolCallResponse:
        """Read part of a stored tool result.

        Args:
            handle: The handle the result was stored under.
            offset: The first character to read (0 is the start).
            length: How many characters to read (at most the limit; all that fit when left out).
        """
        stored: Mapping[str, str] = context.state.get(EVICTED) or {}
        text = stored.get(handle)
        if text is None:
            known = list(stored)[-_LISTED:]
            listed = ", ".join(f'"{h}"' for h in known) if known else "none"
            return _error(f'no stored result has the handle "{handle}" (stored: {listed})')
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
class _Evictor:
    """The hook's tool interceptor: results over the limit stored, their head shown."""

    hook: LargeResultEviction

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolCallResponse:
        response = await handler(request)
        if len(response.text) <= self.hook.max_chars or request.tool is self.hook.tools[0]:
            return response
        return self.hook.evict(response, request)
