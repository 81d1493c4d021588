"""What happens when a tool raises: an error text for the model, or an exception."""

from __future__ import annotations

from typing import Protocol

import attrs

from . import _validate as valid
from ._exceptions import ToolExecutionError
from ._interceptors import ToolCallRequest


class ToolExceptionProcessor(Protocol):
    """Turns a tool's exception into the text the model sees, or raises."""

    def __call__(self, request: ToolCallRequest, error: Exception) -> str: ...


@attrs.frozen
class DefaultToolExceptionProcessor:
    """``Error: <Type>: <message> (tool '<name>')`` for the model; with ``always_throw``,
    ``ToolExecutionError`` (chained to the tool's exception) out of the node instead."""

    always_throw: bool = attrs.field(default=False, validator=valid.boolean())

    def __call__(self, request: ToolCallRequest, error: Exception) -> str:
        name = request.call.name
        if self.always_throw:
            raise ToolExecutionError(
                f"tool '{name}' (call {request.call.id}) raised {type(error).__name__}: {error}",
                call=request.call,
            ) from error
        return f"Error: {type(error).__name__}: {error} (tool '{name}')"
