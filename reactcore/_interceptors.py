"""Interceptors: code that wraps each model call or tool call, composed first-outermost.

A tool interceptor is any object with ``async def wrap_tool_call(request, handler)``, a
model interceptor one with ``async def wrap_model_call(request, handler)`` (one object may
be both). It may rewrite the request, short-circuit, retry by calling ``handler`` again, or
post-process the response. With ``[i1, i2]`` the order is ``i1-before, i2-before, call,
i2-after, i1-after``. A chain is built once per node, not per call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import attrs

from . import _validate as valid
from ._approval import Interrupt
from ._config import RunnableConfig
from ._messages import PART_TYPES, ContentPart, ToolCall
from ._state import OverAllState

if TYPE_CHECKING:
    from ._tools import Tool
    from .models.base import ModelRequest, ModelResponse

_NO_UPDATE: Mapping[str, Any] = MappingProxyType({})


@attrs.frozen
class ToolCallRequest:
    """One tool call on its way to the tool: the call, the state it sees, the run's config."""

    call: ToolCall
    state: OverAllState
    config: RunnableConfig
    tool: Tool = attrs.field(eq=False, repr=False)

    def with_arguments(self, arguments: str | Mapping[str, Any]) -> ToolCallRequest:
        """The same request with other arguments (a JSON string or a mapping)."""
        raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
        return attrs.evolve(self, call=attrs.evolve(self.call, arguments=raw))


_PARTS = valid.each(valid.instance_of(PART_TYPES, "a content part (TextPart, ImagePart …)"))


@attrs.frozen
class ToolCallResponse:
    """What a call produced: the text for the model, the state updates it made, and the
    content parts it returned besides text (an image, a file …; see ``ToolResponse``).

    ``data`` is what the tool gave beyond the text, kept for callers (never sent to the
    model): an MCP tool's whole result, for instance.

    ``interrupt``: the call has not ended; it waits for a human to decide on these calls
    (a subagent paused for approval, say). The run pauses with them among its
    ``result.interrupt.calls``, their ids scoped under this call's (``<call id>/<id>``);
    the call then runs again when the run is resumed, and ``ToolContext.decisions``
    holds the decisions for it. The text is not shown to the model, nor are updates kept.
    """

    text: str = attrs.field(validator=valid.text())
    is_error: bool = attrs.field(default=False, validator=valid.boolean())
    update: Mapping[str, Any] = attrs.field(
        default=_NO_UPDATE, eq=False, repr=False, validator=valid.mapping()
    )
    parts: tuple[ContentPart, ...] = attrs.field(default=(), validator=_PARTS)
    data: Any = attrs.field(default=None, eq=False, repr=False)
    interrupt: Interrupt | None = attrs.field(
        default=None,
        kw_only=True,
        validator=valid.satisfies(
            "an Interrupt",
            Interrupt,
            limits=[(lambda v: bool(v.calls), "must hold at least one call")],
            optional=True,
        ),
    )


ToolHandler = Callable[[ToolCallRequest], Awaitable[ToolCallResponse]]


@runtime_checkable
class ToolInterceptor(Protocol):
    """Wraps tool calls; see the module docstring."""

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolCallResponse: ...


ModelHandler = Callable[["ModelRequest"], Awaitable["ModelResponse"]]


@runtime_checkable
class ModelInterceptor(Protocol):
    """Wraps model calls; see the module docstring."""

    async def wrap_model_call(
        self, request: ModelRequest, handler: ModelHandler
    ) -> ModelResponse: ...


Req = TypeVar("Req")
Resp = TypeVar("Resp")
Handler = Callable[[Req], Awaitable[Resp]]
Wrapper = Callable[[Req, Handler[Req, Resp]], Awaitable[Resp]]


def _wrap(wrapper: Wrapper[Req, Resp], inner: Handler[Req, Resp]) -> Handler[Req, Resp]:
    async def handler(request: Req) -> Resp:
        return await wrapper(request, inner)

    return handler


def chain(
    wrappers: Sequence[Wrapper[Req, Resp]], innermost: Handler[Req, Resp]
) -> Handler[Req, Resp]:
    """One handler that runs ``wrappers`` (first outermost) around ``innermost``."""
    handler = innermost
    for wrapper in reversed(wrappers):
        handler = _wrap(wrapper, handler)
    return handler


def chain_tool_interceptors(
    interceptors: Sequence[ToolInterceptor], innermost: ToolHandler
) -> ToolHandler:
    """The tool chain: ``wrap_tool_call`` of each interceptor around ``innermost``."""
    return chain([i.wrap_tool_call for i in interceptors], innermost)


def chain_model_interceptors(
    interceptors: Sequence[ModelInterceptor], innermost: ModelHandler
) -> ModelHandler:
    """The model chain: ``wrap_model_call`` of each interceptor around ``innermost``."""
    return chain([i.wrap_model_call for i in interceptors], innermost)
